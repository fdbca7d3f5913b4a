package store

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/uptrace/bun"
)

// The offer book answers each NFT's bestOffer (the best open offer of another party than its
// owner that the NFT can be accepted into) from memory, so a page of NFTs costs no query per
// NFT. Like the NFT index, whose build and follower keep it, it is derived state: built at
// start from the open rows of nft_offers and kept current from the update log, where every
// offer version a transaction creates or consumes is an event of its update (update_events,
// template nft_offers); the versions named are read again, so a version the book holds is
// active as the last read found it. A write on this instance reads its offers again before it
// answers. An offer past its expiry is skipped at read time, as the SQL reference does
// (bestOfferFor), until the service releases it.
//
// Per collection it keeps item offers by NFT, collection offers, and trait offers grouped by
// their criteria, each list best first (price, then offer id); a trait group's criteria are
// matched against an NFT's traits, best group first, and the walk stops at the first group
// that cannot beat what was found. A page costs a few lookups per NFT and a pass over the
// collection's distinct trait criteria at worst.
type offerBook struct {
	mu    sync.RWMutex
	byCID map[string]*bookOffer
	colls map[string]*collectionBook
	// shared holds one copy of each value many offers repeat (makers, collections, kinds,
	// price keys, trait criteria), so a hundred thousand offers of a few makers keep one
	// string of each; it only grows, with the distinct values the book has seen.
	shared   map[string]string
	criteria map[string][]TraitMatch
}

// bookOffer is an offer version as the book keeps it.
type bookOffer struct {
	cid, offerID, maker, kind, collectionID, nftID string
	criteria                                       []TraitMatch
	criteriaKey                                    string
	price                                          Amount
	key                                            string // the price's descending sort key
	expires                                        time.Time
}

// BestOffer is the best open offer an NFT can be accepted into.
type BestOffer struct {
	CID       string
	Price     Amount
	Kind      string
	ExpiresAt time.Time
}

func (o *bookOffer) view() *BestOffer {
	return &BestOffer{CID: o.offerID, Price: o.price, Kind: o.kind, ExpiresAt: o.expires}
}

// better orders offers best first: by price, then by offer id (as the SQL reference does).
func better(a, b *bookOffer) int {
	return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.offerID, b.offerID))
}

// collectionBook is one collection's open offers.
type collectionBook struct {
	items      map[string][]*bookOffer // item offers by NFT id
	whole      []*bookOffer            // collection offers
	groups     []*traitGroup           // trait offers by criteria, the group with the best offer first
	byCriteria map[string]*traitGroup
}

type traitGroup struct {
	criteria []TraitMatch
	offers   []*bookOffer
}

func newOfferBook() *offerBook {
	return &offerBook{byCID: map[string]*bookOffer{}, colls: map[string]*collectionBook{}, shared: map[string]string{}, criteria: map[string][]TraitMatch{}}
}

// bookOf makes the book's entry of an offer row, outside any book (the SQL reference's).
func bookOf(o *Offer) *bookOffer {
	b := &bookOffer{cid: o.CID, offerID: o.OfferID, maker: o.Maker, kind: o.Kind, collectionID: o.CollectionID,
		price: o.Price, key: o.PriceKey, expires: o.ExpiresAt.Time, criteria: o.criteria()}
	if o.NFTID != nil {
		b.nftID = *o.NFTID
	}
	if o.Traits != nil {
		b.criteriaKey = *o.Traits
	}
	return b
}

// entryOf is bookOf for an entry the book keeps: the values offers repeat are the book's one
// copy, and an offer's first version's id is its cid's string. Callers hold the write lock,
// or own a book nobody reads yet.
func (b *offerBook) entryOf(o *Offer) *bookOffer {
	e := &bookOffer{cid: o.CID, offerID: o.OfferID, maker: b.share(o.Maker), kind: b.share(o.Kind), collectionID: b.share(o.CollectionID),
		price: o.Price, key: b.share(o.PriceKey), expires: o.ExpiresAt.Time}
	if e.offerID == e.cid {
		e.offerID = e.cid
	}
	if o.NFTID != nil {
		e.nftID = *o.NFTID
	}
	if o.Traits != nil {
		e.criteriaKey = b.share(*o.Traits)
		c, ok := b.criteria[e.criteriaKey]
		if !ok {
			c = o.criteria()
			b.criteria[e.criteriaKey] = c
		}
		e.criteria = c
	}
	return e
}

// share is the book's one copy of v.
func (b *offerBook) share(v string) string {
	if s, ok := b.shared[v]; ok {
		return s
	}
	b.shared[v] = v
	return v
}

// replace makes the book hold exactly what nb holds.
func (b *offerBook) replace(nb *offerBook) {
	b.mu.Lock()
	b.byCID, b.colls, b.shared, b.criteria = nb.byCID, nb.colls, nb.shared, nb.criteria
	b.mu.Unlock()
}

// apply puts the active versions of rows and takes out the consumed ones (and any cid of gone
// that no row names), under the write lock; it returns the collections it changed.
func (b *offerBook) apply(rows []Offer, gone []string) map[string]bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	changed := map[string]bool{}
	for i := range rows {
		o := &rows[i]
		if _, held := b.byCID[o.CID]; held == o.Active() {
			continue
		}
		changed[o.CollectionID] = true
		if o.Active() {
			b.put(b.entryOf(o))
		} else {
			b.remove(o.CID)
		}
	}
	for _, cid := range gone {
		if o := b.byCID[cid]; o != nil {
			changed[o.collectionID] = true
			b.remove(cid)
		}
	}
	return changed
}

func insertSorted(list []*bookOffer, o *bookOffer) []*bookOffer {
	i, _ := slices.BinarySearchFunc(list, o, better)
	return slices.Insert(list, i, o)
}

func removeFrom(list []*bookOffer, o *bookOffer) []*bookOffer {
	return slices.DeleteFunc(list, func(x *bookOffer) bool { return x == o })
}

func (b *offerBook) put(o *bookOffer) {
	b.byCID[o.cid] = o
	cb := b.colls[o.collectionID]
	if cb == nil {
		cb = &collectionBook{items: map[string][]*bookOffer{}, byCriteria: map[string]*traitGroup{}}
		b.colls[o.collectionID] = cb
	}
	switch o.kind {
	case OfferItem:
		cb.items[o.nftID] = insertSorted(cb.items[o.nftID], o)
	case OfferCollection:
		cb.whole = insertSorted(cb.whole, o)
	case OfferTrait:
		g := cb.byCriteria[o.criteriaKey]
		if g == nil {
			g = &traitGroup{criteria: o.criteria}
			cb.byCriteria[o.criteriaKey] = g
			cb.groups = append(cb.groups, g)
		}
		g.offers = insertSorted(g.offers, o)
		cb.sortGroups()
	}
}

func (b *offerBook) remove(cid string) {
	o := b.byCID[cid]
	delete(b.byCID, cid)
	cb := b.colls[o.collectionID]
	switch o.kind {
	case OfferItem:
		if cb.items[o.nftID] = removeFrom(cb.items[o.nftID], o); len(cb.items[o.nftID]) == 0 {
			delete(cb.items, o.nftID)
		}
	case OfferCollection:
		cb.whole = removeFrom(cb.whole, o)
	case OfferTrait:
		g := cb.byCriteria[o.criteriaKey]
		if g.offers = removeFrom(g.offers, o); len(g.offers) == 0 {
			delete(cb.byCriteria, o.criteriaKey)
			cb.groups = slices.DeleteFunc(cb.groups, func(x *traitGroup) bool { return x == g })
		}
		cb.sortGroups()
	}
}

func (cb *collectionBook) sortGroups() {
	slices.SortFunc(cb.groups, func(a, b *traitGroup) int { return better(a.offers[0], b.offers[0]) })
}

// first is the best offer of list that owner can accept at now: not its own, not expired.
func first(list []*bookOffer, owner string, now time.Time) *bookOffer {
	for _, o := range list {
		if o.maker != owner && now.Before(o.expires) {
			return o
		}
	}
	return nil
}

// best is the best offer the NFT nftID, held by owner with traits, can be accepted into.
func (cb *collectionBook) best(nftID, owner string, traits []Trait, now time.Time) *bookOffer {
	var top *bookOffer
	take := func(o *bookOffer) {
		if o != nil && (top == nil || better(o, top) < 0) {
			top = o
		}
	}
	take(first(cb.items[nftID], owner, now))
	take(first(cb.whole, owner, now))
	for _, g := range cb.groups {
		if top != nil && better(g.offers[0], top) > 0 {
			break // no offer of this group or the ones after it beats top
		}
		if matchesTraits(g.criteria, traits) {
			take(first(g.offers, owner, now))
		}
	}
	return top
}

// annotate sets each NFT's BestOffer from the book, and returns the earliest expiry of those
// it set (zero for none): until then, expiries leave the answer as it is.
func (b *offerBook) annotate(collectionID string, nfts []NFTView, now time.Time) time.Time {
	b.mu.RLock()
	defer b.mu.RUnlock()
	cb := b.colls[collectionID]
	var until time.Time
	for i := range nfts {
		nfts[i].BestOffer = nil
		if cb == nil {
			continue
		}
		if o := cb.best(nftIDOf(collectionID, nfts[i].Serial), nfts[i].Owner, nfts[i].Traits, now); o != nil {
			nfts[i].BestOffer = o.view()
			if until.IsZero() || o.expires.Before(until) {
				until = o.expires
			}
		}
	}
	return until
}

// ---- kept by the NFT index's build and follower

// bookColumns are the columns of an offer row the book keeps (bookOf).
var bookColumns = []string{"cid", "offer_id", "maker", "kind", "collection_id", "nft_id", "traits", "price", "price_key", "expires_at"}

// loadOffers reads every open offer, for the book's build: the columns the book keeps, a batch
// at a time, each put in the new book before the next is read, so the build holds no more than
// the book and one batch of rows.
func (x *nftIndex) loadOffers(ctx context.Context) error {
	nb := newOfferBook()
	const batch = 10_000
	after := ""
	for {
		var rows []Offer
		sel := x.s.db.NewSelect().Model(&rows).Column(bookColumns...).Where("consumed_update IS NULL").OrderExpr("cid").Limit(batch)
		if after != "" {
			sel = sel.Where("cid > ?", after)
		}
		if err := sel.Scan(ctx); err != nil {
			return err
		}
		for i := range rows {
			nb.put(nb.entryOf(&rows[i]))
		}
		if len(rows) < batch {
			break
		}
		after = rows[len(rows)-1].CID
	}
	x.s.offerBook.replace(nb)
	return nil
}

// offersChangedIn returns the offer versions the updates with offsets in (from, to] created
// or consumed.
func (x *nftIndex) offersChangedIn(ctx context.Context, from, to int64) ([]string, error) {
	var cids []string
	err := x.s.db.NewSelect().TableExpr("update_events AS e").ColumnExpr("DISTINCT e.cid").
		Join("JOIN updates AS u ON u.update_id = e.update_id").
		Where("e.template = ?", templateOffer).Where("u.ledger_offset > ?", from).Where("u.ledger_offset <= ?", to).
		Scan(ctx, &cids)
	return cids, err
}

// rereadOffers reads the offer versions named again and puts them in the book as they are
// now; the pages of the collections it changed end after it. It runs under the follow lock.
func (x *nftIndex) rereadOffers(ctx context.Context, cids []string) error {
	for chunk := range slices.Chunk(cids, 1000) {
		var rows []Offer
		if err := x.s.db.NewSelect().Model(&rows).Where("cid IN (?)", bun.In(chunk)).Scan(ctx); err != nil {
			return err
		}
		for id := range x.s.offerBook.apply(rows, nil) {
			x.s.nftPages.invalidate(id)
		}
	}
	return nil
}

// bestOffers sets the BestOffer of NFTs of one collection: from the book once the NFT index
// is built, else by SQL, one query per NFT (the reference the book is tested against). It
// returns the earliest expiry of those it set.
func (s *Store) bestOffers(ctx context.Context, collectionID string, nfts []NFTView, now time.Time) (time.Time, error) {
	if s.nftIndex.ready.Load() {
		return s.offerBook.annotate(collectionID, nfts, now), nil
	}
	return s.bestOffersBySQL(ctx, collectionID, nfts, now)
}

func (s *Store) bestOffersBySQL(ctx context.Context, collectionID string, nfts []NFTView, now time.Time) (time.Time, error) {
	var until time.Time
	for i := range nfts {
		o, err := bestOfferFor(ctx, s.db, now, collectionID, nftIDOf(collectionID, nfts[i].Serial), nfts[i].Traits, nfts[i].Owner, "")
		if err != nil {
			return until, err
		}
		nfts[i].BestOffer = nil
		if o != nil {
			nfts[i].BestOffer = bookOf(o).view()
			if until.IsZero() || o.ExpiresAt.Before(until) {
				until = o.ExpiresAt.Time
			}
		}
	}
	return until, nil
}

// traitsOfItem reads an item's traits as its view does.
func traitsOfItem(it *nftItem) []Trait {
	var traits []Trait
	_ = json.Unmarshal([]byte(it.Traits), &traits)
	return traits
}
