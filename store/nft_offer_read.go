package store

import (
	"context"
	"time"

	"github.com/uptrace/bun"
)

// The offer lists, best price first (then by offer id), open offers only: active and not
// expired. Lists that keep only the offers an NFT matches read the book in runs of offerScan
// and filter them in Go, so a page costs what it keeps plus the offers it passes over.

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
// accepted into.
func (s *Store) OffersReceived(ctx context.Context, owner string, r PageRequest) (Page[Offer], error) {
	held := map[string][]nftItem{} // the owner's NFTs, by collection, read as the offers need them
	return s.offerPage(ctx, "offers:received:"+owner, r, func(sel *bun.SelectQuery) *bun.SelectQuery {
		return sel.Where("maker <> ?", owner).
			Where("collection_id IN (?)", s.db.NewSelect().Model((*collectionOwner)(nil)).Column("collection_id").Where("owner = ?", owner))
	}, func(o *Offer) (bool, error) {
		items, ok := held[o.CollectionID]
		if !ok {
			if err := s.db.NewSelect().Model(&items).Column("nft_id", "traits").
				Where("collection_id = ?", o.CollectionID).Where("owner = ?", owner).Scan(ctx); err != nil {
				return false, err
			}
			held[o.CollectionID] = items
		}
		for _, it := range items {
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
	at := q.at(func(k offerKey) []any { return []any{k.K, k.ID} })
	var kept []Offer
	for {
		run := int64(offerScan)
		if keep == nil {
			run = q.fetch()
		}
		var rows []Offer
		sel := where(s.db.NewSelect().Model(&rows).Where("consumed_update IS NULL").Where("expires_at > ?", At(now)))
		if err := q.seek(sel, false, []string{"price_key", "offer_id"}, at).Limit(run).Scan(ctx); err != nil {
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
		if int64(len(kept)) >= q.fetch() || int64(len(rows)) < run {
			break
		}
		last := rows[len(rows)-1]
		at = []any{last.PriceKey, last.OfferID}
	}
	if int64(len(kept)) > q.fetch() {
		kept = kept[:q.fetch()]
	}
	return finish(ctx, s, q, kept, func(o Offer) offerKey { return offerKey{K: o.PriceKey, ID: o.OfferID} })
}

// OfferCriteria returns a trait offer's criteria (none for another kind).
func (o *Offer) OfferCriteria() []TraitMatch { return o.criteria() }

// MadeAt is when the offer was made (its first version).
func (o *Offer) MadeAt() time.Time { return o.PostedAt.Time }
