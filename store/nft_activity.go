package store

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
)

// ActivityKinds are the kinds of a collection's activity feed: its NFTs' events, and its
// offers made and cancelled (or expired).
var ActivityKinds = []string{EventMinted, EventListed, EventDelisted, EventSold, EventOffer, EventOfferCancelled,
	EventOfferAccepted, EventTransferred, EventBurned}

// ActivityEvent is one event of a collection's activity feed.
type ActivityEvent struct {
	Kind     string
	At       Timestamp
	UpdateID string
	LogIndex *int64
	Serial   *int // the NFT's; an item offer's NFT; nil for a collection or trait offer
	Price    *Amount
	Currency *Instrument
	From     *string
	To       *string
	OfferCID *string // the offer of an offer's event
}

// activityKey is an event's keyset position: its update's offset, then its row.
type activityKey struct {
	O  int64 `json:"o"`
	ID int64 `json:"i"`
}

func compareActivity(a, b activityKey) int {
	return cmp.Or(cmp.Compare(a.O, b.O), cmp.Compare(a.ID, b.ID))
}

// activityWalk is a walk of a collection's committed events (its id the first mark), each with
// its update's index in the transparency log (as withLogIndex reads it) and an item offer's
// NFT; CollectionActivity adds the kind, the cursor and the order. The text is the same for
// every collection and cursor, so PostgreSQL plans it once (selectPlanned).
const activityWalk = "SELECT nft_activity.*, o.serial AS offer_serial, log_update.log_index FROM nft_activity " +
	logIndexJoin + "nft_activity.update_id " +
	"LEFT JOIN nft_offers AS o ON o.cid = nft_activity.offer_cid " +
	"WHERE nft_activity.collection_id = ? AND nft_activity.ledger_offset IS NOT NULL"

// CollectionActivity pages through a collection's committed events, newest first (by their
// update's offset, then their order in it), of the kinds named (all without). Offsets follow
// commit order, so a page is stable while events are added and a cursor skips none. Each
// kind is one keyset walk of nft_activity_feed_kind: a page costs what it shows, however long
// the history.
func (s *Store) CollectionActivity(ctx context.Context, collectionRef string, kinds []string, r PageRequest) (Page[ActivityEvent], error) {
	c, err := s.collectionIdentityOf(ctx, collectionRef)
	if err != nil {
		return Page[ActivityEvent]{}, err
	}
	kinds = slices.Compact(slices.Sorted(slices.Values(kinds)))
	for _, k := range kinds {
		if !slices.Contains(ActivityKinds, k) {
			return Page[ActivityEvent]{}, Errorf(CodeInvalidRequest, "kind %q is not one of %s", truncate(k, 40), strings.Join(ActivityKinds, ", "))
		}
	}
	q, err := startPage[activityKey](ctx, s, "activity:"+c.ID+":"+strings.Join(kinds, ","), r)
	if err != nil {
		return Page[ActivityEvent]{}, err
	}
	walks := kinds
	if len(walks) == 0 {
		walks = []string{""} // every kind, in one walk of nft_activity_feed
	}
	var rows []nftActivity
	order, past := q.Keyset(true, []string{"nft_activity.ledger_offset", "nft_activity.id"}, q.From != nil)
	for _, kind := range walks {
		var acts []nftActivity
		query, args := activityWalk, []any{c.ID}
		if kind != "" {
			query, args = query+" AND nft_activity.kind = ?", append(args, kind)
		}
		if past != "" {
			query, args = query+" AND "+past, append(args, q.From.O, q.From.ID)
		}
		query += " ORDER BY " + order + " LIMIT " + strconv.FormatInt(q.Fetch(), 10)
		if err := s.selectPlanned(ctx, &acts, query, args...); err != nil {
			return Page[ActivityEvent]{}, err
		}
		rows = append(rows, acts...)
	}
	// The walks' rows in the read's order: newest first, or oldest first backward.
	key := func(a nftActivity) activityKey { return activityKey{O: a.LedgerOffset, ID: a.ID} }
	slices.SortFunc(rows, func(a, b nftActivity) int {
		if q.Backward {
			return compareActivity(key(a), key(b))
		}
		return compareActivity(key(b), key(a))
	})
	if int64(len(rows)) > q.Fetch() {
		rows = rows[:q.Fetch()]
	}
	page, err := finish(ctx, s, q, rows, key)
	if err != nil {
		return Page[ActivityEvent]{}, err
	}
	out := Page[ActivityEvent]{Items: make([]ActivityEvent, len(page.Items)), Cursor: page.Cursor, ItemCursors: page.ItemCursors}
	for i, a := range page.Items {
		e := ActivityEvent{Kind: a.Kind, At: a.At, UpdateID: a.UpdateID, LogIndex: a.LogIndex, Price: a.Price, Currency: a.Currency,
			From: a.From, To: a.To, OfferCID: a.OfferCID, Serial: a.OfferSerial}
		if _, serial, ok := strings.Cut(a.NFTID, "#"); ok {
			if n, err := strconv.Atoi(serial); err == nil {
				e.Serial = &n
			}
		}
		out.Items[i] = e
	}
	return out, nil
}
