package store

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/uptrace/bun"
)

// The offer lists, best price first (then by offer id), open offers only: active and not
// expired. Lists that keep only the offers an NFT matches read the book in runs of offerScan
// and filter them in Go, at most maxOfferRuns runs a page: a page that passes over more offers
// than that ends short, with a cursor after the last offer it read, so no page costs more
// than a bounded number of statements.

// CollectionOffers lists a collection's open collection and trait offers.
func (s *Store) CollectionOffers(ctx context.Context, collectionRef string, r PageRequest) (Page[Offer], error) {
	c, err := s.collectionIdentityOf(ctx, collectionRef)
	if err != nil {
		return Page[Offer]{}, err
	}
	return s.offerPage(ctx, "offers:collection:"+c.ID, r, func(sel *bun.SelectQuery) *bun.SelectQuery {
		return sel.Where("collection_id = ?", c.ID).Where("kind IN (?)", bun.In([]string{OfferCollection, OfferTrait}))
	}, nil)
}

// OffersByMaker lists the open offers a party made.
func (s *Store) OffersByMaker(ctx context.Context, maker string, r PageRequest) (Page[Offer], error) {
	return s.offerPage(ctx, "offers:maker:"+maker, r, func(sel *bun.SelectQuery) *bun.SelectQuery {
		return sel.Where("maker = ?", maker)
	}, nil)
}

// NFTOffers lists the open offers the NFT a contract id names (its current contract or an
// earlier one) can be accepted into: those of others than its owner that take it.
func (s *Store) NFTOffers(ctx context.Context, contractID string, r PageRequest) (Page[Offer], error) {
	var ids []string
	if err := s.db.NewSelect().Model((*NFT)(nil)).Column("nft_id").Where("cid = ?", contractID).Limit(1).Scan(ctx, &ids); err != nil {
		return Page[Offer]{}, err
	}
	if len(ids) == 0 {
		return Page[Offer]{}, Errorf(CodeNotFound, "no NFT has contract %s", truncate(contractID, 80))
	}
	it, err := s.liveItem(ctx, ids[0])
	if err != nil {
		return Page[Offer]{}, err
	}
	traits := traitsOfItem(it)
	return s.offerPage(ctx, "offers:nft:"+it.NFTID, r, func(sel *bun.SelectQuery) *bun.SelectQuery {
		return sel.Where("collection_id = ?", it.CollectionID).Where("maker <> ?", it.Owner).Where("(kind <> ? OR nft_id = ?)", OfferItem, it.NFTID)
	}, func(o *Offer) (bool, error) { return o.matches(it.NFTID, traits), nil })
}

// OffersReceived lists the open offers of others that some NFT the owner holds can be
// accepted into. The owner's NFTs are read once, with their traits.
func (s *Store) OffersReceived(ctx context.Context, owner string, r PageRequest) (Page[Offer], error) {
	var items []nftItem
	if err := s.db.NewSelect().Model(&items).Column("nft_id", "collection_id", "traits").Where("owner = ?", owner).Scan(ctx); err != nil {
		return Page[Offer]{}, err
	}
	held := map[string][]nftItem{} // by collection
	for _, it := range items {
		held[it.CollectionID] = append(held[it.CollectionID], it)
	}
	return s.offerPage(ctx, "offers:received:"+owner, r, func(sel *bun.SelectQuery) *bun.SelectQuery {
		return sel.Where("maker <> ?", owner).Where("collection_id IN (?)", bun.In(append(sortedKeys(held), "")))
	}, func(o *Offer) (bool, error) {
		for _, it := range held[o.CollectionID] {
			if o.matches(it.NFTID, traitsOfItem(&it)) {
				return true, nil
			}
		}
		return false, nil
	})
}

// offerPage reads one page of the open offers where narrows, best first, keeping those keep
// takes (all, for nil).
func (s *Store) offerPage(ctx context.Context, list string, r PageRequest, where func(*bun.SelectQuery) *bun.SelectQuery, keep func(*Offer) (bool, error)) (Page[Offer], error) {
	q, err := startPage[offerKey](ctx, s, list, r)
	if err != nil {
		return Page[Offer]{}, err
	}
	now := s.now()
	at := q.At(func(k offerKey) []any { return []any{k.K, k.ID} })
	var kept []Offer
	var read *Offer // the last offer a run read, when the runs ran out before the list did
	for runs := 1; ; runs++ {
		run := int64(offerScan)
		if keep == nil {
			run = q.Fetch()
		}
		var rows []Offer
		sel := where(s.db.NewSelect().Model(&rows).Where("consumed_update IS NULL").Where("expires_at > ?", At(now)))
		if err := q.Seek(sel, false, []string{"price_key", "offer_id"}, at).Limit(run).Scan(ctx); err != nil {
			return Page[Offer]{}, err
		}
		for i := range rows {
			ok := true
			if keep != nil {
				if ok, err = keep(&rows[i]); err != nil {
					return Page[Offer]{}, err
				}
			}
			if ok {
				kept = append(kept, rows[i])
			}
		}
		if int64(len(kept)) >= q.Fetch() || int64(len(rows)) < run {
			break
		}
		last := rows[len(rows)-1]
		if runs == maxOfferRuns {
			read = &last
			break
		}
		at = []any{last.PriceKey, last.OfferID}
	}
	if int64(len(kept)) > q.Fetch() {
		kept = kept[:q.Fetch()]
	}
	key := func(o Offer) offerKey { return offerKey{K: o.PriceKey, ID: o.OfferID} }
	page, err := finish(ctx, s, q, kept, key)
	if err != nil || read == nil {
		return page, err
	}
	// The runs ran out: the page goes on after the last offer read, kept or not.
	page.Cursor, err = cursorAt(ctx, s, q, key(*read))
	return page, err
}

// maxOfferRuns bounds the runs of offerScan offers one filtered page reads.
const maxOfferRuns = 5

// OfferCriteria returns a trait offer's criteria (none for another kind).
func (o *Offer) OfferCriteria() []TraitMatch { return o.criteria() }

// MadeAt is when the offer was made (its first version).
func (o *Offer) MadeAt() time.Time { return o.PostedAt.Time }

// OfferByID returns an offer as it is now: its open version, or the last one it had (accepted
// in full, cancelled or expired); not_found when no offer has the id.
func (s *Store) OfferByID(ctx context.Context, offerID string) (*Offer, error) {
	return lastOfferVersion(ctx, s.db, offerID)
}

// openOfferRead is an offer's open version by its id: one step of nft_offers_live.
var openOfferRead = &preparedRead{model: (*Offer)(nil), n: 1, where: func(q *bun.SelectQuery, args []any) *bun.SelectQuery {
	return q.Where("offer_id = ?", args[0]).Where("consumed_update IS NULL")
}}

// openOfferVersion reads an offer's open version through db (the read pool, or a
// transaction); nil when none is open (the offer was accepted in full, cancelled or
// expired, or there is no such offer).
func (s *Store) openOfferVersion(ctx context.Context, db bun.IDB, offerID string) (*Offer, error) {
	return selectFirst[Offer](ctx, s, db, openOfferRead, offerID)
}

// lastOfferVersion reads an offer's latest version, open or not; not_found for no such
// offer. Versions made in one batch share their instant: the one with fewer units left is the
// later.
func lastOfferVersion(ctx context.Context, db bun.IDB, offerID string) (*Offer, error) {
	var os []Offer
	if err := db.NewSelect().Model(&os).Where("offer_id = ?", offerID).OrderExpr("created_at DESC, remaining ASC").Limit(1).Scan(ctx); err != nil {
		return nil, err
	}
	if len(os) == 0 {
		return nil, Errorf(CodeNotFound, "no offer %s", truncate(offerID, 80))
	}
	return &os[0], nil
}

// OfferAccepts is one page of a party's accepts (the console's party page lists them), newest first: the NFTs it sold into offers
// (it is From) and those it bought through its offers (To), from the NFTs' history. Each side
// is one walk of its own index, and the two are merged here.
func (s *Store) OfferAccepts(ctx context.Context, party string, r PageRequest) (Page[CollectionEvent], error) {
	q, err := startPage[int64](ctx, s, "admin-offer-accepts:"+hashText(party), r)
	if err != nil {
		return Page[CollectionEvent]{}, err
	}
	at := q.At(func(id int64) []any { return []any{id} })
	var acts []nftActivity
	for _, side := range []string{"from_party", "to_party"} {
		var rows []nftActivity
		// nft_activity.*: the offset too, which bun never writes.
		sel := withLogIndex(s.db.NewSelect().Model(&rows).ColumnExpr("nft_activity.*"), "update_id").
			Where("nft_activity.kind = ?", EventOfferAccepted).
			Where("? = ?", bun.Ident("nft_activity."+side), party)
		if err := q.Seek(sel, true, []string{"nft_activity.id"}, at).Limit(q.Fetch()).Scan(ctx); err != nil {
			return Page[CollectionEvent]{}, err
		}
		acts = append(acts, rows...)
	}
	// in the read's direction (oldest first when reading back), each event once
	slices.SortFunc(acts, func(a, b nftActivity) int {
		if q.Backward {
			return cmp.Compare(a.ID, b.ID)
		}
		return cmp.Compare(b.ID, a.ID)
	})
	acts = slices.CompactFunc(acts, func(a, b nftActivity) bool { return a.ID == b.ID })
	page, err := finish(ctx, s, q, acts, func(a nftActivity) int64 { return a.ID })
	if err != nil {
		return Page[CollectionEvent]{}, err
	}
	out := Page[CollectionEvent]{Cursor: page.Cursor, ItemCursors: page.ItemCursors}
	for i := range page.Items {
		out.Items = append(out.Items, page.Items[i].collectionEvent())
	}
	return out, nil
}
