package admin

import (
	"context"
	"slices"

	"marketd/store"
)

// Offer is an offer as the console lists it: its latest version (the one an accept that
// left units open did not replace), and the kind of the update that closed it.
type Offer struct {
	store.Offer `bun:",extend"`

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

// Offers is one page of offers, newest made first, one row per offer, filtered by f: every
// offer, open or closed, as an operator asks. (A party's accepts into offers are the store's
// OfferAccepts, a read of the NFTs' history.)
func (c *Console) Offers(ctx context.Context, f OfferFilter, r store.PageRequest) (store.Page[Offer], error) {
	if f.Kind != "" && !slices.Contains([]string{store.OfferItem, store.OfferCollection, store.OfferTrait}, f.Kind) {
		return store.Page[Offer]{}, store.Errorf(store.CodeInvalidRequest, "kind must be item, collection or trait")
	}
	if f.State != "" && f.State != "open" && f.State != "closed" {
		return store.Page[Offer]{}, store.Errorf(store.CodeInvalidRequest, "state must be open or closed")
	}
	q, err := store.StartPage[offerListKey](ctx, c.s, "admin-offers:"+store.HashText(f.CollectionID+"|"+f.Maker+"|"+f.Kind+"|"+f.State), r)
	if err != nil {
		return store.Page[Offer]{}, err
	}
	now := store.At(c.s.Now())
	var rows []Offer
	sel := c.s.ReadDB().NewSelect().Model(&rows).ColumnExpr("offer.*").
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
		return store.Page[Offer]{}, err
	}
	return store.FinishPage(ctx, c.s, q, rows, func(o Offer) offerListKey { return offerListKey{o.PostedAt.UnixMicro(), o.OfferID} })
}
