package store

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"marketd/store/wallet"
)

// A batch of offers is one signature over 1 to MaxBatch offers of one collection, as a batch
// list is one over listings: each offer is its own contract and offer id, checked as one offer
// alone is (its terms, and crosses_listing at prepare and again at execute), and the funds they
// lock together are taken from the maker's holdings once. A market maker quoting many NFTs,
// or the demo seed, makes them so.

type offersEffects = wallet.OffersEffects

// offersBatchKey batches a batch of offers with the other offers of its collection.
func offersBatchKey(e *offersEffects) batchKey { return batchKey{row: "collection/" + e.CollectionID} }

// crossedByListings is crossedByListing for a batch of offers of one maker and collection,
// the first that crosses refused: when no listing of another party asks the batch's highest
// price or less, none crosses, which one read tells (an offer under the floor, as most are);
// else each is checked alone.
func crossedByListings(ctx context.Context, db bun.IDB, now time.Time, offers []*Offer) error {
	top := offers[0]
	for _, o := range offers[1:] {
		if o.Price.Cmp(top.Price) > 0 {
			top = o
		}
	}
	anyNFT := *top
	anyNFT.Kind, anyNFT.NFTID, anyNFT.Traits = OfferCollection, nil, nil
	if err := crossedByListing(ctx, db, now, &anyNFT); err == nil || ErrorCode(err) != CodeCrossesListing {
		return err
	}
	for _, o := range offers {
		if err := crossedByListing(ctx, db, now, o); err != nil {
			return err
		}
	}
	return nil
}

// OffersResult is what a batch of offers adds to the receipt: each offer's id, in the order of
// the terms.
type OffersResult struct {
	CIDs []string `json:"cids"`
}

// PrepareOffers prepares 1 to MaxBatch offers of one collection by maker, which lock the sum
// of their price × quantity of the maker's holdings.
func (s *Store) PrepareOffers(ctx context.Context, maker string, terms []OfferTerms) (*Prepared, error) {
	if len(terms) == 0 || len(terms) > MaxBatch {
		return nil, Errorf(CodeInvalidRequest, "make 1 to %d offers at once", MaxBatch)
	}
	e := &offersEffects{Maker: maker}
	sum := Zero
	now := s.now()
	var c *Collection
	for i, t := range terms {
		oe, oc, err := s.offerEffects(ctx, maker, t, c)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			e.CollectionID = oe.CollectionID
		} else if oe.CollectionID != e.CollectionID {
			return nil, Errorf(CodeInvalidRequest, "the offers of a batch are of one collection: %s, then %s", e.CollectionID, oe.CollectionID)
		}
		c = oc
		sum = sum.Add(oe.Lock.Amount)
		e.Offers = append(e.Offers, *oe)
	}
	if err := checkAmountBounds(sum); err != nil {
		return nil, err
	}
	offers := make([]*Offer, len(e.Offers))
	for i := range e.Offers {
		offers[i] = offerOf(&e.Offers[i], now)
	}
	if err := crossedByListings(ctx, s.db, now, offers); err != nil {
		return nil, err
	}
	inst := e.Offers[0].Lock.Instrument
	funds, claims, err := s.prepareLock(ctx, maker, inst, sum)
	if err != nil {
		return nil, err
	}
	e.Lock = *funds
	summary := map[string]any{
		"action": fmt.Sprintf("make %d offer(s) on %s, locking %s %s", len(e.Offers), e.CollectionID, sum, inst),
		"maker":  maker, "collectionId": e.CollectionID, "offers": len(e.Offers),
		"locks": map[string]any{"instrument": inst, "amount": sum}, "change": e.Lock.Change,
	}
	return s.prepareAs(ctx, KindNFTOffers, maker, e, summary, claims)
}

// applyOffers creates the batch's offers, the i-th the update's i-th contract (its offer id),
// and takes what they lock from the maker's holdings.
func applyOffers(ctx context.Context, tx *Tx, u *Update, e *offersEffects) (any, error) {
	now := tx.Now()
	for _, oe := range e.Offers {
		if !now.Before(time.Unix(oe.ExpiresAt, 0)) {
			return nil, Errorf(CodeStale, "an offer expired before it was executed; prepare them again")
		}
		if oe.CollectionID != e.CollectionID || oe.Maker != e.Maker || oe.Lock.Instrument != e.Lock.Instrument {
			return nil, fmt.Errorf("nft: a batch of offers of %s by %s has one of %s by %s", e.CollectionID, e.Maker, oe.CollectionID, oe.Maker)
		}
	}
	ct, err := tx.lockCollection(ctx, e.CollectionID)
	if err != nil {
		return nil, err
	}
	if err := tx.Flush(ctx); err != nil { // the batch's earlier listings and sales first
		return nil, err
	}
	t := &Transaction{}
	offers := make([]*Offer, len(e.Offers))
	events := make([]nftActivity, len(e.Offers))
	for i := range e.Offers {
		o := offerOf(&e.Offers[i], now)
		o.OfferID = contractID(u.UpdateID, i)
		offers[i] = o
		t.Create = append(t.Create, o)
	}
	if err := crossedByListings(ctx, tx, now, offers); err != nil {
		return nil, err
	}
	addLock(t, &e.Lock, e.Maker)
	if err := tx.s.ledger.Commit(ctx, tx.Tx, u, t); err != nil {
		return nil, err
	}
	res := OffersResult{CIDs: make([]string, len(offers))}
	for i, o := range offers {
		if o.CID != o.OfferID {
			return nil, fmt.Errorf("nft: offer id %s is not its cid %s", o.OfferID, o.CID)
		}
		res.CIDs[i] = o.OfferID
		events[i] = o.event(EventOffer)
		ct.offersChanged(o)
	}
	if err := tx.nftEvents(ctx, u, events); err != nil {
		return nil, err
	}
	return res, ct.close(ctx)
}
