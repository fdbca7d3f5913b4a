package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/google/btree"
	"github.com/uptrace/bun"
)

// The NFT index answers a page of a collection's NFTs from memory, at a cost that follows the
// page rather than how many NFTs the collection holds or how many a filter skips. Per
// collection it keeps a compressed bitmap of serials for every trait value, every owner, the
// live NFTs and the listed ones, and the listed NFTs ordered by each price sort. A page
// intersects the filter's bitmaps, then walks the sort order from the cursor until it is full.
//
// It is derived state. Each instance builds it at start from nft_items (the read model the
// SQL path reads) and keeps it current from the update log, in commit order: every change to
// nft_items commits with a history event (nft_activity) of the same update, so the NFTs an
// update changed are the ones its events name, and the index reads them again. Reads of the
// store under the index's follow lock are serial, so each NFT only ever moves forward. A write
// on this instance reads its NFTs again before it answers (a write shows in the very next read
// here); other instances follow on its notification, or within followEvery without one.
// Listings expire on the store's clock at read time, exactly as the SQL path has them.
//
// Answers and cursors are exactly those of the SQL path (readNFTs), which stays as the
// reference the tests compare against, and serves reads until the index is built.
type nftIndex struct {
	s *Store

	follow    sync.Mutex // one catch-up at a time; it guards offset and served
	offset    int64      // the last update offset applied
	requested atomic.Uint64
	served    uint64

	colls atomic.Pointer[map[string]*collectionIndex] // copied on write: collections are few
	ready atomic.Bool
	// forgets counts forget calls: a build that began before the last one is void.
	forgets atomic.Uint64
	state   atomic.Pointer[string] // why the index is not ready, for /readyz
	kicks   chan struct{}

	started atomic.Bool
	stop    context.CancelFunc
	done    chan struct{}

	builtIn time.Duration // how long the build took

	sortUnder atomic.Int64 // smallRun, or what a test sets
}

// followEvery bounds how long a change committed by another process takes to reach the index
// when no notification announced it (SQLite, or a lost notification).
const followEvery = 250 * time.Millisecond

// followBatch is how many updates one round of a catch-up reads.
const followBatch = 5000

func newNFTIndex(s *Store) *nftIndex {
	x := &nftIndex{s: s, kicks: make(chan struct{}, 1)}
	x.sortUnder.Store(smallRun)
	x.colls.Store(&map[string]*collectionIndex{})
	state := "not started"
	x.state.Store(&state)
	return x
}

// StartNFTIndex builds the NFT index in the background and keeps it current until Close.
// Until it is built, NFT pages are read by SQL and NFTIndexReady says why it is not. It does
// nothing when Config.NFTIndexOff is set, or when the index was started already.
func (s *Store) StartNFTIndex() {
	x := s.nftIndex
	if s.cfg.NFTIndexOff || x.started.Swap(true) {
		return
	}
	ctx, stop := context.WithCancel(context.WithValue(context.Background(), backgroundKey{}, true))
	x.stop, x.done = stop, make(chan struct{})
	go x.run(ctx)
}

// NFTIndexReady returns nil once the NFT index serves reads (or when it is off), else an
// unavailable error saying what it is doing.
func (s *Store) NFTIndexReady() error {
	if s.cfg.NFTIndexOff || s.nftIndex.ready.Load() {
		return nil
	}
	return Errorf(CodeUnavailable, "the NFT index is %s", *s.nftIndex.state.Load())
}

// AwaitNFTIndex waits until the NFT index serves reads (at once when it is off), or ctx ends.
func (s *Store) AwaitNFTIndex(ctx context.Context) error {
	for s.NFTIndexReady() != nil {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", s.NFTIndexReady(), ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// NFTIndexStats describes the NFT index, for operators and benchmarks.
type NFTIndexStats struct {
	Ready       bool
	NFTs        int
	Listed      int
	BitmapBytes uint64 // what the bitmaps hold, by roaring's own count
	Offset      int64  // the last update applied
	BuiltIn     time.Duration
}

// NFTIndexStats reports the NFT index's size.
func (s *Store) NFTIndexStats() NFTIndexStats {
	x := s.nftIndex
	st := NFTIndexStats{Ready: x.ready.Load()}
	x.follow.Lock()
	st.Offset, st.BuiltIn = x.offset, x.builtIn
	x.follow.Unlock()
	for _, c := range *x.colls.Load() {
		c.mu.RLock()
		st.NFTs += int(c.all.GetCardinality())
		st.Listed += int(c.listed.GetCardinality())
		st.BitmapBytes += c.all.GetSizeInBytes() + c.listed.GetSizeInBytes()
		for _, vs := range c.traits {
			for _, b := range vs {
				st.BitmapBytes += b.GetSizeInBytes()
			}
		}
		for _, b := range c.owners {
			st.BitmapBytes += b.GetSizeInBytes()
		}
		c.mu.RUnlock()
	}
	return st
}

func (x *nftIndex) setState(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	x.state.Store(&s)
}

// close stops the follower and waits for it.
func (x *nftIndex) close() {
	if x.started.Load() {
		x.stop()
		<-x.done
	}
}

// kick asks the follower for a catch-up now: another instance committed a change.
func (x *nftIndex) kick() {
	select {
	case x.kicks <- struct{}{}:
	default:
	}
}

// run builds the index, then follows the log until ctx ends, or until the store's history
// moved under this instance (forget), when it builds the index again. A failed build is tried
// again.
func (x *nftIndex) run(ctx context.Context) {
	defer close(x.done)
	for x.buildUntilDone(ctx) {
		x.followLog(ctx)
	}
}

// buildUntilDone builds the index, trying again after a failure; false says ctx ended first.
func (x *nftIndex) buildUntilDone(ctx context.Context) bool {
	backoff := 100 * time.Millisecond
	for {
		err := x.build(ctx)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		x.setState("not built: %v; retrying", err)
		x.s.log.Warn("building the NFT index failed; retrying", "error", err.Error(), "in", backoff.String())
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// followLog catches up on every kick and every followEvery, until ctx ends or the index is
// no longer ready (forget): it must be built again.
func (x *nftIndex) followLog(ctx context.Context) {
	t := time.NewTicker(followEvery)
	defer t.Stop()
	for x.ready.Load() {
		select {
		case <-ctx.Done():
			return
		case <-x.kicks:
		case <-t.C:
		}
		if err := x.catchUp(ctx); err != nil && ctx.Err() == nil {
			x.s.log.Warn("the NFT index could not follow the update log; retrying", "error", err.Error())
		}
	}
}

// forget voids the index: the store's history moved under this instance (ledger_failover.go). Pages
// are read by SQL until the follower has built it again. It takes no lock: it runs as a
// connection is made, maybe for a goroutine that holds the follow lock.
func (x *nftIndex) forget() {
	if !x.started.Load() {
		return
	}
	x.forgets.Add(1)
	x.ready.Store(false)
	x.setState("being rebuilt: the store's history moved")
	x.kick()
}

// build loads every live NFT. It notes the log's end first: whatever commits during the load
// is read again by the catch-ups that follow from there.
func (x *nftIndex) build(ctx context.Context) error {
	start := time.Now()
	forgets := x.forgets.Load()
	x.follow.Lock()
	defer x.follow.Unlock()
	x.setState("being built")
	end, err := x.logEnd(ctx)
	if err != nil {
		return err
	}
	colls := map[string]*collectionIndex{}
	const batch = 10_000
	after, n := "", 0
	for {
		var rows []nftItem
		sel := x.s.db.NewSelect().Model(&rows).OrderExpr("nft_id").Limit(batch)
		if after != "" {
			sel = sel.Where("nft_id > ?", after)
		}
		if err := sel.Scan(ctx); err != nil {
			return err
		}
		for i := range rows {
			it := &rows[i]
			c := colls[it.CollectionID]
			if c == nil {
				c = newCollectionIndex(it.CollectionID)
				colls[it.CollectionID] = c
			}
			c.put(it)
		}
		n += len(rows)
		x.setState("being built: %d NFTs loaded", n)
		if len(rows) < batch {
			break
		}
		after = rows[len(rows)-1].NFTID
	}
	x.colls.Store(&colls)
	x.offset = end
	if err := x.catchUpLocked(ctx); err != nil {
		return err
	}
	x.builtIn = time.Since(start)
	// A forget since the build began voids it. It stores not-ready after counting, so either
	// this load sees its count or its store comes after this one.
	x.ready.Store(true)
	if x.forgets.Load() != forgets {
		x.ready.Store(false)
		return errHistoryMoved
	}
	x.setState("ready")
	x.s.log.Info("NFT index built", "nfts", n, "collections", len(colls), "took", x.builtIn.String())
	return nil
}

// logEnd is the offset of the last committed update, which the store notes as seen: a
// history that later ends below it went back (ledger_failover.go).
func (x *nftIndex) logEnd(ctx context.Context) (int64, error) {
	var end int64
	moves := x.s.historyMoves()
	if err := x.s.db.NewSelect().Model((*Update)(nil)).ColumnExpr("COALESCE(MAX(ledger_offset), 0)").Scan(ctx, &end); err != nil {
		return 0, err
	}
	x.s.sawOffset(end, moves)
	return end, nil
}

var errHistoryMoved = errors.New("the store's history moved during the build")

// catchUp applies every update committed since the last one applied. It finds the log's end
// and the NFTs the updates changed without the follow lock, which every write's sync waits
// for, and holds it only to read those NFTs again: the follower's goroutine alone moves
// offset once the index is built, so it may read it unlocked.
func (x *nftIndex) catchUp(ctx context.Context) error {
	if !x.ready.Load() {
		return nil // the build follows the log itself
	}
	return x.readLog(ctx, false)
}

func (x *nftIndex) catchUpLocked(ctx context.Context) error { return x.readLog(ctx, true) }

// readLog reads up to the log's end as it finds it and no further: under a steady stream of
// writes it would otherwise chase the end; what commits meanwhile is the next catch-up's.
// locked says the caller holds the follow lock.
func (x *nftIndex) readLog(ctx context.Context, locked bool) error {
	end, err := x.logEnd(ctx)
	if err != nil {
		return err
	}
	for x.offset < end {
		to := min(end, x.offset+followBatch)
		var changed []struct {
			NFTID string `bun:"nft_id"`
		}
		err = x.s.db.NewSelect().TableExpr("nft_activity AS a").ColumnExpr("DISTINCT a.nft_id").
			Join("JOIN updates AS u ON u.update_id = a.update_id").
			Where("u.ledger_offset > ?", x.offset).Where("u.ledger_offset <= ?", to).Scan(ctx, &changed)
		if err != nil {
			return err
		}
		ids := make([]string, len(changed))
		for i, c := range changed {
			ids[i] = c.NFTID
		}
		if !locked {
			x.follow.Lock()
		}
		err := x.reread(ctx, ids)
		if err == nil {
			x.offset = to
		}
		if !locked {
			x.follow.Unlock()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// sync brings this instance's writes into the index before the write answers: it reads the
// NFTs a committed transaction changed again (already committed, so any read from now on
// sees them). The NFTs it minted it takes as the transaction wrote them (minted), without
// reading them: see putMinted.
func (x *nftIndex) sync(ctx context.Context, nftIDs []string, minted []mintedItems) {
	if len(nftIDs) == 0 || !x.started.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	x.follow.Lock()
	defer x.follow.Unlock()
	if !x.ready.Load() {
		return // not built yet: the build, which takes this lock, will read the change
	}
	if nftIDs = x.putMinted(minted, nftIDs); len(nftIDs) == 0 {
		return
	}
	if err := x.reread(ctx, nftIDs); err != nil {
		// The follower reads them again from the log within followEvery.
		x.s.log.Warn("the NFT index could not read a committed change; the follower will", "error", err.Error())
		x.kick()
	}
}

// mintedItems is the items a committed transaction minted into one collection, as it wrote
// them, and the collection's index as it was while the transaction ran.
type mintedItems struct {
	into  *collectionIndex // nil: the index had no such collection yet
	items []nftItem
}

// putMinted puts the NFTs a committed transaction minted into the index as it wrote them, and
// returns those of nftIDs still to read. It runs under the follow lock. A serial is minted
// once, so the items are the NFTs' first state; any later state came from a read after the
// commit, which left the serial in the index, or marked it gone when that read found it no
// longer live. The items of a serial the index holds or marked gone are not put, and those of
// a collection whose index was built again since the transaction ran (or did not have it) are
// read, not put.
func (x *nftIndex) putMinted(minted []mintedItems, nftIDs []string) []string {
	taken := map[string]bool{}
	for _, m := range minted {
		c := m.into
		if c == nil || x.collection(c.id, false) != c {
			continue
		}
		c.mu.Lock()
		for i := range m.items {
			if it := &m.items[i]; c.fresh(it.Serial) {
				c.put(it)
			}
			taken[m.items[i].NFTID] = true
		}
		c.mu.Unlock()
		x.s.nftPages.invalidate(c.id)
	}
	if len(taken) == 0 {
		return nftIDs
	}
	return slices.DeleteFunc(slices.Clone(nftIDs), func(id string) bool { return taken[id] })
}

// reread reads the NFTs named again and puts them in the index as they are now, or takes out
// those no longer live. It runs under the follow lock, so reads of the same NFT never
// overtake each other. The pages of the collections it changed end after it, so no page read
// before it is kept.
func (x *nftIndex) reread(ctx context.Context, nftIDs []string) error {
	touched := map[string]bool{}
	for chunk := range slices.Chunk(nftIDs, 1000) {
		var rows []nftItem
		if err := x.s.db.NewSelect().Model(&rows).Where("nft_id IN (?)", bun.In(chunk)).Scan(ctx); err != nil {
			return err
		}
		live := make(map[string]*nftItem, len(rows))
		for i := range rows {
			live[rows[i].NFTID] = &rows[i]
		}
		for _, id := range chunk {
			collectionID, serial, ok := splitNFTID(id)
			if !ok {
				continue
			}
			c := x.collection(collectionID, live[id] != nil)
			if c == nil {
				continue
			}
			c.mu.Lock()
			changed := true
			if it := live[id]; it != nil {
				if changed = !c.holds(it); changed {
					c.put(it)
				}
			} else {
				changed = int(serial) < len(c.items) && c.items[serial] != nil
				c.remove(serial)
				c.gone.Add(serial)
			}
			c.mu.Unlock()
			if !changed {
				// Read again with nothing new (the writer's own read, then the log's): its
				// collection's pages stay.
				continue
			}
			touched[collectionID] = true
		}
	}
	for id := range touched {
		x.s.nftPages.invalidate(id)
	}
	return nil
}

// collection returns the index of a collection, made when create is set and it has none.
func (x *nftIndex) collection(id string, create bool) *collectionIndex {
	colls := *x.colls.Load()
	if c := colls[id]; c != nil || !create {
		return c
	}
	next := make(map[string]*collectionIndex, len(colls)+1)
	for k, v := range colls {
		next[k] = v
	}
	c := newCollectionIndex(id)
	next[id] = c
	x.colls.Store(&next) // only catch-ups write, under the follow lock
	return c
}

// splitNFTID returns the collection and serial an NFT id (collection#serial) names.
func splitNFTID(id string) (string, uint32, bool) {
	i := strings.LastIndexByte(id, '#')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.ParseUint(id[i+1:], 10, 32)
	return id[:i], uint32(n), err == nil
}

// collectionIndex is the index of one collection's live NFTs.
type collectionIndex struct {
	mu sync.RWMutex
	id string

	items    []*indexedNFT // by serial
	all      *roaring.Bitmap
	gone     *roaring.Bitmap                       // serials a read found no longer live (putMinted)
	traits   map[string]map[string]*roaring.Bitmap // type -> value -> serials
	owners   map[string]*roaring.Bitmap
	listed   *roaring.Bitmap // with a listing, expired or not
	byAsc    *btree.BTreeG[priceEntry]
	byDesc   *btree.BTreeG[priceEntry]
	expiring *btree.BTreeG[expiryEntry] // listings with an expiry
	owned    map[string]string          // each owner's id, kept once
	kinds    map[Trait]*Trait           // each trait value, kept once
}

// indexedNFT is one live NFT as the index keeps it, compactly: its trait values and owner are
// the collection's shared copies. An entry never changes; a change replaces it.
type indexedNFT struct {
	serial      uint32
	traits      []*Trait
	contractID  string
	name, image string
	owner       string
	listing     *indexedListing
}

type indexedListing struct {
	cid       string
	price     Amount
	currency  Instrument
	expiresAt *Timestamp
	asc, desc string // the price's sort keys
}

// priceEntry is a listed NFT's place in one price order: its key, then its serial.
type priceEntry struct {
	key    string
	serial uint32
}

func (a priceEntry) less(b priceEntry) bool {
	if c := strings.Compare(a.key, b.key); c != 0 {
		return c < 0
	}
	return a.serial < b.serial
}

type expiryEntry struct {
	at     int64 // Unix microseconds
	serial uint32
}

func (a expiryEntry) less(b expiryEntry) bool {
	return a.at < b.at || a.at == b.at && a.serial < b.serial
}

func newCollectionIndex(id string) *collectionIndex {
	return &collectionIndex{
		id:       id,
		all:      roaring.New(),
		gone:     roaring.New(),
		traits:   map[string]map[string]*roaring.Bitmap{},
		owners:   map[string]*roaring.Bitmap{},
		listed:   roaring.New(),
		byAsc:    btree.NewG(32, priceEntry.less),
		byDesc:   btree.NewG(32, priceEntry.less),
		expiring: btree.NewG(32, expiryEntry.less),
		owned:    map[string]string{},
		kinds:    map[Trait]*Trait{},
	}
}

func (c *collectionIndex) owner(s string) string {
	if v, ok := c.owned[s]; ok {
		return v
	}
	c.owned[s] = s
	return s
}

func (c *collectionIndex) trait(t Trait) *Trait {
	if v, ok := c.kinds[t]; ok {
		return v
	}
	v := &t
	c.kinds[t] = v
	return v
}

// put sets the NFT it describes to it, replacing what the index had for its serial.
func (c *collectionIndex) put(it *nftItem) {
	serial := uint32(it.Serial)
	c.remove(serial)
	n := &indexedNFT{serial: serial, contractID: it.ContractID, name: it.Name, image: it.Image, owner: c.owner(it.Owner)}
	var traits []Trait
	_ = json.Unmarshal([]byte(it.Traits), &traits) // as the SQL path's view reads them
	n.traits = make([]*Trait, len(traits))
	for i, t := range traits {
		n.traits[i] = c.trait(t)
	}
	for int(serial) >= len(c.items) {
		c.items = append(c.items, nil)
	}
	c.items[serial] = n
	c.all.Add(serial)
	for _, t := range n.traits {
		vs := c.traits[t.Type]
		if vs == nil {
			vs = map[string]*roaring.Bitmap{}
			c.traits[t.Type] = vs
		}
		b := vs[t.Value]
		if b == nil {
			b = roaring.New()
			vs[t.Value] = b
		}
		b.Add(serial)
	}
	o := c.owners[n.owner]
	if o == nil {
		o = roaring.New()
		c.owners[n.owner] = o
	}
	o.Add(serial)
	if it.ListingCID != nil {
		l := &indexedListing{cid: *it.ListingCID, price: *it.ListPrice, currency: *it.ListCurrency, expiresAt: it.ListExpires,
			asc: it.PriceAscKey, desc: it.PriceDescKey}
		n.listing = l
		c.listed.Add(serial)
		c.byAsc.ReplaceOrInsert(priceEntry{l.asc, serial})
		c.byDesc.ReplaceOrInsert(priceEntry{l.desc, serial})
		if l.expiresAt != nil {
			c.expiring.ReplaceOrInsert(expiryEntry{l.expiresAt.UnixMicro(), serial})
		}
	}
}

// fresh tells whether the index has never had the serial: neither holds it nor saw it go.
func (c *collectionIndex) fresh(serial int) bool {
	held := serial >= 0 && serial < len(c.items) && c.items[serial] != nil
	return !held && !c.gone.Contains(uint32(serial))
}

// holds tells whether the index has the NFT exactly as it describes it. (An NFT's name,
// image and traits are fixed when it is minted.)
func (c *collectionIndex) holds(it *nftItem) bool {
	if it.Serial < 0 || it.Serial >= len(c.items) || c.items[it.Serial] == nil {
		return false
	}
	n := c.items[it.Serial]
	if n.contractID != it.ContractID || n.owner != it.Owner || (n.listing == nil) != (it.ListingCID == nil) {
		return false
	}
	if l := n.listing; l != nil {
		sameExpiry := (l.expiresAt == nil) == (it.ListExpires == nil) && (l.expiresAt == nil || l.expiresAt.Equal(it.ListExpires.Time))
		return l.cid == *it.ListingCID && l.asc == it.PriceAscKey && l.currency == *it.ListCurrency && sameExpiry
	}
	return true
}

// remove takes the NFT of serial out of the index, if it is there.
func (c *collectionIndex) remove(serial uint32) {
	if int(serial) >= len(c.items) || c.items[serial] == nil {
		return
	}
	n := c.items[serial]
	c.items[serial] = nil
	c.all.Remove(serial)
	for _, t := range n.traits {
		if b := c.traits[t.Type][t.Value]; b != nil {
			b.Remove(serial)
			if b.IsEmpty() {
				delete(c.traits[t.Type], t.Value)
			}
		}
	}
	if o := c.owners[n.owner]; o != nil {
		o.Remove(serial)
		if o.IsEmpty() {
			delete(c.owners, n.owner)
			delete(c.owned, n.owner)
		}
	}
	if l := n.listing; l != nil {
		c.listed.Remove(serial)
		c.byAsc.Delete(priceEntry{l.asc, serial})
		c.byDesc.Delete(priceEntry{l.desc, serial})
		if l.expiresAt != nil {
			c.expiring.Delete(expiryEntry{l.expiresAt.UnixMicro(), serial})
		}
	}
}

// nextExpiry is when the first listing expires after now, zero when none will.
func (c *collectionIndex) nextExpiry(now time.Time) time.Time {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var next time.Time
	c.expiring.AscendGreaterOrEqual(expiryEntry{at: now.UnixMicro() + 1}, func(e expiryEntry) bool {
		next = time.UnixMicro(e.at).UTC()
		return false
	})
	return next
}

// viewAt is the NFT as the API shows it at now.
func (n *indexedNFT) viewAt(collectionID string, now time.Time) NFTView {
	v := NFTView{ContractID: n.contractID, CollectionID: collectionID, Serial: int(n.serial), Name: n.name, Image: n.image,
		Owner: n.owner, Traits: make([]Trait, len(n.traits))}
	for i, t := range n.traits {
		v.Traits[i] = *t
	}
	if n.listedAt(now) {
		l := n.listing
		v.Listing = &ListingView{CID: l.cid, Seller: n.owner, Price: l.price, Currency: l.currency, ExpiresAt: l.expiresAt}
	}
	return v
}

// listedAt tells whether the NFT's listing holds at now.
func (n *indexedNFT) listedAt(now time.Time) bool {
	return n.listing != nil && (n.listing.expiresAt == nil || now.Before(n.listing.expiresAt.Time))
}

// nftQuery is a page request on a collection's NFTs, checked and with its prices as sort keys.
type nftQuery struct {
	filter     NFTFilter
	sort       NFTSort
	onlyListed bool
	minKey     string // "" for no bound
	maxKey     string
	minPrice   *Amount
	maxPrice   *Amount
}

// How the index finds a price run's NFTs: it sorts the candidates when they are few, and
// walks the price order when they are many, skipping about |listed|/|candidates| entries per
// NFT found. sortUnder 0 chooses by those costs; tests set a threshold (-1: always walk).
const smallRun = 0

// page reads the NFTs of q's page from the index: at most q.fetch() of them, in the read's
// direction, as readNFTs's queries return them.
func (c *collectionIndex) page(nq *nftQuery, q *pageQuery[nftKey], now time.Time, sortUnder int) []*indexedNFT {
	c.mu.RLock()
	defer c.mu.RUnlock()
	match := c.matching(nq.filter)
	if match.IsEmpty() {
		return nil
	}
	expired := roaring.New()
	c.expiring.Ascend(func(e expiryEntry) bool {
		if e.at > now.UnixMicro() {
			return false
		}
		expired.Add(e.serial)
		return true
	})
	listedNow := c.listed
	if !expired.IsEmpty() {
		listedNow = roaring.AndNot(c.listed, expired)
	}
	inRange := func(n *indexedNFT) bool {
		return (nq.minKey == "" || n.listing.asc >= nq.minKey) && (nq.maxKey == "" || n.listing.asc <= nq.maxKey)
	}
	fetch := int(q.fetch())
	var rows []*indexedNFT
	if nq.sort == SortSerial {
		set := match
		if nq.onlyListed {
			set = roaring.And(match, listedNow)
		}
		var from *uint32
		if q.from != nil {
			s := uint32(q.from.S)
			from = &s
		}
		c.bySerial(set, from, q.backward, fetch, func(n *indexedNFT) bool {
			return !nq.onlyListed || inRange(n)
		}, &rows)
		return rows
	}
	// A price sort reads two runs: the NFTs listed now by price, then (unless the filter
	// wants listed ones only) the rest by serial. A backward read takes them in reverse.
	runs := []bool{false} // whether the run is the rest
	if !nq.onlyListed {
		runs = append(runs, true)
	}
	if q.backward {
		slices.Reverse(runs)
	}
	started := q.from == nil
	for _, rest := range runs {
		if len(rows) >= fetch {
			break
		}
		inRun := q.from != nil && (q.from.K == noKey) == rest
		if !started && !inRun {
			continue
		}
		started = true
		if rest {
			var from *uint32
			if inRun {
				s := uint32(q.from.S)
				from = &s
			}
			c.bySerial(roaring.AndNot(match, listedNow), from, q.backward, fetch-len(rows), nil, &rows)
			continue
		}
		var from *priceEntry
		if inRun {
			from = &priceEntry{q.from.K, uint32(q.from.S)}
		}
		c.byPrice(nq, roaring.And(match, listedNow), from, q.backward, fetch-len(rows), sortUnder, &rows)
	}
	return rows
}

// matching is the set of live serials the filter's traits and owner allow. Every bitmap it
// reads holds live serials only, so the filter's own bitmaps are intersected, smallest first.
func (c *collectionIndex) matching(f NFTFilter) *roaring.Bitmap {
	var sets []*roaring.Bitmap
	for typ, values := range f.Traits {
		var any []*roaring.Bitmap
		for _, v := range values {
			if b := c.traits[typ][v]; b != nil {
				any = append(any, b)
			}
		}
		switch len(any) {
		case 0:
			return roaring.New()
		case 1:
			sets = append(sets, any[0])
		default:
			sets = append(sets, roaring.FastOr(any...))
		}
	}
	if f.Owner != "" {
		o := c.owners[f.Owner]
		if o == nil {
			return roaring.New()
		}
		sets = append(sets, o)
	}
	switch len(sets) {
	case 0:
		return c.all
	case 1:
		return sets[0]
	}
	slices.SortFunc(sets, func(a, b *roaring.Bitmap) int { return cmp.Compare(a.GetCardinality(), b.GetCardinality()) })
	out := roaring.And(sets[0], sets[1])
	for _, b := range sets[2:] {
		out.And(b)
	}
	return out
}

// bySerial appends to rows, up to n, the NFTs of set past from (nil: from the start, or the
// end backward) in serial order, those keep allows (nil: all).
func (c *collectionIndex) bySerial(set *roaring.Bitmap, from *uint32, backward bool, n int, keep func(*indexedNFT) bool, rows *[]*indexedNFT) {
	took := 0
	add := func(serial uint32) bool {
		it := c.items[serial]
		if keep == nil || keep(it) {
			*rows = append(*rows, it)
			took++
		}
		return took < n
	}
	if !backward {
		iter := set.Iterator()
		if from != nil {
			if *from == ^uint32(0) {
				return
			}
			iter.AdvanceIfNeeded(*from + 1)
		}
		for iter.HasNext() && add(iter.Next()) {
		}
		return
	}
	// Backward: the rank of the cursor says how many lie before it; select them one by one.
	before := set.GetCardinality()
	if from != nil {
		if *from == 0 {
			return
		}
		before = set.Rank(*from - 1)
	}
	for i := int64(before) - 1; i >= 0; i-- {
		serial, err := set.Select(uint32(i))
		if err != nil || !add(serial) {
			return
		}
	}
}

// byPrice appends to rows, up to n, the NFTs of set (listed now) in the query's price order,
// past from (nil: from the start, or the end backward), within its price bounds.
func (c *collectionIndex) byPrice(nq *nftQuery, set *roaring.Bitmap, from *priceEntry, backward bool, n, sortUnder int, rows *[]*indexedNFT) {
	desc := nq.sort == SortPriceDesc
	key := func(l *indexedListing) string {
		if desc {
			return l.desc
		}
		return l.asc
	}
	// The price bounds as keys of this order: lo <= key <= hi ("" for none).
	lo, hi := nq.minKey, nq.maxKey
	if desc {
		lo, hi = "", ""
		if nq.maxPrice != nil {
			lo = descKey(*nq.maxPrice)
		}
		if nq.minPrice != nil {
			hi = descKey(*nq.minPrice)
		}
	}
	past := func(e priceEntry) bool {
		if from == nil {
			return true
		}
		if backward {
			return e.less(*from)
		}
		return from.less(e)
	}
	inBounds := func(k string) bool { return (lo == "" || k >= lo) && (hi == "" || k <= hi) }

	size := set.GetCardinality()
	sortIt := uint64(sortUnder) >= size // a threshold a test set
	if sortUnder == 0 {
		// Sorting costs about |set|·log|set|; walking about n·|listed|/|set| entries.
		sortIt = size*size <= uint64(n)*c.listed.GetCardinality()
	}
	if sortUnder >= 0 && sortIt {
		var found []priceEntry
		for iter := set.Iterator(); iter.HasNext(); {
			serial := iter.Next()
			e := priceEntry{key(c.items[serial].listing), serial}
			if inBounds(e.key) && past(e) {
				found = append(found, e)
			}
		}
		slices.SortFunc(found, func(a, b priceEntry) int {
			if a.less(b) {
				return -1
			}
			if b.less(a) {
				return 1
			}
			return 0
		})
		if backward {
			slices.Reverse(found)
		}
		for _, e := range found[:min(n, len(found))] {
			*rows = append(*rows, c.items[e.serial])
		}
		return
	}
	tree := c.byAsc
	if desc {
		tree = c.byDesc
	}
	took := 0
	visit := func(e priceEntry) bool {
		if !inBounds(e.key) {
			// Past the far bound, nothing more can match.
			return backward && hi != "" && e.key > hi || !backward && lo != "" && e.key < lo
		}
		if !past(e) || !set.Contains(e.serial) {
			return true
		}
		*rows = append(*rows, c.items[e.serial])
		took++
		return took < n
	}
	if !backward {
		pivot := priceEntry{lo, 0}
		if from != nil && cmp.Compare(from.key, lo) >= 0 {
			pivot = *from
		}
		tree.AscendGreaterOrEqual(pivot, visit)
		return
	}
	if hi == "" && from == nil {
		tree.Descend(visit)
		return
	}
	pivot := priceEntry{hi, ^uint32(0)}
	if from != nil && (hi == "" || from.less(pivot)) {
		pivot = *from
	}
	tree.DescendLessOrEqual(pivot, visit)
}
