package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"marketd/store/wallet"
)

// ListingTerms is one NFT a seller offers, at a price, until an optional expiry.
type ListingTerms struct {
	ContractID string
	Price      string // a decimal of the collection's currency
	ExpiresAt  *time.Time
}

type listingEffect = wallet.ListingEffect

type listEffects = wallet.ListEffects

// nftContractRead is an NFT contract by its cid.
var nftContractRead = &preparedRead{model: (*NFT)(nil), n: 1, where: func(q *bun.SelectQuery, args []any) *bun.SelectQuery {
	return q.Where("cid = ?", args[0])
}}

// liveNFT returns the active NFT contract cid, which must be the owner's.
func (s *Store) liveNFT(ctx context.Context, cid, owner string) (*NFT, error) {
	n, err := selectFirst[NFT](ctx, s, s.db, nftContractRead, cid)
	if err != nil {
		return nil, err
	}
	if n == nil {
		return nil, Errorf(CodeNotFound, "no NFT contract %s", truncate(cid, 80))
	}
	if !n.Active() {
		return nil, Errorf(CodeConflict, "NFT contract %s is no longer live (the NFT was sold, transferred or burned); use its current contract", cid)
	}
	if n.Owner != owner {
		return nil, Errorf(CodePartyMismatch, "NFT %s belongs to %s, not to %s", cid, n.Owner, owner)
	}
	return n, nil
}

// PrepareList prepares listing one or more of the seller's NFTs for sale.
func (s *Store) PrepareList(ctx context.Context, seller string, terms []ListingTerms) (*Prepared, error) {
	if len(terms) == 0 || len(terms) > MaxBatch {
		return nil, Errorf(CodeInvalidRequest, "list 1 to %d NFTs at once", MaxBatch)
	}
	e := listEffects{Seller: seller}
	var claims []string
	seen := map[string]bool{}
	now := s.now()
	limit := MustAmount(maxListPrice)
	for _, lt := range terms {
		if lt.ContractID == "" {
			return nil, Errorf(CodeInvalidRequest, "contractId is required")
		}
		if seen[lt.ContractID] {
			return nil, Errorf(CodeInvalidRequest, "NFT %s is named twice", truncate(lt.ContractID, 80))
		}
		seen[lt.ContractID] = true
		n, err := s.liveNFT(ctx, lt.ContractID, seller)
		if err != nil {
			return nil, err
		}
		c, err := s.collectionByIDOrSlug(ctx, n.CollectionID)
		if err != nil {
			return nil, err
		}
		price, err := ParseAmount(lt.Price, c.Currency)
		if err != nil {
			return nil, err
		}
		if price.Cmp(limit) > 0 {
			return nil, Errorf(CodeInvalidRequest, "a listing price is at most %s", limit)
		}
		it, err := s.liveItem(ctx, n.NFTID)
		if err != nil {
			return nil, err
		}
		if err := crossedByOffer(ctx, s.db, now, it, seller, price); err != nil {
			return nil, err
		}
		le := listingEffect{NFTCID: n.CID, NFTID: n.NFTID, CollectionID: c.ID, Price: price, Currency: c.Currency}
		if l, err := activeListingOf(ctx, s.db, n.CID); err != nil {
			return nil, err
		} else if l != nil {
			if l.ExpiresAt == nil || now.Before(l.ExpiresAt.Time) {
				return nil, Errorf(CodeConflict, "NFT %s is listed already (listing %s); cancel that listing first", n.CID, l.CID)
			}
			// Expired, so unlisted for every read: the new listing withdraws it.
			le.Withdraws = l.CID
			claims = append(claims, l.CID)
		}
		if lt.ExpiresAt != nil {
			if !lt.ExpiresAt.After(now) {
				return nil, Errorf(CodeInvalidRequest, "expiresAt must be in the future")
			}
			if lt.ExpiresAt.After(maxListingExpiry) {
				return nil, Errorf(CodeInvalidRequest, "expiresAt must be at most %d (the end of year 9999)", maxListingExpiry.Unix())
			}
			x := lt.ExpiresAt.Unix()
			le.ExpiresAt = &x
		}
		e.Listings = append(e.Listings, le)
	}
	summary := map[string]any{"action": fmt.Sprintf("list %d NFT(s) for sale", len(e.Listings)), "seller": seller, "listings": e.Listings}
	return s.prepareAs(ctx, KindNFTList, seller, e, summary, claims)
}

// ListResult is what a list execute adds to the receipt.
type ListResult struct {
	CID  string   `json:"cid,omitempty"`
	CIDs []string `json:"cids"`
}

// lockCollections locks the collections of an NFT transaction in id order.
func (tx *Tx) lockCollections(ctx context.Context, ids []string) (map[string]*collectionTx, error) {
	out := map[string]*collectionTx{}
	for _, id := range slices.Compact(slices.Sorted(slices.Values(ids))) {
		ct, err := tx.lockCollection(ctx, id)
		if err != nil {
			return nil, err
		}
		out[id] = ct
	}
	return out, nil
}

func closeAll(ctx context.Context, cts map[string]*collectionTx) error {
	for _, id := range sortedKeys(cts) {
		if err := cts[id].close(ctx); err != nil {
			return err
		}
	}
	return nil
}

func applyList(ctx context.Context, tx *Tx, u *Update, e *listEffects) (any, error) {
	ids := make([]string, len(e.Listings))
	for i, l := range e.Listings {
		ids[i] = l.CollectionID
	}
	cts, err := tx.lockCollections(ctx, ids)
	if err != nil {
		return nil, err
	}
	t := &Transaction{}
	listings := make([]*Listing, len(e.Listings))
	var events []nftActivity
	for _, le := range e.Listings {
		if le.Withdraws != "" {
			// The sweeper may have archived the expired listing since; then there is nothing to withdraw.
			old, err := listingByCID(ctx, tx, le.Withdraws)
			if err != nil {
				return nil, err
			}
			if old.Active() {
				t.Consume = append(t.Consume, ContractRef{Template: templateListing, CID: old.CID})
				cts[le.CollectionID].delisted()
				p, cur := old.Price, old.Currency
				events = append(events, nftActivity{NFTID: le.NFTID, CollectionID: le.CollectionID, Kind: EventDelisted, From: strPtr(e.Seller), Price: &p, Currency: &cur})
			}
		}
	}
	nftIDs := make([]string, len(e.Listings))
	for i, le := range e.Listings {
		nftIDs[i] = le.NFTID
	}
	items, err := tx.items(ctx, nftIDs)
	if err != nil {
		return nil, err
	}
	for i, le := range e.Listings {
		// Under the collection's lock the book is as the last commit left it.
		if err := crossedByOffer(ctx, tx, tx.Now(), items[le.NFTID], e.Seller, le.Price); err != nil {
			return nil, err
		}
		l := &Listing{Seller: e.Seller, NFTCID: le.NFTCID, NFTID: le.NFTID, CollectionID: le.CollectionID, Price: le.Price, Currency: le.Currency}
		if le.ExpiresAt != nil {
			at := At(time.Unix(*le.ExpiresAt, 0))
			if !tx.Now().Before(at.Time) {
				return nil, Errorf(CodeStale, "the listing of %s expired before it was executed; prepare it again", le.NFTCID)
			}
			l.ExpiresAt = &at
		}
		listings[i] = l
		t.Create = append(t.Create, l)
	}
	if err := tx.s.ledger.Commit(ctx, tx.Tx, u, t); err != nil {
		return nil, err
	}
	res := ListResult{}
	for _, l := range listings {
		it := items[l.NFTID]
		it.setListing(l)
		if err := tx.saveItem(ctx, it); err != nil {
			return nil, err
		}
		cts[l.CollectionID].listed(l.Price)
		p, cur := l.Price, l.Currency
		events = append(events, nftActivity{NFTID: l.NFTID, CollectionID: l.CollectionID, Kind: EventListed, From: strPtr(l.Seller), Price: &p, Currency: &cur})
		res.CIDs = append(res.CIDs, l.CID)
	}
	if len(res.CIDs) == 1 {
		res.CID = res.CIDs[0]
	}
	if err := tx.nftEvents(ctx, u, events); err != nil {
		return nil, err
	}
	return res, closeAll(ctx, cts)
}

type listingRef = wallet.ListingRef

type cancelEffects = wallet.CancelEffects

// activeListingFor returns the active listing cid, which must be party's own.
func (s *Store) activeListingFor(ctx context.Context, cid, party string) (*Listing, error) {
	l, err := s.ListingByCID(ctx, cid)
	if err != nil {
		return nil, err
	}
	if l.Seller != party {
		return nil, Errorf(CodePartyMismatch, "listing %s belongs to %s, not to %s", cid, l.Seller, party)
	}
	if !l.Active() {
		return nil, Errorf(CodeConflict, "listing %s was sold or cancelled already", cid)
	}
	return l, nil
}

// PrepareCancel prepares withdrawing one or more of the seller's active listings.
func (s *Store) PrepareCancel(ctx context.Context, seller string, cids []string) (*Prepared, error) {
	if len(cids) == 0 || len(cids) > MaxBatch {
		return nil, Errorf(CodeInvalidRequest, "cancel 1 to %d listings at once", MaxBatch)
	}
	if len(slices.Compact(slices.Sorted(slices.Values(cids)))) != len(cids) {
		return nil, Errorf(CodeInvalidRequest, "a listing is named twice")
	}
	e := cancelEffects{Seller: seller}
	for _, cid := range cids {
		l, err := s.activeListingFor(ctx, cid, seller)
		if err != nil {
			return nil, err
		}
		e.Listings = append(e.Listings, listingRef{CID: l.CID, NFTID: l.NFTID, CollectionID: l.CollectionID})
	}
	summary := map[string]any{"action": fmt.Sprintf("cancel %d listing(s)", len(cids)), "seller": seller, "listings": cids}
	return s.prepareAs(ctx, KindNFTCancel, seller, e, summary, cids)
}

func applyCancel(ctx context.Context, tx *Tx, u *Update, e *cancelEffects) (any, error) {
	return nil, tx.withdrawListings(ctx, u, e.Listings, nil)
}

// withdrawListings consumes listings and takes them off their NFTs, as their seller's
// cancel or as the operator's expiry. also joins more contracts to the same transaction.
func (tx *Tx) withdrawListings(ctx context.Context, u *Update, ls []listingRef, also *Transaction) error {
	ids := make([]string, len(ls))
	for i, l := range ls {
		ids[i] = l.CollectionID
	}
	cts, err := tx.lockCollections(ctx, ids)
	if err != nil {
		return err
	}
	t := &Transaction{}
	if also != nil {
		t = also
	}
	for _, l := range ls {
		t.Consume = append(t.Consume, ContractRef{Template: templateListing, CID: l.CID})
	}
	if err := tx.s.ledger.Commit(ctx, tx.Tx, u, t); err != nil {
		return err
	}
	events := make([]nftActivity, len(ls))
	nftIDs := make([]string, len(ls))
	for i, l := range ls {
		nftIDs[i] = l.NFTID
	}
	items, err := tx.items(ctx, nftIDs)
	if err != nil {
		return err
	}
	for i, l := range ls {
		it := items[l.NFTID]
		events[i] = nftActivity{NFTID: l.NFTID, CollectionID: l.CollectionID, Kind: EventDelisted, From: strPtr(it.Owner), Price: it.ListPrice, Currency: it.ListCurrency}
		it.setListing(nil)
		if err := tx.saveItem(ctx, it); err != nil {
			return err
		}
		cts[l.CollectionID].delisted()
	}
	if err := tx.nftEvents(ctx, u, events); err != nil {
		return err
	}
	return closeAll(ctx, cts)
}

// ExpireListings archives up to limit listings whose expiry has passed, as the operator, and
// returns how many. Reads already treat them as unlisted; this makes the statistics agree.
func (s *Store) ExpireListings(ctx context.Context, limit int) (int, error) {
	var due []Listing
	err := s.db.NewSelect().Model(&due).Where("consumed_update IS NULL").Where("expires_at IS NOT NULL").
		Where("expires_at <= ?", At(s.now())).OrderExpr("expires_at, cid").Limit(int64(limit)).Scan(ctx)
	if err != nil {
		return 0, err
	}
	return s.releaseExpired(ctx, KindListingExpired, len(due), func(tx *Tx, u *Update, i int) error {
		l := due[i]
		return tx.withdrawListings(ctx, u, []listingRef{{CID: l.CID, NFTID: l.NFTID, CollectionID: l.CollectionID}}, nil)
	})
}

// releaseExpired commits, as the operator, one update of kind for each of n things past their
// expiry, release applying the i-th; one that a write took meanwhile (stale: sold, filled,
// accepted or cancelled) is passed over. It returns how many it committed.
func (s *Store) releaseExpired(ctx context.Context, kind string, n int, release func(tx *Tx, u *Update, i int) error) (int, error) {
	if n == 0 {
		return 0, nil
	}
	op, err := s.OperatorParty(ctx)
	if err != nil {
		return 0, err
	}
	done := 0
	for i := range n {
		err := s.commit(ctx, kind, op, func(tx *Tx, u *Update) error { return release(tx, u, i) })
		switch {
		case err == nil:
			done++
		case ErrorCode(err) == CodeStale:
		default:
			return done, err
		}
	}
	return done, nil
}
