package store

import (
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

	"github.com/uptrace/bun"

	"marketd/store/internal/keyset"
	"marketd/store/internal/nftindex"
)

// The NFT index answers a page of a collection's NFTs from memory, at a cost that follows the
// page rather than how many NFTs the collection holds or how many a filter skips: its data
// structure is package nftindex, which this file builds and keeps current.
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
// Answers and cursors are exactly those of the SQL path ([Store.queryNFTs]), which stays as the
// reference the tests compare against, and serves reads until the index is built.
type nftIndex struct {
	s *Store

	follow    sync.Mutex // one catch-up at a time; it guards offset and served
	offset    int64      // the last update offset applied
	requested atomic.Uint64
	served    uint64

	index *nftindex.Index // its collections are added and replaced under the follow lock only
	ready atomic.Bool
	// forgets counts forget calls: a build that began before the last one is void.
	forgets atomic.Uint64
	state   atomic.Pointer[string] // why the index is not ready, for /readyz
	kicks   chan struct{}

	started atomic.Bool
	stop    context.CancelFunc
	done    chan struct{}

	builtIn time.Duration // how long the build took

	sortUnder atomic.Int64 // nftindex.SortByCost, or what a test sets
}

// followEvery bounds how long a change committed by another process takes to reach the index
// when no notification announced it (SQLite, or a lost notification).
const followEvery = 250 * time.Millisecond

// followBatch is how many updates one round of a catch-up reads.
const followBatch = 5000

func newNFTIndex(s *Store) *nftIndex {
	x := &nftIndex{s: s, kicks: make(chan struct{}, 1), index: nftindex.New()}
	x.sortUnder.Store(nftindex.SortByCost)
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

// NFTIndexStats describes the NFT index, for its benchmark (BenchmarkNFTIndex).
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
	sz := x.index.Size()
	st.NFTs, st.Listed, st.BitmapBytes = sz.NFTs, sz.Listed, sz.BitmapBytes
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
	colls := map[string]*nftindex.Collection{}
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
				c = nftindex.NewCollection(it.CollectionID)
				colls[it.CollectionID] = c
			}
			c.Put(it.indexed())
		}
		n += len(rows)
		x.setState("being built: %d NFTs loaded", n)
		if len(rows) < batch {
			break
		}
		after = rows[len(rows)-1].NFTID
	}
	x.index.Replace(colls)
	if err := x.loadOffers(ctx); err != nil {
		return err
	}
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
		offers, err := x.offersChangedIn(ctx, x.offset, to)
		if err != nil {
			return err
		}
		if !locked {
			x.follow.Lock()
		}
		err = x.reread(ctx, ids)
		if err == nil {
			err = x.rereadOffers(ctx, offers)
		}
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

// sync brings this instance's writes into the index, and the offer versions they created or
// consumed into the offer book, before the write answers: it reads the NFTs a committed
// transaction changed again (already committed, so any read from now on
// sees them). The NFTs it minted it takes as the transaction wrote them (minted), without
// reading them: see putMinted.
func (x *nftIndex) sync(ctx context.Context, nftIDs []string, minted []mintedItems, offers []string) {
	if len(nftIDs) == 0 && len(offers) == 0 || !x.started.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	x.follow.Lock()
	defer x.follow.Unlock()
	if !x.ready.Load() {
		return // not built yet: the build, which takes this lock, will read the change
	}
	nftIDs = x.putMinted(minted, nftIDs)
	err := x.reread(ctx, nftIDs)
	if err == nil {
		err = x.rereadOffers(ctx, offers)
	}
	if err != nil {
		// The follower reads them again from the log within followEvery.
		x.s.log.Warn("the NFT index could not read a committed change; the follower will", "error", err.Error())
		x.kick()
	}
}

// mintedItems is the items a committed transaction minted into one collection, as it wrote
// them, and the collection's index as it was while the transaction ran.
type mintedItems struct {
	into  *nftindex.Collection // nil: the index had no such collection yet
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
		if c == nil || x.index.Collection(c.ID()) != c {
			continue
		}
		ns := make([]nftindex.NFT, len(m.items))
		for i := range m.items {
			ns[i] = m.items[i].indexed()
			taken[m.items[i].NFTID] = true
		}
		c.PutFresh(ns)
		x.s.nftPages.Invalidate(c.ID())
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
			it := live[id]
			c := x.index.Collection(collectionID)
			if c == nil && it != nil {
				c = x.index.Add(collectionID) // only catch-ups add, under the follow lock
			}
			if c == nil {
				continue
			}
			var changed bool
			if it != nil {
				changed = c.Set(it.indexed())
			} else {
				changed = c.Gone(serial)
			}
			if !changed {
				// Read again with nothing new (the writer's own read, then the log's): its
				// collection's pages stay.
				continue
			}
			touched[collectionID] = true
		}
	}
	for id := range touched {
		x.s.nftPages.Invalidate(id)
	}
	return nil
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

// indexed is the item as the NFT index takes it.
func (it *nftItem) indexed() nftindex.NFT {
	n := nftindex.NFT{Serial: uint32(it.Serial), ContractID: it.ContractID, Fields: it.Meta, Owner: it.Owner}
	_ = json.Unmarshal([]byte(it.Traits), &n.Traits) // as the SQL path's view reads them
	if it.ListingCID != nil {
		l := &nftindex.Listing{CID: *it.ListingCID, Price: it.ListPrice.Decimal(), Currency: string(*it.ListCurrency),
			AscKey: it.PriceAscKey, DescKey: it.PriceDescKey}
		if it.ListExpires != nil {
			l.ExpiresAt = &it.ListExpires.Time
		}
		n.Listing = l
	}
	return n
}

// indexView is the NFT as the API shows it at now.
func indexView(n *nftindex.Entry, collectionID string, now time.Time) NFTView {
	v := NFTView{ContractID: n.ContractID, CollectionID: collectionID, Serial: int(n.Serial), Fields: n.Fields,
		Owner: n.Owner, Traits: make([]Trait, len(n.Traits))}
	for i, t := range n.Traits {
		v.Traits[i] = Trait(*t)
	}
	if n.ListedAt(now) {
		l := n.Listing
		v.Listing = &ListingView{CID: l.CID, Seller: n.Owner, Price: amountOf(l.Price), Currency: Instrument(l.Currency)}
		if l.ExpiresAt != nil {
			v.Listing.ExpiresAt = &Timestamp{Time: *l.ExpiresAt}
		}
	}
	return v
}

// indexQuery is the page request nq and q make, as the NFT index takes it.
func (nq *nftQuery) indexQuery(q *keyset.Query[nftKey], sortUnder int) *nftindex.Query {
	iq := &nftindex.Query{Traits: nq.filter.Traits, Owner: nq.filter.Owner, Listed: nq.onlyListed,
		MinKey: nq.minKey, MaxKey: nq.maxKey, Backward: q.Backward, Limit: int(q.Fetch()), SortUnder: sortUnder}
	switch nq.sort {
	case SortSerial:
		iq.Sort = nftindex.BySerial
	case SortPriceDesc:
		iq.Sort = nftindex.ByPriceDesc
		if nq.maxPrice != nil {
			iq.DescLo = descKey(*nq.maxPrice)
		}
		if nq.minPrice != nil {
			iq.DescHi = descKey(*nq.minPrice)
		}
	default:
		iq.Sort = nftindex.ByPriceAsc
	}
	if q.From != nil {
		iq.From = &nftindex.Cursor{Key: q.From.K, Serial: uint32(q.From.S), Unlisted: q.From.K == noKey}
	}
	return iq
}
