package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/shopspring/decimal"
	"github.com/uptrace/bun"
)

// Kinds of NFT update. Each prepared kind is an entry of actions.
const (
	KindNFTMint        = "nft.mint"
	KindNFTList        = "nft.list"
	KindNFTCancel      = "nft.cancel"
	KindNFTBuy         = "nft.buy"
	KindNFTSweep       = "nft.sweep"
	KindNFTTransfer    = "nft.transfer"
	KindNFTBurn        = "nft.burn"
	KindListingExpired = "nft.listing-expired" // committed by the operator, not prepared
)

// MaxBatch is how many NFTs or listings one signature may cover, for every batch: a batch
// mint's quantity, a batch list's items, a batch cancel's cids, a sweep's cids or count. One
// limit for all of them, checked here at prepare, so REST, GraphQL and walletctl cannot drift
// apart; over it is invalid_request (400). It bounds the rows one ledger transaction writes
// while it holds the collection's lock.
const MaxBatch = 50

// maxListPrice is the highest price a listing may ask.
const maxListPrice = "1000000000000"

// maxListingExpiry bounds a listing's expiry to what Unix microseconds hold with room to spare.
var maxListingExpiry = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

// ---- collection state inside one transaction

// collectionTx is a collection locked for one NFT transaction. Every NFT transaction of a
// collection takes this lock first, so they apply one at a time and in one lock order; the
// statistics change in memory and are written once, by close.
type collectionTx struct {
	tx      *Tx
	c       *Collection
	owners  map[string]int // change in NFTs owned, per party
	lowest  *Amount        // the lowest price listed by this transaction
	delists bool           // a listing went: the floor is read again
}

func (tx *Tx) lockCollection(ctx context.Context, id string) (*collectionTx, error) {
	tx.touched = append(tx.touched, id)
	c := new(Collection)
	err := tx.forUpdate(tx.NewSelect().Model(c).Where("collection_id = ?", id)).Scan(ctx)
	if isNoRows(err) {
		return nil, Errorf(CodeNotFound, "no collection %q", truncate(id, 80))
	}
	if err != nil {
		return nil, err
	}
	return &collectionTx{tx: tx, c: c, owners: map[string]int{}}, nil
}

// move records that an NFT went from one owner to another ("" for minted or burned).
func (ct *collectionTx) move(from, to string) {
	if from != "" {
		ct.owners[from]--
	}
	if to != "" {
		ct.owners[to]++
	}
}

// listed records a listing added at price.
func (ct *collectionTx) listed(price Amount) {
	ct.c.ListedCount++
	if ct.lowest == nil || price.Cmp(*ct.lowest) < 0 {
		ct.lowest = &price
	}
}

// delisted records a listing taken off (sold, cancelled, expired or withdrawn).
func (ct *collectionTx) delisted() {
	ct.c.ListedCount--
	ct.delists = true
}

// close writes the collection's statistics and its owners table.
func (ct *collectionTx) close(ctx context.Context) error {
	tx, c := ct.tx, ct.c
	changed := make([]string, 0, len(ct.owners))
	for _, p := range sortedKeys(ct.owners) {
		if ct.owners[p] != 0 {
			changed = append(changed, p)
		}
	}
	if len(changed) > 0 {
		var rows []collectionOwner
		if err := tx.NewSelect().Model(&rows).Where("collection_id = ?", c.ID).Where("owner IN (?)", bun.In(changed)).Scan(ctx); err != nil {
			return err
		}
		had := map[string]int{}
		for _, r := range rows {
			had[r.Owner] = r.NFTs
		}
		var upsert []collectionOwner
		for _, p := range changed {
			before, after := had[p], had[p]+ct.owners[p]
			if after < 0 {
				return fmt.Errorf("nft: %s would own %d NFTs of %s", p, after, c.ID)
			}
			switch {
			case before == 0 && after > 0:
				c.Owners++
			case before > 0 && after == 0:
				c.Owners--
			}
			if after == 0 {
				if err := tx.later(ctx, tx.NewDelete().Model((*collectionOwner)(nil)).Where("collection_id = ?", c.ID).Where("owner = ?", p)); err != nil {
					return err
				}
				continue
			}
			upsert = append(upsert, collectionOwner{CollectionID: c.ID, Owner: p, NFTs: after})
		}
		if len(upsert) > 0 {
			if err := tx.later(ctx, tx.NewInsert().Model(&upsert).On("CONFLICT (collection_id, owner) DO UPDATE").Set("nfts = EXCLUDED.nfts")); err != nil {
				return err
			}
		}
	}
	switch {
	case ct.delists:
		if err := tx.flush(ctx); err != nil { // the items' deferred writes first
			return err
		}
		var floor []nftItem
		err := tx.NewSelect().Model(&floor).Column("list_price", "price_asc_key").
			Where("collection_id = ?", c.ID).Where("price_asc_key <> ?", noKey).
			Order("price_asc_key").Limit(1).Scan(ctx)
		if err != nil {
			return err
		}
		c.FloorPrice, c.FloorKey = nil, noKey
		if len(floor) > 0 {
			c.FloorPrice, c.FloorKey = floor[0].ListPrice, floor[0].PriceAscKey
		}
	case ct.lowest != nil && (c.FloorPrice == nil || ct.lowest.Cmp(*c.FloorPrice) < 0):
		c.FloorPrice, c.FloorKey = ct.lowest, ascKey(*ct.lowest)
	}
	c.VolumeDescKey = descKey(c.Volume)
	return tx.later(ctx, tx.NewUpdate().Model(c).
		Column("minted", "burned", "floor_price", "floor_key", "listed_count", "owners", "volume", "volume_desc_key").WherePK())
}

// item reads the read model of a live NFT.
func (tx *Tx) item(ctx context.Context, nftID string) (*nftItem, error) {
	it := new(nftItem)
	if err := tx.NewSelect().Model(it).Where("nft_id = ?", nftID).Scan(ctx); err != nil {
		return nil, fmt.Errorf("nft item %s: %w", nftID, err)
	}
	return it, nil
}

// items reads the read models of live NFTs, by NFT id.
func (tx *Tx) items(ctx context.Context, nftIDs []string) (map[string]*nftItem, error) {
	var rows []nftItem
	if err := tx.NewSelect().Model(&rows).Where("nft_id IN (?)", bun.In(nftIDs)).Scan(ctx); err != nil {
		return nil, err
	}
	out := make(map[string]*nftItem, len(rows))
	for i := range rows {
		out[rows[i].NFTID] = &rows[i]
	}
	for _, id := range nftIDs {
		if out[id] == nil {
			return nil, fmt.Errorf("nft item %s: %w", id, sql.ErrNoRows)
		}
	}
	return out, nil
}

// saveItem writes an item's owner, contract and listing (deferred: collectionTx.close sends
// the deferred writes before it reads the floor back). The same transaction records the
// NFT's history event ([Tx.nftEvents]): the NFT index finds the NFTs an update changed by them.
func (tx *Tx) saveItem(ctx context.Context, it *nftItem) error {
	return tx.later(ctx, tx.NewUpdate().Model(it).
		Column("owner", "contract_id", "listing_cid", "list_price", "list_currency", "list_expires", "price_asc_key", "price_desc_key").
		WherePK())
}

// nftEvents appends NFT history events.
func (tx *Tx) nftEvents(ctx context.Context, u *Update, events []nftActivity) error {
	if len(events) == 0 {
		return nil
	}
	tx.stampEvents(u, events)
	return tx.later(ctx, tx.NewInsert().Model(&events))
}

// stampEvents dates NFT history events as the update u's, and notes their NFTs for the index.
func (tx *Tx) stampEvents(u *Update, events []nftActivity) {
	for i := range events {
		events[i].UpdateID, events[i].At = u.UpdateID, At(tx.now)
		tx.nfts = append(tx.nfts, events[i].NFTID)
	}
}

func strPtr(s string) *string { return &s }

// ---- payments

// payment is who pays what in one currency: the holdings it spends and the holdings it
// creates (credits per party, then the payer's change).
type payment struct {
	Currency Instrument     `json:"currency"`
	Total    Amount         `json:"total"`
	Inputs   []spentHolding `json:"inputs"`
	Outputs  []newHolding   `json:"outputs"`
}

// preparePayment selects the payer's holdings for the credits (summed per party, zero
// amounts dropped) and adds the change. It checks at prepare what the ledger checks again at
// execute: a USDCx credit to a party that neither pays nor consents needs its preapproval.
func (s *Store) preparePayment(ctx context.Context, payer string, cur Instrument, credits []newHolding, consenting map[string]bool) (*payment, []string, error) {
	p := &payment{Currency: cur, Total: Zero}
	sums := map[string]Amount{}
	for _, c := range credits {
		if c.Amount.IsPositive() {
			sums[c.Owner] = sums[c.Owner].Add(c.Amount)
			p.Total = p.Total.Add(c.Amount)
		}
	}
	if !p.Total.IsPositive() {
		return p, nil, nil
	}
	for _, party := range sortedKeys(sums) {
		p.Outputs = append(p.Outputs, newHolding{Owner: party, Amount: sums[party]})
		if cur == USDCx && party != payer && !consenting[party] {
			if err := checkPreapproval(ctx, s.db, party, PreapprovalUSDCx, s.now()); err != nil {
				return nil, nil, err
			}
		}
	}
	hs, claimed, err := s.spendableHoldings(ctx, payer, cur)
	if err != nil {
		return nil, nil, err
	}
	picked, err := selectHoldings(hs, claimed, p.Total)
	if err != nil {
		return nil, nil, err
	}
	sum := Zero
	claims := make([]string, len(picked))
	for i, h := range picked {
		p.Inputs = append(p.Inputs, spentHolding{CID: h.CID, Amount: h.Amount})
		sum = sum.Add(h.Amount)
		claims[i] = h.CID
	}
	if change := sum.Sub(p.Total); change.IsPositive() {
		p.Outputs = append(p.Outputs, newHolding{Owner: payer, Amount: change})
	}
	return p, claims, nil
}

// add puts the payment's spends and credits into t.
func (p *payment) add(t *Transaction) {
	if p == nil {
		return
	}
	for _, in := range p.Inputs {
		t.Consume = append(t.Consume, ContractRef{templateHolding, in.CID})
	}
	for _, o := range p.Outputs {
		t.Create = append(t.Create, &Holding{Owner: o.Owner, Instrument: p.Currency, Amount: o.Amount})
	}
}

// ---- mint

type mintEffects struct {
	Minter       string     `json:"minter"`
	CollectionID string     `json:"collectionId"`
	Phase        string     `json:"phase"`
	Quantity     int        `json:"quantity"`
	Price        Amount     `json:"price"`
	Currency     Instrument `json:"currency"`
	Creator      string     `json:"creator"`
	Payment      *payment   `json:"payment"`
}

// mintCheck refuses a mint of quantity by party in phase ph of c that the phase's rules or
// the supplies do not allow; minted is what the party has minted in the phase. Limits
// reached are conflict at prepare and stale at execute (the ledger moved on).
func mintCheck(c *Collection, ph *MintPhase, allowed bool, minted, quantity int, limitCode Code) error {
	if ph.AllowList && !allowed {
		return Errorf(CodeNotAllowlisted, "this party is not on the allow-list of phase %q of %s", ph.Name, c.Slug)
	}
	if minted+quantity > ph.PerPartyLimit {
		return Errorf(limitCode, "phase %q allows %d per party; this party has minted %d", ph.Name, ph.PerPartyLimit, minted)
	}
	if ph.Supply != nil && ph.Minted+quantity > *ph.Supply {
		return Errorf(limitCode, "phase %q has %d of its %d left", ph.Name, *ph.Supply-ph.Minted, *ph.Supply)
	}
	if c.Minted+quantity > c.Supply {
		return Errorf(limitCode, "collection %s has %d of its %d left to mint", c.Slug, c.Supply-c.Minted, c.Supply)
	}
	return nil
}

// mintablePhase is a collection's phase active now, with the collection and what a mint
// check needs of one party in the phase.
type mintablePhase struct {
	MintPhase `bun:",extend"`

	Collection  *Collection `bun:"rel:belongs-to,join:collection_id=collection_id"`
	PartyMinted int         `bun:"party_minted,scanonly"` // what the party minted in the phase
	Allowed     bool        `bun:"allowed,scanonly"`      // the party is on the phase's allow-list
}

// mintablePhase reads the collection named ref (its id or slug) as stored now, its phase
// active at now (the latest started when several are) and the party's count and place in
// it, in one statement. A collection without an active phase is conflict.
func (s *Store) mintablePhase(ctx context.Context, ref, party string, now time.Time) (*mintablePhase, error) {
	var ph []mintablePhase
	err := s.db.NewSelect().Model(&ph).ColumnExpr("mint_phase.*").Relation("Collection").
		ColumnExpr("COALESCE((SELECT pm.minted FROM phase_mints AS pm WHERE pm.collection_id = mint_phase.collection_id AND pm.phase = mint_phase.name AND pm.party_id = ?), 0) AS party_minted", party).
		ColumnExpr("EXISTS (SELECT 1 FROM phase_allow AS pa WHERE pa.collection_id = mint_phase.collection_id AND pa.phase = mint_phase.name AND pa.party_id = ?) AS allowed", party).
		Where("collection.collection_id = ? OR collection.slug = ?", ref, ref).
		Where("mint_phase.start_at <= ?", At(now)).Where("mint_phase.end_at > ?", At(now)).
		Order("mint_phase.start_at DESC").Limit(1).Scan(ctx)
	if err != nil {
		return nil, err
	}
	if len(ph) == 0 { // no collection, or none minting now: which one, the answer says
		c, err := s.collectionByIDOrSlug(ctx, ref)
		if err != nil {
			return nil, err
		}
		return nil, Errorf(CodeConflict, "collection %s has no active mint phase now", c.Slug)
	}
	return &ph[0], nil
}

// PrepareMint prepares a mint of quantity NFTs from the collection's active phase, paying
// the phase price to the creator. Serials are assigned at execute, in mint order. It reads
// the collection as stored now (not as cached) with the phase and the minter's count in it,
// under no lock: the execute checks them again under the collection's.
func (s *Store) PrepareMint(ctx context.Context, minter, collectionID string, quantity int) (*Prepared, error) {
	if quantity < 1 || quantity > MaxBatch {
		return nil, Errorf(CodeInvalidRequest, "quantity must be 1 to %d", MaxBatch)
	}
	ph, err := s.mintablePhase(ctx, collectionID, minter, s.now())
	if err != nil {
		return nil, err
	}
	c := ph.Collection
	if err := mintCheck(c, &ph.MintPhase, ph.Allowed, ph.PartyMinted, quantity, CodeConflict); err != nil {
		return nil, err
	}
	total := ph.Price.MulFloor(decimal.NewFromInt(int64(quantity)), c.Currency.Decimals())
	pay, claims, err := s.preparePayment(ctx, minter, c.Currency, []newHolding{{Owner: c.Creator, Amount: total}}, nil)
	if err != nil {
		return nil, err
	}
	e := mintEffects{Minter: minter, CollectionID: c.ID, Phase: ph.Name, Quantity: quantity, Price: ph.Price, Currency: c.Currency, Creator: c.Creator, Payment: pay}
	summary := map[string]any{
		"action":     fmt.Sprintf("mint %d NFT(s) of %s in phase %q", quantity, c.Name, ph.Name),
		"collection": c.ID, "phase": ph.Name, "quantity": quantity, "price": ph.Price, "total": total, "currency": c.Currency, "paidTo": c.Creator,
	}
	return s.prepareAs(ctx, KindNFTMint, minter, e, summary, claims)
}

// MintResult is what a mint execute adds to the receipt.
type MintResult struct {
	ContractIDs []string `json:"contractIds"`
}

// mintedRows is what mints write to the NFT read model: the items they mint, the items'
// traits and their history events, gathered for all the mints of a batch, so each table gets
// one INSERT.
type mintedRows struct {
	items  []nftItem
	traits []nftTrait
	events []nftActivity
}

// add gathers the rows of the NFTs nfts, minted from items at price as the update u.
func (m *mintedRows) add(tx *Tx, u *Update, c *Collection, items []collectionItem, nfts []*NFT, price Amount) error {
	events := make([]nftActivity, len(items))
	for i, it := range items {
		m.items = append(m.items, nftItem{NFTID: nfts[i].NFTID, CollectionID: c.ID, Serial: it.Serial, Name: it.Name, Image: it.Image, Traits: it.Traits,
			Owner: nfts[i].Owner, ContractID: nfts[i].CID, PriceAscKey: noKey, PriceDescKey: noKey})
		var ts []Trait
		if err := json.Unmarshal([]byte(it.Traits), &ts); err != nil {
			return fmt.Errorf("nft: traits of %s #%d: %w", c.ID, it.Serial, err)
		}
		for _, tr := range ts {
			m.traits = append(m.traits, nftTrait{CollectionID: c.ID, Type: tr.Type, Value: tr.Value, Serial: it.Serial})
		}
		p, cur := price, c.Currency
		events[i] = nftActivity{NFTID: nfts[i].NFTID, CollectionID: c.ID, Kind: EventMinted, To: strPtr(nfts[i].Owner), Price: &p, Currency: &cur}
	}
	tx.stampEvents(u, events)
	m.events = append(m.events, events...)
	return nil
}

// writeMinted writes the gathered rows, one INSERT per table.
func (tx *Tx) writeMinted(ctx context.Context, m *mintedRows) error {
	if len(m.items) == 0 {
		return nil
	}
	if err := tx.later(ctx, tx.NewInsert().Model(&m.items)); err != nil {
		return fmt.Errorf("nft: minted items: %w", err)
	}
	if len(m.traits) > 0 {
		if err := tx.later(ctx, tx.NewInsert().Model(&m.traits)); err != nil {
			return fmt.Errorf("nft: minted traits: %w", err)
		}
	}
	if err := tx.later(ctx, tx.NewInsert().Model(&m.events)); err != nil {
		return fmt.Errorf("nft: minted events: %w", err)
	}
	into := tx.s.nftIndex.collection(m.items[0].CollectionID, false)
	tx.minted = append(tx.minted, mintedItems{into: into, items: m.items})
	return nil
}

// ---- list and cancel

// ListingTerms is one NFT a seller offers, at a price, until an optional expiry.
type ListingTerms struct {
	ContractID string
	Price      string // a decimal of the collection's currency
	ExpiresAt  *time.Time
}

type listingEffect struct {
	NFTCID       string     `json:"nftCid"`
	NFTID        string     `json:"nftId"`
	CollectionID string     `json:"collectionId"`
	Price        Amount     `json:"price"`
	Currency     Instrument `json:"currency"`
	ExpiresAt    *int64     `json:"expiresAt,omitempty"`
	Withdraws    string     `json:"withdrawsListing,omitempty"` // the NFT's expired listing
}

type listEffects struct {
	Seller   string          `json:"seller"`
	Listings []listingEffect `json:"listings"`
}

// liveNFT returns the active NFT contract cid, which must be the owner's.
func (s *Store) liveNFT(ctx context.Context, cid, owner string) (*NFT, error) {
	n := new(NFT)
	err := s.db.NewSelect().Model(n).Where("cid = ?", cid).Scan(ctx)
	if isNoRows(err) {
		return nil, Errorf(CodeNotFound, "no NFT contract %s", truncate(cid, 80))
	}
	if err != nil {
		return nil, err
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
				t.Consume = append(t.Consume, ContractRef{templateListing, old.CID})
				cts[le.CollectionID].delisted()
				p, cur := old.Price, old.Currency
				events = append(events, nftActivity{NFTID: le.NFTID, CollectionID: le.CollectionID, Kind: EventDelisted, From: strPtr(e.Seller), Price: &p, Currency: &cur})
			}
		}
	}
	for i, le := range e.Listings {
		l := &Listing{Seller: e.Seller, NFTCID: le.NFTCID, NFTID: le.NFTID, CollectionID: le.CollectionID, Price: le.Price, Currency: le.Currency}
		if le.ExpiresAt != nil {
			at := At(time.Unix(*le.ExpiresAt, 0))
			if !tx.now.Before(at.Time) {
				return nil, Errorf(CodeStale, "the listing of %s expired before it was executed; prepare it again", le.NFTCID)
			}
			l.ExpiresAt = &at
		}
		listings[i] = l
		t.Create = append(t.Create, l)
	}
	if err := tx.s.ledger.Commit(ctx, tx, u, t); err != nil {
		return nil, err
	}
	res := ListResult{}
	nftIDs := make([]string, len(listings))
	for i, l := range listings {
		nftIDs[i] = l.NFTID
	}
	items, err := tx.items(ctx, nftIDs)
	if err != nil {
		return nil, err
	}
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

type listingRef struct {
	CID          string `json:"cid"`
	NFTID        string `json:"nftId"`
	CollectionID string `json:"collectionId"`
}

type cancelEffects struct {
	Seller   string       `json:"seller"`
	Listings []listingRef `json:"listings"`
}

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
		t.Consume = append(t.Consume, ContractRef{templateListing, l.CID})
	}
	if err := tx.s.ledger.Commit(ctx, tx, u, t); err != nil {
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
	if err != nil || len(due) == 0 {
		return 0, err
	}
	op, err := s.OperatorParty(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, l := range due {
		err := s.commit(ctx, KindListingExpired, op, func(tx *Tx, u *Update) error {
			return tx.withdrawListings(ctx, u, []listingRef{{CID: l.CID, NFTID: l.NFTID, CollectionID: l.CollectionID}}, nil)
		})
		switch ErrorCode(err) {
		case "":
		case CodeStale: // sold or cancelled meanwhile
			continue
		default:
			if err != nil {
				return n, err
			}
		}
		n++
	}
	return n, nil
}

// ---- buy and sweep

// Share is what one party gets of a sale.
type Share struct {
	Party  *string `json:"party"`
	Amount Amount  `json:"amount"`
}

// Settlement is how a price is split: the marketplace fee to the operator, the royalty to
// the creator, the rest to the seller. Each share is rounded down to the currency's
// precision, and the three add up to the price exactly.
type Settlement struct {
	Price   Amount `json:"price"`
	Fee     Share  `json:"fee"`
	Royalty Share  `json:"royalty"`
	Seller  Share  `json:"seller"`
}

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

type purchase struct {
	Listing      string     `json:"listing"`
	NFTCID       string     `json:"nftCid"`
	NFTID        string     `json:"nftId"`
	CollectionID string     `json:"collectionId"`
	Seller       string     `json:"seller"`
	Price        Amount     `json:"price"`
	Settlement   Settlement `json:"settlement"`
}

type buyEffects struct {
	Buyer        string     `json:"buyer"`
	CollectionID string     `json:"collectionId"`
	Purchases    []purchase `json:"purchases"`
	Settlement   Settlement `json:"settlement"`
	MaxTotal     *Amount    `json:"maxTotal,omitempty"`
	Payment      *payment   `json:"payment"`
}

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
	e := buyEffects{Buyer: buyer, CollectionID: c.ID, MaxTotal: maxTotal}
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
		if it.ListExpires != nil && !tx.now.Before(it.ListExpires.Time) {
			return nil, Errorf(CodeStale, "listing %s expired at %s", p.Listing, it.ListExpires.UTC().Format(time.RFC3339))
		}
		items[i] = it
		t.Consume = append(t.Consume, ContractRef{templateListing, p.Listing}, ContractRef{templateNFT, p.NFTCID})
		nfts[i] = &NFT{NFTID: p.NFTID, CollectionID: p.CollectionID, Serial: it.Serial, Owner: e.Buyer}
		t.Create = append(t.Create, nfts[i])
	}
	e.Payment.add(t)
	if err := tx.s.ledger.Commit(ctx, tx, u, t); err != nil {
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
		ct.c.Volume = ct.c.Volume.Add(p.Price)
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

// ---- transfer and burn

type moveEffects struct {
	Owner        string `json:"owner"`
	Receiver     string `json:"receiver,omitempty"` // empty for a burn
	NFTCID       string `json:"nftCid"`
	NFTID        string `json:"nftId"`
	CollectionID string `json:"collectionId"`
	Listing      string `json:"withdrawsListing,omitempty"`
}

// PrepareTransfer prepares giving one of the owner's NFTs to receiver, withdrawing its
// listing if it has one. The receiver needs an active NFT preapproval.
func (s *Store) PrepareTransfer(ctx context.Context, owner, contractID, receiver string) (*Prepared, error) {
	if err := checkPartyID("receiver", receiver); err != nil {
		return nil, err
	}
	if receiver == owner {
		return nil, Errorf(CodeInvalidRequest, "the receiver owns the NFT already")
	}
	if _, err := s.Party(ctx, receiver); err != nil {
		return nil, err
	}
	return s.prepareMove(ctx, KindNFTTransfer, owner, contractID, receiver)
}

// PrepareBurn prepares destroying one of the owner's NFTs for good, withdrawing its listing
// if it has one.
func (s *Store) PrepareBurn(ctx context.Context, owner, contractID string) (*Prepared, error) {
	return s.prepareMove(ctx, KindNFTBurn, owner, contractID, "")
}

func (s *Store) prepareMove(ctx context.Context, kind, owner, contractID, receiver string) (*Prepared, error) {
	n, err := s.liveNFT(ctx, contractID, owner)
	if err != nil {
		return nil, err
	}
	if receiver != "" {
		if err := checkPreapproval(ctx, s.db, receiver, PreapprovalNFT, s.now()); err != nil {
			return nil, err
		}
	}
	e := moveEffects{Owner: owner, Receiver: receiver, NFTCID: n.CID, NFTID: n.NFTID, CollectionID: n.CollectionID}
	claims := []string{n.CID}
	if l, err := activeListingOf(ctx, s.db, n.CID); err != nil {
		return nil, err
	} else if l != nil {
		e.Listing = l.CID
		claims = append(claims, l.CID)
	}
	action := fmt.Sprintf("transfer NFT %s to %s", n.NFTID, receiver)
	if receiver == "" {
		action = fmt.Sprintf("burn NFT %s for good", n.NFTID)
	}
	summary := map[string]any{"action": action, "owner": owner, "nft": n.CID}
	if receiver != "" {
		summary["receiver"] = receiver
	}
	if e.Listing != "" {
		summary["withdrawsListing"] = e.Listing
	}
	return s.prepareAs(ctx, kind, owner, e, summary, claims)
}

// TransferResult is what a transfer execute adds to the receipt.
type TransferResult struct {
	ContractID string `json:"contractId"`
}

func applyMove(ctx context.Context, tx *Tx, u *Update, e *moveEffects) (any, error) {
	ct, err := tx.lockCollection(ctx, e.CollectionID)
	if err != nil {
		return nil, err
	}
	it, err := tx.item(ctx, e.NFTID)
	if err != nil {
		if isNoRows(err) {
			return nil, Errorf(CodeStale, "NFT %s was burned since this transaction was prepared", e.NFTID)
		}
		return nil, err
	}
	if it.ListingCID != nil && *it.ListingCID != e.Listing {
		// Listed since the prepare: prepared again, the transaction withdraws that listing.
		return nil, Errorf(CodeStale, "NFT %s was listed (listing %s) since this transaction was prepared; prepare it again", e.NFTID, *it.ListingCID)
	}
	t := &Transaction{Consume: []ContractRef{{templateNFT, e.NFTCID}}, BurnAssets: e.Receiver == ""}
	if e.Listing != "" {
		t.Consume = append(t.Consume, ContractRef{templateListing, e.Listing})
	}
	var next *NFT
	if e.Receiver != "" {
		next = &NFT{NFTID: e.NFTID, CollectionID: e.CollectionID, Serial: it.Serial, Owner: e.Receiver}
		t.Create = []Contract{next}
	}
	if err := tx.s.ledger.Commit(ctx, tx, u, t); err != nil {
		return nil, err
	}
	if e.Listing != "" {
		ct.delisted()
	}
	ev := nftActivity{NFTID: e.NFTID, CollectionID: e.CollectionID, From: strPtr(e.Owner)}
	var res any
	if next != nil {
		it.Owner, it.ContractID = e.Receiver, next.CID
		it.setListing(nil)
		if err := tx.saveItem(ctx, it); err != nil {
			return nil, err
		}
		ct.move(e.Owner, e.Receiver)
		ev.Kind, ev.To = EventTransferred, strPtr(e.Receiver)
		res = TransferResult{ContractID: next.CID}
	} else {
		if _, err := tx.NewDelete().Model(it).WherePK().Exec(ctx); err != nil {
			return nil, err
		}
		if err := tx.later(ctx, tx.NewDelete().Model((*nftTrait)(nil)).Where("collection_id = ?", e.CollectionID).Where("serial = ?", it.Serial)); err != nil {
			return nil, err
		}
		ct.move(e.Owner, "")
		ct.c.Burned++
		ev.Kind = EventBurned
	}
	if err := tx.nftEvents(ctx, u, []nftActivity{ev}); err != nil {
		return nil, err
	}
	return res, ct.close(ctx)
}
