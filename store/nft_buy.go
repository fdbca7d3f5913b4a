package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"marketd/store/wallet"
)

// Share is what one party gets of a sale.
type Share = wallet.Share

// Settlement is how a price is split: the marketplace fee to the operator, the royalty to
// the creator, the rest to the seller. Each share is rounded down to the currency's
// precision, and the three add up to the price exactly.
type Settlement = wallet.Settlement

func bps(n int) decimal.Decimal { return decimal.New(int64(n), -4) }

func settle(price Amount, cur Instrument, feeBps int, operator string, royaltyBps int, creator, seller string) Settlement {
	fee := price.MulFloor(bps(feeBps), cur.Decimals())
	royalty := price.MulFloor(bps(royaltyBps), cur.Decimals())
	return Settlement{
		Price:   price,
		Fee:     Share{Party: strPtr(operator), Amount: fee},
		Royalty: Share{Party: strPtr(creator), Amount: royalty},
		Seller:  Share{Party: strPtr(seller), Amount: price.Sub(fee).Sub(royalty)},
	}
}

// total sums settlements; a share's party is null where the parts name different parties.
func total(ss []Settlement) Settlement {
	out := Settlement{Price: Zero, Fee: Share{Amount: Zero}, Royalty: Share{Amount: Zero}, Seller: Share{Amount: Zero}}
	add := func(dst *Share, src Share, first bool) {
		dst.Amount = dst.Amount.Add(src.Amount)
		switch {
		case first:
			dst.Party = src.Party
		case dst.Party != nil && *dst.Party != *src.Party:
			dst.Party = nil
		}
	}
	for i, s := range ss {
		out.Price = out.Price.Add(s.Price)
		add(&out.Fee, s.Fee, i == 0)
		add(&out.Royalty, s.Royalty, i == 0)
		add(&out.Seller, s.Seller, i == 0)
	}
	return out
}

type purchase = wallet.Purchase

type buyEffects = wallet.BuyEffects

// SweepRequest names what a sweep buys: listings by cid, or the count cheapest of the
// collection; never more than maxTotal in all.
type SweepRequest struct {
	CollectionID string
	CIDs         []string
	Count        int
	MaxTotal     string
}

// PrepareBuy prepares buying one listing with atomic settlement.
func (s *Store) PrepareBuy(ctx context.Context, buyer, cid string) (*Prepared, error) {
	l, err := s.ListingByCID(ctx, cid)
	if err != nil {
		return nil, err
	}
	return s.prepareBuy(ctx, KindNFTBuy, buyer, l.CollectionID, []Listing{*l}, nil)
}

// PrepareSweep prepares buying several listings of one collection under one signature.
func (s *Store) PrepareSweep(ctx context.Context, buyer string, r SweepRequest) (*Prepared, error) {
	c, err := s.collectionByIDOrSlug(ctx, r.CollectionID)
	if err != nil {
		return nil, err
	}
	if r.MaxTotal == "" {
		return nil, Errorf(CodeInvalidRequest, "maxTotal is required")
	}
	maxTotal, err := ParseAmount(r.MaxTotal, c.Currency)
	if err != nil {
		return nil, err
	}
	var ls []Listing
	switch {
	case len(r.CIDs) > 0 && r.Count != 0:
		return nil, Errorf(CodeInvalidRequest, "name either cids or count, not both")
	case len(r.CIDs) > 0:
		if len(r.CIDs) > MaxBatch {
			return nil, Errorf(CodeInvalidRequest, "a sweep buys at most %d listings", MaxBatch)
		}
		if len(slices.Compact(slices.Sorted(slices.Values(r.CIDs)))) != len(r.CIDs) {
			return nil, Errorf(CodeInvalidRequest, "a listing is named twice")
		}
		for _, cid := range r.CIDs {
			l, err := s.ListingByCID(ctx, cid)
			if err != nil {
				return nil, err
			}
			if l.CollectionID != c.ID {
				return nil, Errorf(CodeInvalidRequest, "listing %s is not of collection %s", cid, c.Slug)
			}
			ls = append(ls, *l)
		}
	case r.Count >= 1 && r.Count <= MaxBatch:
		// The cheapest live listings of others, in price order.
		var items []nftItem
		err := s.db.NewSelect().Model(&items).Column("listing_cid").
			Where("collection_id = ?", c.ID).Where("price_asc_key <> ?", noKey).Where("owner <> ?", buyer).
			Where("(list_expires IS NULL OR list_expires > ?)", At(s.now())).
			Order("price_asc_key", "serial").Limit(int64(r.Count)).Scan(ctx)
		if err != nil {
			return nil, err
		}
		if len(items) < r.Count {
			return nil, Errorf(CodeConflict, "collection %s has %d listings others can buy, fewer than %d", c.Slug, len(items), r.Count)
		}
		for _, it := range items {
			l, err := s.ListingByCID(ctx, *it.ListingCID)
			if err != nil {
				return nil, err
			}
			ls = append(ls, *l)
		}
	default:
		return nil, Errorf(CodeInvalidRequest, "name the cids to buy, or a count of 1 to %d", MaxBatch)
	}
	return s.prepareBuy(ctx, KindNFTSweep, buyer, c.ID, ls, &maxTotal)
}

func (s *Store) prepareBuy(ctx context.Context, kind, buyer, collectionID string, ls []Listing, maxTotal *Amount) (*Prepared, error) {
	e, claims, summary, err := s.buildBuy(ctx, buyer, collectionID, ls, maxTotal)
	if err != nil {
		return nil, err
	}
	return s.prepareAs(ctx, kind, buyer, e, summary, claims)
}

// buildBuy works out the effects of buying listings ls of one collection: each settlement,
// and the buyer's payment.
func (s *Store) buildBuy(ctx context.Context, buyer, collectionID string, ls []Listing, maxTotal *Amount) (*buyEffects, []string, map[string]any, error) {
	c, err := s.collectionByIDOrSlug(ctx, collectionID)
	if err != nil {
		return nil, nil, nil, err
	}
	op, err := s.OperatorParty(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	now := s.now()
	e := buyEffects{Buyer: buyer, CollectionID: c.ID, Slug: c.Slug, MaxTotal: maxTotal}
	var credits []newHolding
	consenting := map[string]bool{}
	var settlements []Settlement
	for _, l := range ls {
		switch {
		case !l.Active():
			return nil, nil, nil, Errorf(CodeConflict, "listing %s was sold or cancelled already", l.CID)
		case l.ExpiresAt != nil && !now.Before(l.ExpiresAt.Time):
			return nil, nil, nil, Errorf(CodeConflict, "listing %s expired at %s", l.CID, l.ExpiresAt.UTC().Format(time.RFC3339))
		case l.Seller == buyer:
			return nil, nil, nil, Errorf(CodeConflict, "listing %s is the buyer's own; cancel it instead", l.CID)
		}
		st := settle(l.Price, c.Currency, s.cfg.MarketFeeBps, op, c.RoyaltyBps, c.Creator, l.Seller)
		e.Purchases = append(e.Purchases, purchase{Listing: l.CID, NFTCID: l.NFTCID, NFTID: l.NFTID, CollectionID: c.ID, Seller: l.Seller, Price: l.Price, Settlement: st})
		settlements = append(settlements, st)
		consenting[l.Seller] = true
		credits = append(credits, newHolding{Owner: op, Amount: st.Fee.Amount}, newHolding{Owner: c.Creator, Amount: st.Royalty.Amount}, newHolding{Owner: l.Seller, Amount: st.Seller.Amount})
	}
	e.Settlement = total(settlements)
	if maxTotal != nil && e.Settlement.Price.Cmp(*maxTotal) > 0 {
		return nil, nil, nil, Errorf(CodeConflict, "the sweep costs %s %s, more than maxTotal %s", e.Settlement.Price, c.Currency, maxTotal)
	}
	// The buyer needs no preapproval to receive what it buys; the NFTs go to the signer.
	pay, claims, err := s.preparePayment(ctx, buyer, c.Currency, credits, consenting)
	if err != nil {
		return nil, nil, nil, err
	}
	e.Payment = pay
	for _, p := range e.Purchases {
		claims = append(claims, p.Listing)
	}
	summary := map[string]any{
		"action":     fmt.Sprintf("buy %d NFT(s) of %s for %s %s", len(e.Purchases), c.Name, e.Settlement.Price, c.Currency),
		"buyer":      buyer,
		"settlement": e.Settlement,
	}
	if maxTotal != nil {
		summary["maxTotal"] = maxTotal
	}
	return &e, claims, summary, nil
}

// BuyResult is what a buy or sweep execute adds to the receipt.
type BuyResult struct {
	ContractID  string       `json:"contractId,omitempty"`
	ContractIDs []string     `json:"contractIds"`
	Settlement  Settlement   `json:"settlement"`
	Items       []Settlement `json:"items,omitempty"`
}

func applyBuy(ctx context.Context, tx *Tx, u *Update, e *buyEffects) (any, error) {
	ct, err := tx.lockCollection(ctx, e.CollectionID)
	if err != nil {
		return nil, err
	}
	if e.Slug != "" && e.Slug != ct.c.Slug {
		return nil, Errorf(CodeStale, "the purchase was prepared for collection %q, not %q", e.Slug, ct.c.Slug)
	}
	t := &Transaction{}
	nfts := make([]*NFT, len(e.Purchases))
	items := make([]*nftItem, len(e.Purchases))
	for i, p := range e.Purchases {
		// Under the collection's lock the items are as the last commit left them.
		it, err := tx.item(ctx, p.NFTID)
		if isNoRows(err) || (err == nil && (it.ListingCID == nil || *it.ListingCID != p.Listing)) {
			return nil, Errorf(CodeStale, "listing %s was sold or cancelled since this transaction was prepared", p.Listing)
		}
		if err != nil {
			return nil, err
		}
		if it.ListExpires != nil && !tx.Now().Before(it.ListExpires.Time) {
			return nil, Errorf(CodeStale, "listing %s expired at %s", p.Listing, it.ListExpires.UTC().Format(time.RFC3339))
		}
		items[i] = it
		t.Consume = append(t.Consume, ContractRef{Template: templateListing, CID: p.Listing}, ContractRef{Template: templateNFT, CID: p.NFTCID})
		nfts[i] = &NFT{NFTID: p.NFTID, CollectionID: p.CollectionID, Serial: it.Serial, Owner: e.Buyer}
		t.Create = append(t.Create, nfts[i])
	}
	addPayment(t, e.Payment)
	if err := tx.s.ledger.Commit(ctx, tx.Tx, u, t); err != nil {
		return nil, err
	}
	res := BuyResult{Settlement: e.Settlement}
	events := make([]nftActivity, len(e.Purchases))
	for i, p := range e.Purchases {
		it := items[i]
		it.Owner, it.ContractID = e.Buyer, nfts[i].CID
		it.setListing(nil)
		if err := tx.saveItem(ctx, it); err != nil {
			return nil, err
		}
		ct.move(p.Seller, e.Buyer)
		ct.delisted()
		ct.sold(p.Price)
		price, cur := p.Price, ct.c.Currency
		events[i] = nftActivity{NFTID: p.NFTID, CollectionID: p.CollectionID, Kind: EventSold, From: strPtr(p.Seller), To: strPtr(e.Buyer), Price: &price, Currency: &cur}
		res.ContractIDs = append(res.ContractIDs, nfts[i].CID)
		if e.MaxTotal != nil {
			res.Items = append(res.Items, p.Settlement)
		}
	}
	if e.MaxTotal == nil {
		res.ContractID = res.ContractIDs[0]
	}
	if err := tx.nftEvents(ctx, u, events); err != nil {
		return nil, err
	}
	return res, ct.close(ctx)
}
