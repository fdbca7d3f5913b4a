package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/shopspring/decimal"
	"github.com/uptrace/bun"

	"marketd/store/wallet"
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

type offerSale = wallet.OfferSale

type acceptEffects = wallet.OfferAcceptEffects

// A crowd accepting into one offer meets on one contract, as minters meet on a phase: the
// accepts of a collection batch (ledger_execute_batch.go) and a batch applies in one pass
// (applyAccepts): the collection locked once, the offers and the NFTs read once, each accept
// checked in memory against what the earlier ones of the batch left (the units an offer has
// left, the NFTs they sold), the ledger committing them all with one CommitBatch, each
// consuming the offer's version the one before it created. An accept the offer can no longer
// take is answered alone (offer_exhausted, stale); one the ledger refuses rolls the attempt
// back and the batch is applied again without it.
var acceptsInOnePass = &onePass{apply: (*Tx).applyAcceptBatch}

// acceptBatchKey batches the accepts of one collection, applied in one pass (applyAcceptBatch).
func acceptBatchKey(e *acceptEffects) batchKey {
	return batchKey{row: "collection/" + e.CollectionID, way: acceptsInOnePass}
}

func (tx *Tx) applyAcceptBatch(ctx context.Context, batch []*executeRequest, prepared map[string]*PreparedTx, refused []bool, results []executeResult) error {
	return applyInOnePass(ctx, tx, batch, prepared, refused, results, KindNFTOfferAccept, tx.applyAccepts)
}

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
	c, err := s.collectionIdentityOf(ctx, o.CollectionID)
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
		it, err := s.liveItemOf(ctx, cid, seller)
		if err != nil {
			return nil, err
		}
		if it.CollectionID != o.CollectionID || !o.matches(it.NFTID, traitsOfItem(it)) {
			return nil, Errorf(CodeOfferMismatch, "NFT %s does not match offer %s", cid, a.CID)
		}
		st := settle(o.Price, c.Currency, s.cfg.MarketFeeBps, op, c.RoyaltyBps, c.Creator, seller)
		// The item's listing is the NFT's active one (an expired one too, until it is archived).
		sale := offerSale{NFTCID: it.ContractID, NFTID: it.NFTID, Listing: deref(it.ListingCID), Settlement: st}
		if sale.Listing != "" {
			claims = append(claims, sale.Listing)
		}
		e.Sales = append(e.Sales, sale)
		settlements = append(settlements, st)
		claims = append(claims, it.ContractID)
	}
	e.Settlement = total(settlements)
	if err := checkProceeds(&e); err != nil {
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
func checkProceeds(e *acceptEffects) error {
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
	results, errs, _, err := tx.applyAccepts(ctx, []*Update{u}, []*acceptEffects{e})
	if err != nil {
		return nil, err
	}
	return results[0], errs[0]
}

// applyAccepts applies the accepts es of one collection, each as its own ledger update us[i],
// in one pass. An accept the offer or its NFTs no longer allow gets its error in errs and
// changes nothing. When the ledger refuses one, err is its refusal and refusedAt its index;
// any other err (refusedAt -1) fails them all.
func (tx *Tx) applyAccepts(ctx context.Context, us []*Update, es []*acceptEffects) (results []any, errs []error, refusedAt int, err error) {
	ct, err := tx.lockCollection(ctx, es[0].CollectionID)
	if err != nil {
		return nil, nil, -1, err
	}
	// Under the collection's lock the offers and the items are as the last commit left them.
	if err := tx.Flush(ctx); err != nil {
		return nil, nil, -1, err
	}
	var offerIDs, nftIDs []string
	for _, e := range es {
		if e.CollectionID != ct.c.ID {
			return nil, nil, -1, fmt.Errorf("nft: a batch of accepts of %s has one of %s", ct.c.ID, e.CollectionID)
		}
		offerIDs = append(offerIDs, e.OfferID)
		for _, sale := range e.Sales {
			nftIDs = append(nftIDs, sale.NFTID)
		}
	}
	var live []Offer
	if err := tx.NewSelect().Model(&live).Where("offer_id IN (?)", bun.In(offerIDs)).Where("consumed_update IS NULL").Scan(ctx); err != nil {
		return nil, nil, -1, err
	}
	offers := map[string]*Offer{} // each offer's version as the batch's accepts so far leave it
	for i := range live {
		offers[live[i].OfferID] = &live[i]
	}
	var rows []nftItem
	if err := tx.NewSelect().Model(&rows).Where("nft_id IN (?)", bun.In(nftIDs)).Scan(ctx); err != nil {
		return nil, nil, -1, err
	}
	items := map[string]*nftItem{}
	for i := range rows {
		items[rows[i].NFTID] = &rows[i]
	}
	type stagedAccept struct {
		at       int
		consumed *Offer // the offer's version it consumes
		next     *Offer // the version it leaves, nil when it takes the rest
		nfts     []*NFT
	}
	var (
		staged []stagedAccept
		ts     []*Transaction
		sus    []*Update
	)
	results, errs = make([]any, len(es)), make([]error, len(es))
	for i, e := range es {
		o := offers[e.OfferID]
		if err := tx.acceptable(ctx, e, o, items); err != nil {
			if ErrorCode(err) == CodeInternal {
				return nil, nil, -1, err
			}
			errs[i] = err
			continue
		}
		st := stagedAccept{at: i, consumed: o}
		t := &Transaction{Consume: []ContractRef{{Template: templateOffer, CID: o.CID}}}
		credits := map[string]Amount{}
		for _, sale := range e.Sales {
			it := items[sale.NFTID]
			if sale.Listing != "" {
				t.Consume = append(t.Consume, ContractRef{Template: templateListing, CID: sale.Listing})
			}
			t.Consume = append(t.Consume, ContractRef{Template: templateNFT, CID: sale.NFTCID})
			n := &NFT{NFTID: sale.NFTID, CollectionID: e.CollectionID, Serial: it.Serial, Owner: e.Maker}
			st.nfts, t.Create = append(st.nfts, n), append(t.Create, n)
			for _, sh := range []Share{sale.Settlement.Fee, sale.Settlement.Royalty, sale.Settlement.Seller} {
				credits[*sh.Party] = credits[*sh.Party].Add(sh.Amount)
			}
			// Sold: a later accept of the batch that names it finds it gone.
			it.Owner, it.ContractID = e.Maker, contractID(us[i].UpdateID, len(t.Create)-1)
		}
		for _, party := range sortedKeys(credits) {
			if credits[party].IsPositive() {
				t.Create = append(t.Create, &Holding{Owner: party, Instrument: e.Currency, Amount: credits[party]})
			}
		}
		if left := o.Remaining - len(e.Sales); left > 0 {
			next := *o
			next.Lifecycle, next.Remaining, next.Amount = Lifecycle{CID: contractID(us[i].UpdateID, len(t.Create))}, left, times(o.Price, left)
			st.next = &next
			t.Create = append(t.Create, &next)
			offers[e.OfferID] = &next
		} else {
			delete(offers, e.OfferID)
		}
		staged, ts, sus = append(staged, st), append(ts, t), append(sus, us[i])
	}
	if len(staged) == 0 {
		return results, errs, -1, nil
	}
	if k, err := tx.s.ledger.CommitBatch(ctx, tx.Tx, sus, ts); err != nil {
		if k < 0 {
			return nil, nil, -1, err
		}
		return nil, nil, staged[k].at, err
	}
	var events []nftActivity // the batch's, inserted at once
	for _, st := range staged {
		e, u := es[st.at], us[st.at]
		res := AcceptResult{Settlement: e.Settlement}
		sold := make([]nftActivity, len(e.Sales))
		for j, sale := range e.Sales {
			it := items[sale.NFTID]
			if it.ListingCID != nil {
				ct.delisted()
			}
			it.ContractID = st.nfts[j].CID
			it.setListing(nil)
			if err := tx.saveItem(ctx, it); err != nil {
				return nil, nil, -1, err
			}
			ct.move(e.Seller, e.Maker)
			ct.sold(e.Price)
			price, cur := e.Price, e.Currency
			sold[j] = nftActivity{NFTID: sale.NFTID, CollectionID: e.CollectionID, Kind: EventOfferAccepted, From: strPtr(e.Seller), To: strPtr(e.Maker),
				Price: &price, Currency: &cur, OfferCID: strPtr(e.OfferID)}
			res.ContractIDs = append(res.ContractIDs, st.nfts[j].CID)
		}
		tx.stampEvents(u, sold)
		events = append(events, sold...)
		ct.offersChanged(st.consumed)
		if st.next != nil {
			ct.offersChanged(st.next)
			res.Remaining = st.next.Remaining
		}
		results[st.at] = res
	}
	if err := tx.Later(ctx, tx.NewInsert().Model(&events)); err != nil {
		return nil, nil, -1, err
	}
	return results, errs, -1, ct.close(ctx)
}

// acceptable checks an accept against its offer's version o (nil: none is open) and the
// NFTs' items, as the batch's earlier accepts left them.
func (tx *Tx) acceptable(ctx context.Context, e *acceptEffects, o *Offer, items map[string]*nftItem) error {
	if o == nil {
		// Why none is open: the last version says (cancelled or expired: stale; taken: exhausted).
		_, err := tx.s.liveOffer(ctx, tx, e.OfferID)
		switch {
		case err == nil:
			return Errorf(CodeOfferExhausted, "offer %s has no units left", e.OfferID)
		case ErrorCode(err) == CodeConflict:
			return Errorf(CodeStale, "%s since this was prepared", ErrorMessage(err))
		}
		return err
	}
	switch {
	case o.expiredAt(tx.Now()):
		return Errorf(CodeStale, "offer %s expired since this was prepared", e.OfferID)
	case len(e.Sales) > o.Remaining:
		return Errorf(CodeOfferExhausted, "offer %s has %d unit(s) left, fewer than the %d NFTs named", e.OfferID, o.Remaining, len(e.Sales))
	case !o.Price.Equal(e.Price) || o.Maker != e.Maker:
		return fmt.Errorf("nft: offer %s is not the one prepared", e.OfferID)
	}
	for _, sale := range e.Sales {
		it := items[sale.NFTID]
		if it == nil || it.ContractID != sale.NFTCID || it.Owner != e.Seller || deref(it.ListingCID) != sale.Listing {
			return Errorf(CodeStale, "NFT %s was sold, moved, burned, listed or delisted since this was prepared", sale.NFTCID)
		}
	}
	return nil
}
