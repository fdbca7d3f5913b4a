package store

import (
	"cmp"
	"context"
	"slices"

	"github.com/uptrace/bun"
)

// The console's reads of the buy side: every offer, open or closed, filtered as an operator
// asks, and the offers a party's NFTs were sold into or its offers bought.

// AdminOffer is an offer as the console lists it: its latest version (the one an accept that
// left units open did not replace), and the kind of the update that closed it.
type AdminOffer struct {
	Offer `bun:",extend"`

	// ClosedBy is the kind of the update that consumed the latest version: nft.offer-accept
	// (filled), nft.offer-cancel, offer-expiry; "" while no update has (open, or past its
	// expiry but not released yet).
	ClosedBy string `bun:"closed_by,scanonly"`
}

// OfferFilter narrows the console's list of offers; empty fields take any.
type OfferFilter struct {
	CollectionID string // a collection id
	Maker        string // a party id
	Kind         string // item, collection or trait
	State        string // open (active, not expired) or closed (filled, cancelled, expired)
}

// offerListKey is an offer's keyset position in the console's list: newest made first.
type offerListKey struct {
	At int64  `json:"a"`
	ID string `json:"i"`
}

// AdminOffers is one page of offers, newest made first, one row per offer, filtered by f.
func (s *Store) AdminOffers(ctx context.Context, f OfferFilter, r PageRequest) (Page[AdminOffer], error) {
	if f.Kind != "" && !slices.Contains([]string{OfferItem, OfferCollection, OfferTrait}, f.Kind) {
		return Page[AdminOffer]{}, Errorf(CodeInvalidRequest, "kind must be item, collection or trait")
	}
	if f.State != "" && f.State != "open" && f.State != "closed" {
		return Page[AdminOffer]{}, Errorf(CodeInvalidRequest, "state must be open or closed")
	}
	q, err := startPage[offerListKey](ctx, s, "admin-offers:"+hashText(f.CollectionID+"|"+f.Maker+"|"+f.Kind+"|"+f.State), r)
	if err != nil {
		return Page[AdminOffer]{}, err
	}
	now := At(s.now())
	var rows []AdminOffer
	sel := s.db.NewSelect().Model(&rows).ColumnExpr("offer.*").
		// how the latest version ended, if it has
		ColumnExpr("COALESCE((SELECT u.kind FROM updates AS u WHERE u.update_id = offer.consumed_update), '') AS closed_by").
		// the latest version: an accept that leaves units open consumes a version and creates
		// the next in the same update, so no version was created by the one that consumed it
		Where("NOT EXISTS (SELECT 1 FROM nft_offers AS later WHERE later.offer_id = offer.offer_id AND later.created_update = offer.consumed_update)")
	if f.CollectionID != "" {
		sel = sel.Where("offer.collection_id = ?", f.CollectionID)
	}
	if f.Maker != "" {
		sel = sel.Where("offer.maker = ?", f.Maker)
	}
	if f.Kind != "" {
		sel = sel.Where("offer.kind = ?", f.Kind)
	}
	switch f.State {
	case "open":
		sel = sel.Where("offer.consumed_update IS NULL").Where("offer.expires_at > ?", now)
	case "closed":
		sel = sel.Where("(offer.consumed_update IS NOT NULL OR offer.expires_at <= ?)", now)
	}
	sel = q.Seek(sel, true, []string{"offer.posted_at", "offer.offer_id"}, q.At(func(k offerListKey) []any { return []any{k.At, k.ID} }))
	if err := sel.Limit(q.Fetch()).Scan(ctx); err != nil {
		return Page[AdminOffer]{}, err
	}
	return finish(ctx, s, q, rows, func(o AdminOffer) offerListKey { return offerListKey{o.PostedAt.UnixMicro(), o.OfferID} })
}

// OfferAccepts is one page of a party's accepts, newest first: the NFTs it sold into offers
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
