package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"marketd/store/ledger"
	"marketd/store/wallet"
)

// Offers are the buy side of the NFT market: a party's funded bid for NFTs of one
// collection, in the collection's currency. An item offer names one NFT (by collection and
// serial, so it outlives the NFT's changes of owner), a collection offer takes any NFT of the
// collection, a trait offer any NFT whose traits match (values of one type OR-ed, types
// AND-ed, as the NFT filter). An offer is a ledger contract that holds price × remaining of
// the maker's currency, so an open offer can always be filled: an accept pays from it, a
// cancel or the expiry returns what is left. An accept that leaves units open consumes the
// offer's version and creates the next with the rest; OfferID names the offer across them.
//
// The book never crosses: an offer at or above the price of an active listing it matches is
// refused (crosses_listing: buy that instead), and so is a listing at or below the best offer
// its NFT matches (crosses_offer: accept that instead), at prepare and again at execute, where
// the collection's lock holds the book still. A party's own orders never cross each other.

const templateOffer = "nft_offers"

// Offer kinds.
const (
	OfferItem       = wallet.OfferItem
	OfferCollection = wallet.OfferCollection
	OfferTrait      = wallet.OfferTrait
)

// Offer limits.
const (
	MaxOfferQuantity = wallet.MaxOfferQuantity // units one collection or trait offer may ask for
	MaxOfferLifetime = wallet.MaxOfferLifetime // the furthest expiresAt accepted
	// maxOfferTraitValues bounds a trait offer's values over all its types, so its signed
	// transaction, kept whole in the transparency log, stays far under an entry's 64 KiB.
	maxOfferTraitValues = 32
)

// Offer is one version of an offer contract.
type Offer struct {
	bun.BaseModel `bun:"table:nft_offers"`
	Lifecycle

	OfferID      string     `bun:"offer_id"`
	Maker        string     `bun:"maker"`
	Kind         string     `bun:"kind"`
	CollectionID string     `bun:"collection_id"`
	Serial       *int       `bun:"serial"`
	NFTID        *string    `bun:"nft_id"`
	Traits       *string    `bun:"traits"` // canonical JSON of []TraitMatch, for a trait offer
	Price        Amount     `bun:"price"`
	PriceKey     string     `bun:"price_key"`
	Quantity     int        `bun:"quantity"`
	Remaining    int        `bun:"remaining"`
	Instrument   Instrument `bun:"instrument"`
	Amount       Amount     `bun:"amount"` // price × remaining: what it locks
	PostedAt     Timestamp  `bun:"posted_at"`
	ExpiresAt    Timestamp  `bun:"expires_at"`
}

func (*Offer) Template() string               { return templateOffer }
func (o *Offer) Controller() string           { return o.Maker }
func (o *Offer) Holds() (Instrument, Amount)  { return o.Instrument, o.Amount }
func (o *Offer) expiredAt(now time.Time) bool { return !now.Before(o.ExpiresAt.Time) }

// criteria are a trait offer's criteria (none for another kind).
func (o *Offer) criteria() []TraitMatch {
	var m []TraitMatch
	if o.Traits != nil {
		_ = json.Unmarshal([]byte(*o.Traits), &m)
	}
	return m
}

// An offer holds its maker's funds and is its maker's consent: accepting it credits the NFTs
// to the maker without a preapproval.
func init() {
	ledger.RegisterTemplate(templateOffer, ledger.TemplateSpec{Owner: "maker", Valued: true, Offer: true})
}

// TraitMatch is one trait type of a trait offer and the values it takes.
type TraitMatch = wallet.TraitMatch

// matchesTraits tells whether an NFT with traits meets every criterion.
func matchesTraits(criteria []TraitMatch, traits []Trait) bool {
	for _, c := range criteria {
		ok := false
		for _, t := range traits {
			if t.Type == c.Type && slices.Contains(c.Values, t.Value) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// matches tells whether the offer takes the NFT nftID with traits.
func (o *Offer) matches(nftID string, traits []Trait) bool {
	switch o.Kind {
	case OfferItem:
		return o.NFTID != nil && *o.NFTID == nftID
	case OfferTrait:
		return matchesTraits(o.criteria(), traits)
	}
	return true
}

// OfferTerms is what a party offers.
type OfferTerms struct {
	CollectionID string // id or slug
	Serial       *int
	ContractID   string // an NFT contract, resolved to its collection and serial
	Traits       []TraitMatch
	Price        string
	Quantity     *int
	ExpiresAt    int64
}

type offerEffects = wallet.OfferEffects

// offerBatchKey batches the offers of one collection: they all lock it.
func offerBatchKey(e *offerEffects) batchKey { return batchKey{row: "collection/" + e.CollectionID} }

// offerOf is the contract the effects e create (its ids set by the ledger).
func offerOf(e *offerEffects, now time.Time) *Offer {
	o := &Offer{
		Maker: e.Maker, Kind: e.Kind, CollectionID: e.CollectionID, Serial: e.Serial, Price: e.Price, PriceKey: descKey(e.Price),
		Quantity: e.Quantity, Remaining: e.Quantity, Instrument: e.Lock.Instrument, Amount: e.Lock.Amount,
		PostedAt: At(now), ExpiresAt: At(time.Unix(e.ExpiresAt, 0)),
	}
	if e.NFTID != "" {
		o.NFTID = strPtr(e.NFTID)
	}
	if len(e.Traits) > 0 {
		b, _ := json.Marshal(e.Traits)
		o.Traits = strPtr(string(b))
	}
	return o
}

// PrepareOffer prepares an offer, which locks price × quantity of the maker's holdings.
func (s *Store) PrepareOffer(ctx context.Context, maker string, t OfferTerms) (*Prepared, error) {
	e, _, err := s.offerEffects(ctx, maker, t, nil)
	if err != nil {
		return nil, err
	}
	o := offerOf(e, s.now())
	if err := crossedByListing(ctx, s.db, s.now(), o); err != nil {
		return nil, err
	}
	funds, claims, err := s.prepareLock(ctx, maker, e.Lock.Instrument, e.Lock.Amount)
	if err != nil {
		return nil, err
	}
	e.Lock = *funds
	what := map[string]string{OfferItem: "NFT #" + itoa(deref(e.Serial)), OfferCollection: "any NFT", OfferTrait: "NFTs with the traits"}[e.Kind]
	summary := map[string]any{
		"action": fmt.Sprintf("offer %s %s each for %d %s of %s until %s", e.Price, e.Lock.Instrument, e.Quantity, what, e.CollectionID, time.Unix(e.ExpiresAt, 0).UTC().Format(time.RFC3339)),
		"maker":  maker, "kind": e.Kind, "collectionId": e.CollectionID, "price": e.Price, "quantity": e.Quantity, "expiresAt": e.ExpiresAt,
		"locks": map[string]any{"instrument": e.Lock.Instrument, "amount": e.Lock.Amount}, "change": e.Lock.Change,
	}
	if e.Traits != nil {
		summary["traits"] = e.Traits
	}
	return s.prepareAs(ctx, KindNFTOffer, maker, e, summary, claims)
}

// deref is what p points to, or T's zero value for nil.
func deref[T any](p *T) T {
	var v T
	if p != nil {
		v = *p
	}
	return v
}

// offerEffects checks an offer's terms and works out what it asks for; the lock's inputs
// are left to the caller. It returns the offer's collection too; known, when not nil, is a
// collection read already, which a term naming it by id or slug takes as it is.
func (s *Store) offerEffects(ctx context.Context, maker string, t OfferTerms, known *Collection) (*offerEffects, *Collection, error) {
	named := 0
	for _, set := range []bool{t.Serial != nil, t.ContractID != "", t.Traits != nil} {
		if set {
			named++
		}
	}
	if named > 1 {
		return nil, nil, Errorf(CodeInvalidRequest, "name at most one of serial, contractId and traits")
	}
	if t.CollectionID == "" && t.ContractID == "" {
		return nil, nil, Errorf(CodeInvalidRequest, "collectionId is required")
	}
	e := &offerEffects{Maker: maker, Kind: OfferCollection, Quantity: 1}
	ref := t.CollectionID
	if t.ContractID != "" {
		n := new(NFT)
		err := s.db.NewSelect().Model(n).Where("cid = ?", t.ContractID).Scan(ctx)
		if isNoRows(err) {
			return nil, nil, Errorf(CodeNotFound, "no NFT contract %s", truncate(t.ContractID, 80))
		}
		if err != nil {
			return nil, nil, err
		}
		if t.CollectionID != "" && t.CollectionID != n.CollectionID {
			c, err := s.collectionByIDOrSlug(ctx, t.CollectionID)
			if err != nil {
				return nil, nil, err
			}
			if c.ID != n.CollectionID {
				return nil, nil, Errorf(CodeInvalidRequest, "NFT contract %s is not of collection %s", t.ContractID, truncate(t.CollectionID, 80))
			}
		}
		ref, t.Serial = n.CollectionID, &n.Serial
	}
	c, err := known, error(nil)
	if c == nil || (ref != c.ID && ref != c.Slug) {
		if c, err = s.collectionByIDOrSlug(ctx, ref); err != nil {
			return nil, nil, err
		}
	}
	e.CollectionID, e.Slug = c.ID, c.Slug
	switch {
	case t.Serial != nil:
		e.Kind, e.Serial, e.NFTID = OfferItem, t.Serial, nftIDOf(c.ID, *t.Serial)
		it, err := s.liveItem(ctx, e.NFTID)
		if err != nil {
			return nil, nil, err
		}
		if it.Owner == maker {
			return nil, nil, Errorf(CodeConflict, "NFT %s is the maker's own", e.NFTID)
		}
	case t.Traits != nil:
		e.Kind = OfferTrait
		if e.Traits, err = s.traitCriteria(ctx, c.ID, t.Traits); err != nil {
			return nil, nil, err
		}
	}
	if t.Quantity != nil {
		e.Quantity = *t.Quantity
	}
	switch {
	case e.Kind == OfferItem && e.Quantity != 1:
		return nil, nil, Errorf(CodeInvalidRequest, "an item offer's quantity is 1")
	case e.Quantity < 1 || e.Quantity > MaxOfferQuantity:
		return nil, nil, Errorf(CodeInvalidRequest, "quantity must be 1 to %d", MaxOfferQuantity)
	}
	if t.Price == "" {
		return nil, nil, Errorf(CodeInvalidRequest, "price is required")
	}
	if e.Price, err = ParseAmount(t.Price, c.Currency); err != nil {
		return nil, nil, fieldError("price", err)
	}
	if e.Price.Cmp(MustAmount(maxListPrice)) > 0 {
		return nil, nil, Errorf(CodeInvalidRequest, "an offer's price is at most %s", maxListPrice)
	}
	if err := s.offerDeadline(t.ExpiresAt); err != nil {
		return nil, nil, err
	}
	e.ExpiresAt = t.ExpiresAt
	lock := times(e.Price, e.Quantity)
	if err := checkAmountBounds(lock); err != nil {
		return nil, nil, err
	}
	e.Lock = lockFunds{Instrument: c.Currency, Amount: lock, Change: Zero}
	return e, c, nil
}

// offerDeadline checks an offer's expiry: required, in the future, at most 30 days ahead.
func (s *Store) offerDeadline(at int64) error {
	if at == 0 {
		return Errorf(CodeInvalidRequest, "expiresAt is required")
	}
	return s.deadline("expiresAt", at, MaxOfferLifetime)
}

// traitCriteria checks a trait offer's criteria against the collection's trait types and
// returns them in canonical order: types sorted, each type's values sorted and distinct.
func (s *Store) traitCriteria(ctx context.Context, collectionID string, in []TraitMatch) ([]TraitMatch, error) {
	if len(in) == 0 || len(in) > maxTraitsPerItem {
		return nil, Errorf(CodeInvalidRequest, "traits names 1 to %d trait types", maxTraitsPerItem)
	}
	values := 0
	for _, m := range in {
		values += len(m.Values)
	}
	if values > maxOfferTraitValues {
		return nil, Errorf(CodeInvalidRequest, "a trait offer names at most %d values in all", maxOfferTraitValues)
	}
	byType := map[string][]string{}
	for _, m := range in {
		if m.Type == "" || len(m.Type) > maxTraitText {
			return nil, Errorf(CodeInvalidRequest, "a trait type is 1 to %d characters", maxTraitText)
		}
		if len(m.Values) == 0 || len(m.Values) > maxTraitsPerItem {
			return nil, Errorf(CodeInvalidRequest, "trait %q takes 1 to %d values", truncate(m.Type, 80), maxTraitsPerItem)
		}
		if _, dup := byType[m.Type]; dup {
			return nil, Errorf(CodeInvalidRequest, "trait type %q is named twice", truncate(m.Type, 80))
		}
		for _, v := range m.Values {
			if v == "" || len(v) > maxTraitText {
				return nil, Errorf(CodeInvalidRequest, "a trait value is 1 to %d characters", maxTraitText)
			}
		}
		byType[m.Type] = slices.Compact(slices.Sorted(slices.Values(m.Values)))
	}
	out := make([]TraitMatch, 0, len(byType))
	for _, typ := range sortedKeys(byType) {
		some, err := s.db.NewSelect().Model((*nftTrait)(nil)).Where("collection_id = ?", collectionID).Where("trait_type = ?", typ).Exists(ctx)
		if err != nil {
			return nil, err
		}
		if !some {
			return nil, Errorf(CodeInvalidRequest, "no NFT of the collection has a trait of type %q", truncate(typ, 80))
		}
		out = append(out, TraitMatch{Type: typ, Values: byType[typ]})
	}
	return out, nil
}

// OfferResult is what an offer execute adds to the receipt.
type OfferResult struct {
	CID string `json:"cid"`
}

func applyOffer(ctx context.Context, tx *Tx, u *Update, e *offerEffects) (any, error) {
	if !tx.Now().Before(time.Unix(e.ExpiresAt, 0)) {
		return nil, Errorf(CodeStale, "the offer expired before it was executed; prepare it again")
	}
	ct, err := tx.lockCollection(ctx, e.CollectionID)
	if err != nil {
		return nil, err
	}
	if e.Slug != "" && e.Slug != ct.c.Slug {
		return nil, Errorf(CodeStale, "the offer was prepared for collection %q, not %q", e.Slug, ct.c.Slug)
	}
	o := offerOf(e, tx.Now())
	o.OfferID = contractID(u.UpdateID, 0) // the first contract the update creates: o's cid
	if err := tx.Flush(ctx); err != nil { // the batch's earlier listings and sales first
		return nil, err
	}
	if err := crossedByListing(ctx, tx, tx.Now(), o); err != nil {
		return nil, err
	}
	t := &Transaction{Create: []Contract{o}}
	addLock(t, &e.Lock, e.Maker)
	if err := tx.s.ledger.Commit(ctx, tx.Tx, u, t); err != nil {
		return nil, err
	}
	if o.CID != o.OfferID {
		return nil, fmt.Errorf("nft: offer id %s is not its first cid %s", o.OfferID, o.CID)
	}
	if err := tx.nftEvents(ctx, u, []nftActivity{o.event(EventOffer)}); err != nil {
		return nil, err
	}
	ct.offersChanged(o)
	return OfferResult{CID: o.OfferID}, ct.close(ctx)
}

// crossedByListing refuses offer o when an active listing of another party that it matches
// asks o's price or less: crosses_listing, naming the cheapest such listing.
func crossedByListing(ctx context.Context, db bun.IDB, now time.Time, o *Offer) error {
	var items []nftItem
	listed := func() *bun.SelectQuery { // the listings of others at or under the offer's price
		sel := db.NewSelect().Model(&items).Column("nft_id", "serial", "traits", "listing_cid", "list_price").
			Where("collection_id = ?", o.CollectionID).Where("price_asc_key <> ?", noKey).Where("price_asc_key <= ?", ascKey(o.Price)).
			Where("owner <> ?", o.Maker).Where("(list_expires IS NULL OR list_expires > ?)", At(now)).Order("price_asc_key", "serial").Limit(1)
		if o.Kind == OfferItem {
			sel = sel.Where("nft_id = ?", *o.NFTID)
		}
		return sel
	}
	sel := listed()
	if criteria := o.criteria(); len(criteria) > 0 {
		// The NFTs with the traits may be many, the listings at or under the price none (an
		// offer under the floor): look for any in the price index alone first.
		if err := sel.Scan(ctx); err != nil || len(items) == 0 {
			return err
		}
		items, sel = nil, listed()
		for _, m := range criteria {
			sel = sel.Where("serial IN (?)", db.NewSelect().Model((*nftTrait)(nil)).Column("serial").
				Where("collection_id = ?", o.CollectionID).Where("trait_type = ?", m.Type).Where("trait_value IN (?)", bun.In(m.Values)))
		}
	}
	if err := sel.Scan(ctx); err != nil || len(items) == 0 {
		return err
	}
	l := items[0]
	return &Error{
		Code:    CodeCrossesListing,
		Message: fmt.Sprintf("listing %s asks %s, no more than the offer's %s: buy it instead", *l.ListingCID, l.ListPrice, o.Price),
		Members: map[string]any{"crossing": Crossing{CID: *l.ListingCID, Price: *l.ListPrice}},
	}
}

// Crossing is the order a crossed order should take instead: a listing to buy, or an offer
// to accept.
type Crossing struct {
	CID   string `json:"cid"`
	Price Amount `json:"price"`
}

// crossedByOffer refuses listing the NFT it at price when an open offer of another party than
// seller that the NFT matches bids price or more: crosses_offer, naming the best such offer.
func crossedByOffer(ctx context.Context, db bun.IDB, now time.Time, it *nftItem, seller string, price Amount) error {
	best, err := bestOfferFor(ctx, db, now, it.CollectionID, it.NFTID, traitsOfItem(it), seller, descKey(price))
	if err != nil || best == nil {
		return err
	}
	return &Error{
		Code:    CodeCrossesOffer,
		Message: fmt.Sprintf("offer %s bids %s, at least the listing's %s: accept it instead", best.OfferID, best.Price, price),
		Members: map[string]any{"crossing": Crossing{CID: best.OfferID, Price: best.Price}},
	}
}

// bestOfferFor returns the best open offer of another party than owner that the NFT nftID
// with traits can be accepted into, among those priced at least atKey's price ("" for any).
func bestOfferFor(ctx context.Context, db bun.IDB, now time.Time, collectionID, nftID string, traits []Trait, owner, atKey string) (*Offer, error) {
	var from *offerKey
	for {
		var os []Offer
		sel := db.NewSelect().Model(&os).Where("collection_id = ?", collectionID).Where("consumed_update IS NULL").
			Where("expires_at > ?", At(now)).Where("maker <> ?", owner).
			Where("(kind <> ? OR nft_id = ?)", OfferItem, nftID)
		if atKey != "" {
			sel = sel.Where("price_key <= ?", atKey)
		}
		if from != nil {
			sel = sel.Where("(price_key, offer_id) > (?, ?)", from.K, from.ID)
		}
		if err := sel.Order("price_key", "offer_id").Limit(offerScan).Scan(ctx); err != nil {
			return nil, err
		}
		for i := range os {
			if os[i].matches(nftID, traits) {
				return &os[i], nil
			}
		}
		if len(os) < offerScan {
			return nil, nil
		}
		last := os[len(os)-1]
		from = &offerKey{K: last.PriceKey, ID: last.OfferID}
	}
}

// offerScan is how many offers a read that filters them in Go reads at a time.
const offerScan = 200

// offerKey is an offer's keyset position: best price first, then its id.
type offerKey struct {
	K  string `json:"k"`
	ID string `json:"i"`
}

// event is the collection's activity event of kind about offer o: by its maker, at its price.
func (o *Offer) event(kind string) nftActivity {
	price, cur := o.Price, o.Instrument
	return nftActivity{CollectionID: o.CollectionID, Kind: kind, From: strPtr(o.Maker), Price: &price, Currency: &cur, OfferCID: strPtr(o.OfferID)}
}

// ---- cancel and expiry

type offerRef = wallet.OfferRef

type offerCancelEffects = wallet.OfferCancelEffects

// PrepareOfferCancel prepares withdrawing 1 to MaxBatch of the maker's open offers; execute
// returns what each still locks then.
func (s *Store) PrepareOfferCancel(ctx context.Context, maker string, cids []string) (*Prepared, error) {
	if len(cids) == 0 || len(cids) > MaxBatch {
		return nil, Errorf(CodeInvalidRequest, "cancel 1 to %d offers at once", MaxBatch)
	}
	if len(slices.Compact(slices.Sorted(slices.Values(cids)))) != len(cids) {
		return nil, Errorf(CodeInvalidRequest, "an offer is named twice")
	}
	e := offerCancelEffects{Maker: maker}
	var claims []string
	for _, cid := range cids {
		o, err := s.liveOffer(ctx, s.db, cid)
		if err != nil {
			return nil, err
		}
		if o.Maker != maker {
			return nil, Errorf(CodePartyMismatch, "offer %s belongs to %s, not to %s", cid, o.Maker, maker)
		}
		e.Offers = append(e.Offers, offerRef{OfferID: o.OfferID, CollectionID: o.CollectionID})
		claims = append(claims, o.CID)
	}
	summary := map[string]any{"action": fmt.Sprintf("cancel %d offer(s) and release what they still lock", len(cids)), "maker": maker, "offers": cids}
	return s.prepareAs(ctx, KindNFTOfferCancel, maker, e, summary, claims)
}

// liveOffer returns the open version of offer cid: not_found for no such offer, conflict
// when it was cancelled or has expired, offer_exhausted when accepts took all of it.
func (s *Store) liveOffer(ctx context.Context, db bun.IDB, cid string) (*Offer, error) {
	// The open version first: the versions of an offer a crowd accepts into run to its
	// quantity, and only a closed offer needs the walk of them for its last.
	o, err := s.openOfferVersion(ctx, db, cid)
	if err == nil && o == nil {
		o, err = lastOfferVersion(ctx, db, cid)
	}
	if err != nil {
		return nil, err
	}
	expired := Errorf(CodeConflict, "offer %s expired at %s", cid, o.ExpiresAt.UTC().Format(time.RFC3339))
	if o.Active() {
		if o.expiredAt(s.now()) {
			return nil, expired
		}
		return o, nil
	}
	// The last version: what consumed it says how the offer ended.
	var kind []string
	if err := db.NewSelect().Model((*Update)(nil)).Column("kind").Where("update_id = ?", *o.ConsumedUpdate).Scan(ctx, &kind); err != nil {
		return nil, err
	}
	switch {
	case len(kind) > 0 && kind[0] == KindNFTOfferAccept:
		return nil, Errorf(CodeOfferExhausted, "offer %s has no units left: accepts took all %d", cid, o.Quantity)
	case len(kind) > 0 && kind[0] == KindOfferExpiry:
		return nil, expired
	}
	return nil, Errorf(CodeConflict, "offer %s was cancelled", cid)
}

func applyOfferCancel(ctx context.Context, tx *Tx, u *Update, e *offerCancelEffects) (any, error) {
	return nil, tx.releaseOffers(ctx, u, e.Offers, false)
}

// releaseOffers consumes offers' open versions and returns what each locks to its maker, as
// the maker's cancel or, expired, as the service's expiry.
func (tx *Tx) releaseOffers(ctx context.Context, u *Update, refs []offerRef, expiry bool) error {
	ids := make([]string, len(refs))
	for i, r := range refs {
		ids[i] = r.CollectionID
	}
	cts, err := tx.lockCollections(ctx, ids)
	if err != nil {
		return err
	}
	t := &Transaction{}
	var events []nftActivity
	for _, r := range refs {
		o, err := tx.s.openOfferVersion(ctx, tx, r.OfferID)
		if err != nil {
			return err
		}
		if o == nil {
			return Errorf(CodeStale, "offer %s was accepted in full, cancelled or expired since this was prepared", r.OfferID)
		}
		if expiry && !o.expiredAt(tx.Now()) {
			return Errorf(CodeStale, "offer %s has not expired", r.OfferID)
		}
		t.Consume = append(t.Consume, ContractRef{Template: templateOffer, CID: o.CID})
		t.Create = append(t.Create, &Holding{Owner: o.Maker, Instrument: o.Instrument, Amount: o.Amount})
		cts[r.CollectionID].offersChanged(o)
		events = append(events, o.event(EventOfferCancelled))
	}
	if err := tx.s.ledger.Commit(ctx, tx.Tx, u, t); err != nil {
		return err
	}
	if err := tx.nftEvents(ctx, u, events); err != nil {
		return err
	}
	return closeAll(ctx, cts)
}

// ExpireOffers releases up to limit offers whose expiry has passed, as the service (an update
// of kind offer-expiry each), and returns how many.
func (s *Store) ExpireOffers(ctx context.Context, limit int) (int, error) {
	var due []Offer
	err := s.db.NewSelect().Model(&due).Column("offer_id", "collection_id").Where("consumed_update IS NULL").
		Where("expires_at <= ?", At(s.now())).OrderExpr("expires_at, cid").Limit(int64(limit)).Scan(ctx)
	if err != nil {
		return 0, err
	}
	return s.releaseExpired(ctx, KindOfferExpiry, len(due), func(tx *Tx, u *Update, i int) error {
		return tx.releaseOffers(ctx, u, []offerRef{{OfferID: due[i].OfferID, CollectionID: due[i].CollectionID}}, true)
	})
}

// offersChanged notes that the transaction creates or consumes the version o (committed: its
// cid is set): the offer book reads it again after the commit, and a collection offer moves
// the collection's top offer, which close reads again.
func (ct *collectionTx) offersChanged(o *Offer) {
	n := ct.tx.nftPart()
	n.offers = append(n.offers, o.CID)
	if o.Kind == OfferCollection {
		ct.topOffer = true
	}
}

// readTopOffer sets the collection's best open collection-wide offer.
func (ct *collectionTx) readTopOffer(ctx context.Context) error {
	if err := ct.tx.Flush(ctx); err != nil { // the offers' deferred writes first
		return err
	}
	var os []Offer
	err := ct.tx.NewSelect().Model(&os).Column("price").Where("collection_id = ?", ct.c.ID).Where("consumed_update IS NULL").
		Where("kind = ?", OfferCollection).Where("expires_at > ?", At(ct.tx.Now())).Order("price_key", "offer_id").Limit(1).Scan(ctx)
	if err != nil {
		return err
	}
	ct.c.TopOffer = nil
	if len(os) > 0 {
		ct.c.TopOffer = &os[0].Price
	}
	return nil
}
