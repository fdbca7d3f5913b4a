package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
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
// Per collection it keeps item offers by serial, collection offers, and trait offers grouped
// by their criteria, each list best first (price, then offer id); a trait group's criteria are
// matched against an NFT's traits, best group first, and the walk stops at the first group
// that cannot beat what was found. A page costs a few lookups per NFT and a pass over the
// collection's distinct trait criteria at worst.
//
// A market holds about as many open offers as NFTs, so the book is kept compact: each version
// is a slot of one slice that holds no pointer (the collector never scans it), with its ids as
// the 32 bytes their text spells, its maker, price and trait group as numbers of tables that
// hold each once; lists hold slot numbers, and an NFT's item offers are a chain
// through their slots, its first found by serial. An offer costs its slot and its entry in
// byCID, about 130 bytes.
type offerBook struct {
	mu    sync.RWMutex
	slots []bookOffer // slot 0 is never used: 0 means none
	free  []int32     // slots a removed version left, used again first
	byCID map[contractKey]int32
	// laterIDs holds the offer id of a version that is not its offer's first (its id is not
	// its cid's), by slot.
	laterIDs map[int32]contractKey
	// makerNo, prices and groups (and priceNo, their numbers by sort key) hold each value once;
	// they only grow, with the distinct values the book has seen.
	makerNo  map[string]uint32
	prices   []bookPrice
	priceNo  map[string]uint32 // by the price's sort key
	colls    map[string]*collectionBook
	groups   []*traitGroup
	oddTexts map[contractKey]string // the text of each id of another form than a contract id's
}

// bookOffer is an offer version as the book keeps it, in its slot.
type bookOffer struct {
	cid     contractKey
	expires int64  // Unix microseconds, as the store keeps it
	maker   uint32 // of makers
	price   uint32 // of prices
	serial  uint32 // an item offer's NFT
	next    int32  // an item offer's: the next offer of its NFT, worse; 0 for none
	group   int32  // a trait offer's, of groups
	kind    offerKind
	later   bool // its offer id is in laterIDs, not its cid
}

// contractKey is a contract id as the book keeps it: the 32 bytes the 64 hex digits after its
// "00" spell (ledger.ContractID), which order as the text does. An id of another form is kept
// as its SHA-256, its text in oddTexts.
type contractKey [32]byte

// keyOf returns id's key, and false when id is of another form than a contract id's.
func keyOf(id string) (contractKey, bool) {
	var k contractKey
	if len(id) != 66 || id[:2] != "00" || strings.ToLower(id) != id {
		return sha256.Sum256([]byte(id)), false
	}
	if _, err := hex.Decode(k[:], []byte(id[2:])); err != nil {
		return sha256.Sum256([]byte(id)), false
	}
	return k, true
}

// key is id's key, its text kept when it is of another form.
func (b *offerBook) key(id string) contractKey {
	k, ok := keyOf(id)
	if !ok {
		b.oddTexts[k] = id
	}
	return k
}

// text is the id k keys.
func (b *offerBook) text(k contractKey) string {
	return string(b.appendText(nil, k))
}

// appendText appends the id k keys to dst.
func (b *offerBook) appendText(dst []byte, k contractKey) []byte {
	if len(b.oddTexts) > 0 {
		if s, ok := b.oddTexts[k]; ok {
			return append(dst, s...)
		}
	}
	return hex.AppendEncode(append(dst, "00"...), k[:])
}

// bookPrice is a price the book's offers bid, and its descending sort key.
type bookPrice struct {
	key    string
	amount Amount
}

// offerKind is an offer's kind as the book keeps it.
type offerKind uint8

const (
	kindItem offerKind = iota + 1
	kindCollection
	kindTrait
)

var offerKinds = map[string]offerKind{OfferItem: kindItem, OfferCollection: kindCollection, OfferTrait: kindTrait}

// name is the kind as the API names it.
func (k offerKind) name() string {
	switch k {
	case kindItem:
		return OfferItem
	case kindCollection:
		return OfferCollection
	}
	return OfferTrait
}

// BestOffer is the best open offer an NFT can be accepted into.
type BestOffer struct {
	CID       string
	Price     Amount
	Kind      string
	ExpiresAt time.Time
}

// offerView is an offer row as an NFT's bestOffer (the SQL reference's).
func offerView(o *Offer) *BestOffer {
	return &BestOffer{CID: o.OfferID, Price: o.Price, Kind: o.Kind, ExpiresAt: o.ExpiresAt.Time}
}

// offerID is the offer id of the version of slot.
func (b *offerBook) offerID(slot int32) contractKey {
	if b.slots[slot].later {
		return b.laterIDs[slot]
	}
	return b.slots[slot].cid
}

// better orders the offers of slots i and j best first: by price, then by offer id (as the
// SQL reference does).
func (b *offerBook) better(i, j int32) int {
	x, y := &b.slots[i], &b.slots[j]
	if x.price != y.price {
		return strings.Compare(b.prices[x.price].key, b.prices[y.price].key)
	}
	xi, yi := b.offerID(i), b.offerID(j)
	if len(b.oddTexts) > 0 { // ids of another form order as their texts
		return strings.Compare(b.text(xi), b.text(yi))
	}
	return bytes.Compare(xi[:], yi[:])
}

// collectionBook is one collection's open offers, as slots.
type collectionBook struct {
	items      []int32 // by serial: the best item offer of the NFT, the first of its chain
	whole      []int32 // collection offers
	groups     []int32 // trait offers by criteria (of offerBook.groups), the group with the best offer first
	byCriteria map[string]int32

	// gen counts the changes to the collection's offers (under the book's write lock); found
	// holds, by serial, the best offer an NFT was last found to have for any owner, and the
	// gen and time it was found at. A page reads an NFT's from there while no offer of the
	// collection changed since, the time is not before it and the offer has not expired (an
	// offer that was worse then is no better now: offers only leave). An owner who made
	// that offer is answered by the walk (best), as an NFT found in none is.
	gen     uint32
	foundMu sync.Mutex
	found   []foundBest
}

// foundBest is the best offer of an NFT for any owner (0 for none) as the walk found it at
// the collection's gen and the time at (Unix microseconds).
type foundBest struct {
	gen  uint32
	slot int32
	at   int64
}

type traitGroup struct {
	criteria []TraitMatch
	offers   []int32
}

func newOfferBook() *offerBook {
	return &offerBook{slots: make([]bookOffer, 1), byCID: map[contractKey]int32{}, laterIDs: map[int32]contractKey{},
		makerNo: map[string]uint32{}, priceNo: map[string]uint32{}, colls: map[string]*collectionBook{}, oddTexts: map[contractKey]string{}}
}

// replace makes the book hold exactly what nb holds.
func (b *offerBook) replace(nb *offerBook) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.slots, b.free, b.byCID, b.laterIDs, b.oddTexts = nb.slots, nb.free, nb.byCID, nb.laterIDs, nb.oddTexts
	b.makerNo, b.prices, b.priceNo = nb.makerNo, nb.prices, nb.priceNo
	b.colls, b.groups = nb.colls, nb.groups
}

// apply puts the active versions of rows and takes out the consumed ones, under the write lock;
// it returns the collections it changed.
func (b *offerBook) apply(rows []Offer) map[string]bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	changed := map[string]bool{}
	for i := range rows {
		o := &rows[i]
		k, _ := keyOf(o.CID)
		if _, held := b.byCID[k]; held == o.Active() {
			continue
		}
		changed[o.CollectionID] = true
		if o.Active() {
			b.put(o)
		} else {
			b.remove(k, b.colls[o.CollectionID])
		}
	}
	return changed
}

// put adds the active version o. Callers hold the write lock, or own a book nobody reads yet.
func (b *offerBook) put(o *Offer) {
	kind := offerKinds[o.Kind]
	if kind == 0 {
		return // no kind the book knows: no NFT can be accepted into it
	}
	var slot int32
	if n := len(b.free); n > 0 {
		slot, b.free = b.free[n-1], b.free[:n-1]
	} else {
		slot = int32(len(b.slots))
		b.slots = append(b.slots, bookOffer{})
	}
	cb := b.colls[o.CollectionID]
	if cb == nil {
		cb = &collectionBook{byCriteria: map[string]int32{}}
		b.colls[o.CollectionID] = cb
	}
	cb.gen++
	cid := b.key(o.CID)
	b.slots[slot] = bookOffer{cid: cid, maker: b.maker(o.Maker), price: b.price(o.PriceKey, o.Price),
		expires: o.ExpiresAt.UnixMicro(), kind: kind}
	if o.OfferID != o.CID {
		b.slots[slot].later = true
		b.laterIDs[slot] = b.key(o.OfferID)
	}
	b.byCID[cid] = slot
	switch kind {
	case kindItem:
		b.slots[slot].serial = offerSerial(o)
		cb.putItem(b, slot)
	case kindCollection:
		cb.whole = b.insertSorted(cb.whole, slot)
	case kindTrait:
		key := ""
		if o.Traits != nil {
			key = *o.Traits
		}
		g, ok := cb.byCriteria[key]
		if !ok {
			g = int32(len(b.groups))
			b.groups = append(b.groups, &traitGroup{criteria: o.criteria()})
			cb.byCriteria[key] = g
		}
		b.slots[slot].group = g
		tg := b.groups[g]
		tg.offers = b.insertSorted(tg.offers, slot)
		if tg.offers[0] == slot {
			cb.placeGroup(b, g) // a new group, or a new best of its group
		}
	}
}

// offerSerial is the serial of an item offer's NFT.
func offerSerial(o *Offer) uint32 {
	if o.Serial != nil {
		return uint32(*o.Serial)
	}
	if o.NFTID != nil {
		_, serial, _ := splitNFTID(*o.NFTID)
		return serial
	}
	return 0
}

// maker is maker m's number.
func (b *offerBook) maker(m string) uint32 {
	n, ok := b.makerNo[m]
	if !ok {
		n = uint32(len(b.makerNo))
		b.makerNo[m] = n
	}
	return n
}

// price is the number of the price of sort key key.
func (b *offerBook) price(key string, amount Amount) uint32 {
	n, ok := b.priceNo[key]
	if !ok {
		n = uint32(len(b.prices))
		b.prices = append(b.prices, bookPrice{key: key, amount: amount})
		b.priceNo[key] = n
	}
	return n
}

// remove takes out the version of cid k, which the book holds, of the collection cb.
func (b *offerBook) remove(k contractKey, cb *collectionBook) {
	slot := b.byCID[k]
	delete(b.byCID, k)
	e := b.slots[slot]
	cb.gen++
	switch e.kind {
	case kindItem:
		cb.removeItem(b, slot)
	case kindCollection:
		cb.whole = removeSlot(cb.whole, slot)
	case kindTrait:
		g := b.groups[e.group]
		wasBest := g.offers[0] == slot
		if g.offers = removeSlot(g.offers, slot); len(g.offers) == 0 {
			// The group stays in the table, empty, for its criteria's next offer.
			cb.groups = removeSlot(cb.groups, e.group)
		} else if wasBest {
			cb.placeGroup(b, e.group)
		}
	}
	if e.later {
		delete(b.laterIDs, slot)
	}
	b.slots[slot] = bookOffer{}
	b.free = append(b.free, slot)
}

// insertSorted puts slot into list, best first.
func (b *offerBook) insertSorted(list []int32, slot int32) []int32 {
	i, _ := slices.BinarySearchFunc(list, slot, b.better)
	return slices.Insert(list, i, slot)
}

func removeSlot(list []int32, slot int32) []int32 {
	return slices.DeleteFunc(list, func(x int32) bool { return x == slot })
}

// putItem links the item offer of slot into its NFT's chain, best first.
func (cb *collectionBook) putItem(b *offerBook, slot int32) {
	serial := b.slots[slot].serial
	if int(serial) >= len(cb.items) {
		cb.items = append(cb.items, make([]int32, int(serial)+1-len(cb.items))...)
	}
	prev, cur := int32(0), cb.items[serial]
	for cur != 0 && b.better(cur, slot) < 0 {
		prev, cur = cur, b.slots[cur].next
	}
	b.slots[slot].next = cur
	if prev == 0 {
		cb.items[serial] = slot
	} else {
		b.slots[prev].next = slot
	}
}

// removeItem unlinks the item offer of slot from its NFT's chain.
func (cb *collectionBook) removeItem(b *offerBook, slot int32) {
	serial := b.slots[slot].serial
	prev, cur := int32(0), cb.items[serial]
	for cur != 0 && cur != slot {
		prev, cur = cur, b.slots[cur].next
	}
	if cur == 0 {
		return
	}
	if prev == 0 {
		cb.items[serial] = b.slots[slot].next
	} else {
		b.slots[prev].next = b.slots[slot].next
	}
}

// placeGroup moves group g, whose best offer changed (or which is new), to its place in the
// collection's groups.
func (cb *collectionBook) placeGroup(b *offerBook, g int32) {
	cb.groups = removeSlot(cb.groups, g)
	i, _ := slices.BinarySearchFunc(cb.groups, g, func(x, y int32) int { return b.better(b.groups[x].offers[0], b.groups[y].offers[0]) })
	cb.groups = slices.Insert(cb.groups, i, g)
}

// acceptable tells whether the offer of slot is one owner (maker number, -1 for none of the
// book's makers) can accept at nowUS (Unix microseconds): not its own, not expired.
func (b *offerBook) acceptable(slot int32, owner int64, nowUS int64) bool {
	o := &b.slots[slot]
	return int64(o.maker) != owner && nowUS < o.expires
}

// first is the best offer of list that owner can accept at nowUS, 0 for none.
func (b *offerBook) first(list []int32, owner int64, nowUS int64) int32 {
	for _, slot := range list {
		if b.acceptable(slot, owner, nowUS) {
			return slot
		}
	}
	return 0
}

// best is the best offer the NFT of serial, held by owner with traits, can be accepted into
// at nowUS; 0 for none.
func (b *offerBook) best(cb *collectionBook, serial uint32, owner int64, traits []Trait, nowUS int64) int32 {
	var top int32
	take := func(slot int32) {
		if slot != 0 && (top == 0 || b.better(slot, top) < 0) {
			top = slot
		}
	}
	if int(serial) < len(cb.items) {
		for slot := cb.items[serial]; slot != 0; slot = b.slots[slot].next {
			if b.acceptable(slot, owner, nowUS) {
				take(slot)
				break
			}
		}
	}
	take(b.first(cb.whole, owner, nowUS))
	for _, gn := range cb.groups {
		g := b.groups[gn]
		if top != 0 && b.better(g.offers[0], top) > 0 {
			break // no offer of this group or the ones after it beats top
		}
		if matchesTraits(g.criteria, traits) {
			take(b.first(g.offers, owner, nowUS))
		}
	}
	return top
}

// annotate sets each NFT's BestOffer from the book, and returns the earliest expiry of those
// it set (zero for none): until then, expiries leave the answer as it is.
func (b *offerBook) annotate(collectionID string, nfts []NFTView, now time.Time) time.Time {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for i := range nfts {
		nfts[i].BestOffer = nil
	}
	cb := b.colls[collectionID]
	if cb == nil {
		return time.Time{}
	}
	// An offer holds until the microsecond it expires: now is before it exactly when now's
	// whole microseconds are.
	nowUS := now.UnixMicro()
	owners := make([]int64, len(nfts))
	for i := range nfts {
		owners[i] = -1
		if m, made := b.makerNo[nfts[i].Owner]; made {
			owners[i] = int64(m)
		}
	}
	slots, known := cb.recall(b, nfts, owners, nowUS)
	var learnt []foundOf
	for i := range nfts {
		if known[i] {
			continue
		}
		serial := uint32(nfts[i].Serial)
		slots[i] = b.best(cb, serial, -1, nfts[i].Traits, nowUS)
		learnt = append(learnt, foundOf{serial: nfts[i].Serial, slot: slots[i]})
		if slots[i] != 0 && int64(b.slots[slots[i]].maker) == owners[i] {
			slots[i] = b.best(cb, serial, owners[i], nfts[i].Traits, nowUS)
		}
	}
	cb.remember(learnt, nowUS)
	return b.setViews(nfts, slots)
}

// foundOf is the best offer for any owner the walk found for the NFT of serial.
type foundOf struct {
	serial int
	slot   int32
}

// recall returns, for each NFT of nfts held by owners[i], its best offer as the collection
// kept it, where that still holds at nowUS and owners[i] did not make it; known[i] tells
// which. Callers hold the book's read lock.
func (cb *collectionBook) recall(b *offerBook, nfts []NFTView, owners []int64, nowUS int64) (slots []int32, known []bool) {
	slots, known = make([]int32, len(nfts)), make([]bool, len(nfts))
	cb.foundMu.Lock()
	defer cb.foundMu.Unlock()
	for i := range nfts {
		serial := nfts[i].Serial
		if serial < 0 || serial >= len(cb.found) {
			continue
		}
		f := cb.found[serial]
		if f.gen != cb.gen || f.at > nowUS || f.slot != 0 && !(nowUS < b.slots[f.slot].expires) {
			continue
		}
		if f.slot == 0 || int64(b.slots[f.slot].maker) != owners[i] {
			slots[i], known[i] = f.slot, true
		}
	}
	return slots, known
}

// remember keeps what the walk found at nowUS. Callers hold the book's read lock.
func (cb *collectionBook) remember(learnt []foundOf, nowUS int64) {
	if len(learnt) == 0 {
		return
	}
	cb.foundMu.Lock()
	defer cb.foundMu.Unlock()
	for _, l := range learnt {
		if l.serial < 0 || l.serial > MaxSupply {
			continue
		}
		if l.serial >= len(cb.found) {
			cb.found = append(cb.found, make([]foundBest, l.serial+1-len(cb.found))...)
		}
		cb.found[l.serial] = foundBest{gen: cb.gen, slot: l.slot, at: nowUS}
	}
}

// setViews sets each NFT's BestOffer to the offer of its slot (0: none), the page's offers
// made in one allocation and their ids' texts in one more, and returns the earliest expiry
// of those it set (zero for none).
func (b *offerBook) setViews(nfts []NFTView, slots []int32) time.Time {
	texts := make([]byte, 0, 66*len(slots)) // a contract id is 66 characters
	ends := make([]int, 0, len(slots))      // where each offer's id ends in texts
	for _, slot := range slots {
		if slot != 0 {
			texts = b.appendText(texts, b.offerID(slot))
			ends = append(ends, len(texts))
		}
	}
	if len(ends) == 0 {
		return time.Time{}
	}
	all := string(texts)
	views := make([]BestOffer, 0, len(ends))
	var until time.Time
	for i, slot := range slots {
		if slot == 0 {
			continue
		}
		o := &b.slots[slot]
		from := 0
		if k := len(views); k > 0 {
			from = ends[k-1]
		}
		views = append(views, BestOffer{CID: all[from:ends[len(views)]], Price: b.prices[o.price].amount, Kind: o.kind.name(), ExpiresAt: time.UnixMicro(o.expires).UTC()})
		v := &views[len(views)-1]
		nfts[i].BestOffer = v
		if until.IsZero() || v.ExpiresAt.Before(until) {
			until = v.ExpiresAt
		}
	}
	return until
}

// ---- kept by the NFT index's build and follower

// bookColumns are the columns of an offer row the book keeps (put).
var bookColumns = []string{"cid", "offer_id", "maker", "kind", "collection_id", "serial", "traits", "price", "price_key", "expires_at"}

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
			nb.put(&rows[i])
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
		for id := range x.s.offerBook.apply(rows) {
			x.s.nftPages.Invalidate(id)
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
			nfts[i].BestOffer = offerView(o)
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
