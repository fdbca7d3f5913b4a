package store

import (
	"context"
	"strconv"
	"strings"

	"github.com/uptrace/bun"

	"marketd/store/internal/keyset"
)

// NFTRef names an NFT across its contracts: its collection and serial.
type NFTRef struct {
	CollectionID string
	Serial       int
}

// Ref names the NFT a view shows.
func (v *NFTView) Ref() NFTRef { return NFTRef{CollectionID: v.CollectionID, Serial: v.Serial} }

func (r NFTRef) nftID() string { return nftIDOf(r.CollectionID, r.Serial) }

// NFTHistory pages through an NFT's events, newest first; an NFT with no events (unknown or
// burned long ago) has an empty history.
func (s *Store) NFTHistory(ctx context.Context, ref NFTRef, r PageRequest) (Page[NFTEvent], error) {
	q, err := startPage[int64](ctx, s, "nft-history:"+ref.nftID(), r)
	if err != nil {
		return Page[NFTEvent]{}, err
	}
	var acts []nftActivity
	sel := withLogIndex(s.db.NewSelect().Model(&acts).ColumnExpr("?TableAlias.*"), "update_id").Where("nft_id = ?", ref.nftID())
	sel = q.Seek(sel, true, []string{"id"}, q.At(func(id int64) []any { return []any{id} }))
	if err := sel.Limit(q.Fetch()).Scan(ctx); err != nil {
		return Page[NFTEvent]{}, err
	}
	page, err := finish(ctx, s, q, acts, func(a nftActivity) int64 { return a.ID })
	if err != nil {
		return Page[NFTEvent]{}, err
	}
	return Page[NFTEvent]{Items: eventsOf(page.Items), Cursor: page.Cursor, ItemCursors: page.ItemCursors}, nil
}

// NFTHistories returns the first page of each NFT's history (newest first, r.Limit events),
// or the last page when r.Backward, in one query, for a page of NFTs that each show their history.
func (s *Store) NFTHistories(ctx context.Context, refs []NFTRef, r PageRequest) (map[NFTRef]Page[NFTEvent], error) {
	if r.Cursor != "" {
		return nil, Errorf(CodeInvalidRequest, "a batched history read starts at the first page")
	}
	out := make(map[NFTRef]Page[NFTEvent], len(refs))
	if len(refs) == 0 {
		return out, nil
	}
	n, err := pageSize(r)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(refs))
	byID := make(map[string]NFTRef, len(refs))
	for i, ref := range refs {
		ids[i] = ref.nftID()
		byID[ids[i]] = ref
	}
	// The n+1 newest events of every NFT (oldest, backward): one more tells whether another
	// page follows. One keyset read per NFT on nft_activity_nft, joined by UNION ALL, so the
	// batch walks only its pages, however long each history is.
	order := "id DESC"
	if r.Backward {
		order = "id ASC"
	}
	var (
		arms []string
		args []any
		seen = make(map[string]bool, len(ids))
	)
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		page := withLogIndex(s.db.NewSelect().Model((*nftActivity)(nil)).
			Column("id", "nft_id", "collection_id", "update_id", "kind", "from_party", "to_party", "price", "currency", "at"), "update_id").
			Where("nft_id = ?", id).OrderExpr(order).Limit(int64(n + 1))
		arms = append(arms, "SELECT * FROM (?) AS a"+strconv.Itoa(len(arms)))
		args = append(args, page)
	}
	var acts []nftActivity
	if err := s.db.NewSelect().TableExpr("("+strings.Join(arms, " UNION ALL ")+") AS pages", args...).
		ColumnExpr("*").OrderExpr("nft_id, "+order).Scan(ctx, &acts); err != nil {
		return nil, err
	}
	grouped := make(map[string][]nftActivity, len(refs))
	for _, a := range acts {
		grouped[a.NFTID] = append(grouped[a.NFTID], a)
	}
	for _, id := range ids {
		q := &keyset.Query[int64]{List: "nft-history:" + id, Limit: n, Backward: r.Backward, ItemCursors: r.ItemCursors}
		page, err := finish(ctx, s, q, grouped[id], func(a nftActivity) int64 { return a.ID })
		if err != nil {
			return nil, err
		}
		out[byID[id]] = Page[NFTEvent]{Items: eventsOf(page.Items), Cursor: page.Cursor, ItemCursors: page.ItemCursors}
	}
	return out, nil
}

func (a *nftActivity) event() NFTEvent {
	return NFTEvent{UpdateID: a.UpdateID, LogIndex: a.LogIndex, Kind: a.Kind, At: a.At, From: a.From, To: a.To, Price: a.Price, Currency: a.Currency}
}

// withLogIndex has q read, in the same statement, log_index: the transparency log's index of
// the update that the column updateColumn of q's model names (the update's own column), NULL
// while the log has no entry of it. q must select its model's columns itself: a column
// expression replaces bun's default.
func withLogIndex(q *bun.SelectQuery, updateColumn string) *bun.SelectQuery {
	return q.ColumnExpr("log_update.log_index").Join(logIndexJoin+"?TableAlias.?", bun.Ident(updateColumn))
}

// logIndexJoin joins the update named by the column that follows it, as log_update, for its
// log_index (withLogIndex; activityWalk writes it into its text).
const logIndexJoin = "LEFT JOIN updates AS log_update ON log_update.update_id = "

func eventsOf(acts []nftActivity) []NFTEvent {
	out := make([]NFTEvent, len(acts))
	for i := range acts {
		out[i] = acts[i].event()
	}
	return out
}

// CollectionEvent is one event of a collection's NFTs, placed in the update log: events are
// ordered by their update's offset, then by their order within the update.
type CollectionEvent struct {
	NFTEvent
	CollectionID string
	Serial       int     // the NFT's (an item offer's NFT for an offer's event); 0 when the event names none
	OfferCID     *string // the offer of an offer's event (made, cancelled or expired, accepted)
	Offset       int64   // the offset of the update that made the event
	Seq          int64   // its order among all NFT events
}

// Position is where a follower resumes after this event.
func (e *CollectionEvent) Position() LogPosition {
	return LogPosition{Offset: e.Offset, After: strconv.FormatInt(e.Seq, 10)}
}

// CollectionActivityAfter lists up to limit events of the collection after pos, in log
// order: its NFTs' events and its offers' (ActivityKinds). A follower that resumes from the
// position of the last event it saw misses none and sees none twice, on any instance of the
// store.
func (s *Store) CollectionActivityAfter(ctx context.Context, collectionID string, pos LogPosition, limit int) ([]CollectionEvent, error) {
	var seq int64
	if pos.After != "" {
		n, err := strconv.ParseInt(pos.After, 10, 64)
		if err != nil || n < 0 {
			return nil, Errorf(CodeInvalidCursor, "not a position of this feed")
		}
		seq = n
	}
	var acts []nftActivity
	// nft_activity.*: the offset too, which bun never writes.
	sel := withLogIndex(s.db.NewSelect().Model(&acts).ColumnExpr("nft_activity.*").ColumnExpr("o.serial AS offer_serial"), "update_id").
		Join("LEFT JOIN nft_offers AS o ON o.cid = nft_activity.offer_cid").
		Where("nft_activity.collection_id = ?", collectionID).
		Where("nft_activity.ledger_offset IS NOT NULL")
	err := afterPosition(sel, pos, "nft_activity.ledger_offset", "nft_activity.id", seq).
		OrderExpr("nft_activity.ledger_offset, nft_activity.id").Limit(int64(limit)).
		Scan(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]CollectionEvent, len(acts))
	for i := range acts {
		out[i] = acts[i].collectionEvent()
	}
	return out, nil
}

// collectionEvent is the event placed in the update log, its serial read from its NFT's id.
func (a *nftActivity) collectionEvent() CollectionEvent {
	_, serial, _ := strings.Cut(a.NFTID, "#")
	n, _ := strconv.Atoi(serial)
	if a.NFTID == "" && a.OfferSerial != nil {
		n = *a.OfferSerial
	}
	return CollectionEvent{NFTEvent: a.event(), CollectionID: a.CollectionID, Serial: n, OfferCID: a.OfferCID, Offset: a.LedgerOffset, Seq: a.ID}
}
