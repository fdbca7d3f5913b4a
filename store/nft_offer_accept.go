package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/shopspring/decimal"
)

// times is price × n.
func times(price Amount, n int) Amount {
	return amountOf(price.Decimal().Mul(decimal.NewFromInt(int64(n))))
}

// OfferAcceptance is what an NFT owner accepts into an offer.
type OfferAcceptance struct {
	CID         string   // the offer
	ContractIDs []string // the owner's NFTs, 1 to MaxBatch
	MinProceeds string   // optional: the least the seller's shares may sum to
}

// offerSale is one NFT an accept sells into the offer.
type offerSale struct {
	NFTCID     string     `json:"nftCid"`
	NFTID      string     `json:"nftId"`
	Listing    string     `json:"closesListing,omitempty"` // the NFT's listing, closed by the sale
	Settlement Settlement `json:"settlement"`
}

type acceptEffects struct {
	Seller       string      `json:"seller"`
	OfferID      string      `json:"offer"`
	Maker        string      `json:"maker"`
	CollectionID string      `json:"collectionId"`
	Price        Amount      `json:"price"`
	Currency     Instrument  `json:"currency"`
	Sales        []offerSale `json:"sales"`
	Settlement   Settlement  `json:"settlement"`
	MinProceeds  *Amount     `json:"minProceeds,omitempty"`
}

// A crowd accepting into one offer meets on its collection, as buyers do: executes batch.
func (e *acceptEffects) batchKey() batchKey { return batchKey{row: "collection/" + e.CollectionID} }

// PrepareOfferAccept prepares selling the owner's NFTs into an offer: each goes to the
// offer's maker, its price split as a sale splits it, any listing of it closed.
func (s *Store) PrepareOfferAccept(ctx context.Context, seller string, a OfferAcceptance) (*Prepared, error) {
	if a.CID == "" {
		return nil, Errorf(CodeInvalidRequest, "cid is required")
	}
	if len(a.ContractIDs) == 0 || len(a.ContractIDs) > MaxBatch {
		return nil, Errorf(CodeInvalidRequest, "accept with 1 to %d NFTs at once", MaxBatch)
	}
	if len(slices.Compact(slices.Sorted(slices.Values(a.ContractIDs)))) != len(a.ContractIDs) {
		return nil, Errorf(CodeInvalidRequest, "an NFT is named twice")
	}
	o, err := s.liveOffer(ctx, s.db, a.CID)
	if err != nil {
		return nil, err
	}
	if o.Maker == seller {
		return nil, Errorf(CodeConflict, "offer %s is the seller's own; cancel it instead", a.CID)
	}
	if len(a.ContractIDs) > o.Remaining {
		return nil, Errorf(CodeOfferExhausted, "offer %s has %d unit(s) left, fewer than the %d NFTs named", a.CID, o.Remaining, len(a.ContractIDs))
	}
	c, err := s.collectionByIDOrSlug(ctx, o.CollectionID)
	if err != nil {
		return nil, err
	}
	op, err := s.OperatorParty(ctx)
	if err != nil {
		return nil, err
	}
	e := acceptEffects{Seller: seller, OfferID: o.OfferID, Maker: o.Maker, CollectionID: c.ID, Price: o.Price, Currency: o.Instrument}
	if a.MinProceeds != "" {
		m, err := parseDecimal(a.MinProceeds, c.Currency.Decimals())
		if err != nil {
			return nil, fieldError("minProceeds", err)
		}
		e.MinProceeds = &m
	}
	var settlements []Settlement
	claims := []string{o.CID}
	for _, cid := range a.ContractIDs {
		n, err := s.liveNFT(ctx, cid, seller)
		if err != nil {
			return nil, err
		}
		it, err := s.liveItem(ctx, n.NFTID)
		if err != nil {
			return nil, err
		}
		if n.CollectionID != o.CollectionID || !o.matches(n.NFTID, traitsOfItem(it)) {
			return nil, Errorf(CodeOfferMismatch, "NFT %s does not match offer %s", cid, a.CID)
		}
		st := settle(o.Price, c.Currency, s.cfg.MarketFeeBps, op, c.RoyaltyBps, c.Creator, seller)
		sale := offerSale{NFTCID: n.CID, NFTID: n.NFTID, Settlement: st}
		if l, err := activeListingOf(ctx, s.db, n.CID); err != nil {
			return nil, err
		} else if l != nil {
			sale.Listing = l.CID
			claims = append(claims, l.CID)
		}
		e.Sales = append(e.Sales, sale)
		settlements = append(settlements, st)
		claims = append(claims, n.CID)
	}
	e.Settlement = total(settlements)
	if err := e.checkProceeds(); err != nil {
		return nil, err
	}
	if c.Currency == USDCx {
		for _, party := range []string{op, c.Creator} {
			if party != seller && party != o.Maker {
				if err := checkPreapproval(ctx, s.db, party, PreapprovalUSDCx, s.now()); err != nil {
					return nil, err
				}
			}
		}
	}
	summary := map[string]any{
		"action": fmt.Sprintf("sell %d NFT(s) of %s into offer %s at %s %s each", len(e.Sales), c.Name, o.OfferID, o.Price, c.Currency),
		"seller": seller, "maker": o.Maker, "settlement": e.Settlement,
	}
	return s.prepareAs(ctx, KindNFTOfferAccept, seller, e, summary, claims)
}

// checkProceeds refuses an accept whose seller's shares sum to less than minProceeds.
func (e *acceptEffects) checkProceeds() error {
	if e.MinProceeds != nil && e.Settlement.Seller.Amount.Cmp(*e.MinProceeds) < 0 {
		return Errorf(CodeConflict, "the seller would receive %s %s, less than minProceeds %s", e.Settlement.Seller.Amount, e.Currency, e.MinProceeds)
	}
	return nil
}

// AcceptResult is what an accept execute adds to the receipt.
type AcceptResult struct {
	ContractIDs []string   `json:"contractIds"`
	Settlement  Settlement `json:"settlement"`
	Remaining   int        `json:"remaining"`
}

func applyOfferAccept(ctx context.Context, tx *Tx, u *Update, e *acceptEffects) (any, error) {
	ct, err := tx.lockCollection(ctx, e.CollectionID)
	if err != nil {
		return nil, err
	}
	// Under the collection's lock the offer and the items are as the last commit left them.
	if err := tx.Flush(ctx); err != nil {
		return nil, err
	}
	o, err := tx.s.liveOffer(ctx, tx, e.OfferID)
	switch {
	case ErrorCode(err) == CodeConflict:
		return nil, Errorf(CodeStale, "%s since this was prepared", ErrorMessage(err))
	case err != nil:
		return nil, err
	case o.expiredAt(tx.Now()):
		return nil, Errorf(CodeStale, "offer %s expired since this was prepared", e.OfferID)
	case len(e.Sales) > o.Remaining:
		return nil, Errorf(CodeOfferExhausted, "offer %s has %d unit(s) left, fewer than the %d NFTs named", e.OfferID, o.Remaining, len(e.Sales))
	case !o.Price.Equal(e.Price) || o.Maker != e.Maker:
		return nil, fmt.Errorf("nft: offer %s is not the one prepared", e.OfferID)
	}
	t := &Transaction{Consume: []ContractRef{{Template: templateOffer, CID: o.CID}}}
	nfts := make([]*NFT, len(e.Sales))
	ids := make([]string, len(e.Sales))
	for i, sale := range e.Sales {
		ids[i] = sale.NFTID
	}
	items, err := tx.items(ctx, ids)
	if isNoRows(err) {
		return nil, Errorf(CodeStale, "an NFT of this accept was burned since it was prepared")
	}
	if err != nil {
		return nil, err
	}
	credits := map[string]Amount{}
	for i, sale := range e.Sales {
		it := items[sale.NFTID]
		if it.ContractID != sale.NFTCID || it.Owner != e.Seller || valueOf(it.ListingCID) != sale.Listing {
			return nil, Errorf(CodeStale, "NFT %s was sold, moved, listed or delisted since this was prepared", sale.NFTCID)
		}
		if sale.Listing != "" {
			t.Consume = append(t.Consume, ContractRef{Template: templateListing, CID: sale.Listing})
		}
		t.Consume = append(t.Consume, ContractRef{Template: templateNFT, CID: sale.NFTCID})
		nfts[i] = &NFT{NFTID: sale.NFTID, CollectionID: e.CollectionID, Serial: it.Serial, Owner: e.Maker}
		t.Create = append(t.Create, nfts[i])
		for _, sh := range []Share{sale.Settlement.Fee, sale.Settlement.Royalty, sale.Settlement.Seller} {
			credits[*sh.Party] = credits[*sh.Party].Add(sh.Amount)
		}
	}
	for _, party := range sortedKeys(credits) {
		if credits[party].IsPositive() {
			t.Create = append(t.Create, &Holding{Owner: party, Instrument: e.Currency, Amount: credits[party]})
		}
	}
	left := o.Remaining - len(e.Sales)
	next := *o
	if left > 0 {
		next.Lifecycle, next.Remaining, next.Amount = Lifecycle{}, left, times(o.Price, left)
		t.Create = append(t.Create, &next)
	}
	if err := tx.s.ledger.Commit(ctx, tx.Tx, u, t); err != nil {
		return nil, err
	}
	res := AcceptResult{Settlement: e.Settlement, Remaining: left}
	events := make([]nftActivity, len(e.Sales))
	for i, sale := range e.Sales {
		it := items[sale.NFTID]
		if it.ListingCID != nil {
			ct.delisted()
		}
		it.Owner, it.ContractID = e.Maker, nfts[i].CID
		it.setListing(nil)
		if err := tx.saveItem(ctx, it); err != nil {
			return nil, err
		}
		ct.move(e.Seller, e.Maker)
		ct.sold(e.Price)
		price, cur := e.Price, e.Currency
		events[i] = nftActivity{NFTID: sale.NFTID, CollectionID: e.CollectionID, Kind: EventOfferAccepted, From: strPtr(e.Seller), To: strPtr(e.Maker),
			Price: &price, Currency: &cur, OfferCID: strPtr(e.OfferID)}
		res.ContractIDs = append(res.ContractIDs, nfts[i].CID)
	}
	if err := tx.nftEvents(ctx, u, events); err != nil {
		return nil, err
	}
	ct.offersChanged(o)
	if left > 0 {
		ct.offersChanged(&next)
	}
	return res, ct.close(ctx)
}

func valueOf(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
