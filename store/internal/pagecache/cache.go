// Package pagecache keeps pages of read lists in memory, and records which kept pages an
// answer built from them was served (Reads), so that the answer can be kept as long as they are.
//
// A page belongs to a scope: a write to the scope invalidates its pages, and only pages read
// entirely after that are kept again. A page also ends at a time its reader gives (when
// something it shows expires, on the caller's clock) and after the cache's TTL (on the wall
// clock). Callers asking for a page that is being read share that read (a flight) unless a
// write to its scope came between. A horizon is one time kept per scope beside its pages:
// until when nothing on them expires.
//
// The package does not know the store that uses it: what a page is, how it is read, which
// scope a write touches and what time it is are the caller's; so is the clock Reads.Current
// asks.
package pagecache

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Cache keeps pages of type P by key K: the lists every dApp and dashboard polls change only
// when a write commits to what they read, or when something they show expires. Each page
// belongs to a scope (for the store, a collection, or "" for a list over all of them); a
// write invalidates its scope, and only pages read entirely after that are kept again.
type Cache[K comparable, P any] struct {
	mu       sync.Mutex
	seq      uint64            // counts invalidations
	scopeSeq map[string]uint64 // the seq of each scope's last invalidation
	allSeq   uint64            // the seq of the last invalidation of every scope
	entries  map[K]entry[P]
	horizons map[string]horizon // per scope: until when nothing on its pages expires
	items    int                // what the entries hold, against maxItems
	maxItems int
	ttl      time.Duration // below 0, nothing is kept
	flights  map[K]*flight[P]
}

// flight is one read of a page under way, which callers asking for the same page while
// no write to its scope has committed share instead of each reading it.
type flight[P any] struct {
	seq     uint64
	waiters int // callers sharing it, besides the one reading
	done    chan struct{}
	page    P
	until   time.Time
	err     error
}

type entry[P any] struct {
	scope string
	seq   uint64
	at    time.Time // on the wall clock, when it was read
	until time.Time // on the caller's clock, when something the page may show expires; zero for none
	items int
	page  P
}

// horizon is when something on a scope's pages next expires (zero for never), as read at seq.
type horizon struct {
	seq   uint64
	at    time.Time
	until time.Time
}

// New returns a cache that holds pages of at most maxItems items in all (past it, it starts
// over) for at most ttl each; a ttl below zero keeps nothing.
func New[K comparable, P any](maxItems int, ttl time.Duration) *Cache[K, P] {
	return &Cache[K, P]{maxItems: maxItems, ttl: ttl}
}

// Off tells whether the cache keeps nothing (its TTL is below zero).
func (c *Cache[K, P]) Off() bool { return c.ttl < 0 }

// Get returns page k of scope at the caller's time now: from memory while it is current, else
// by read, given the token a page read from now on must bring back to keep. Callers that ask
// for a page being read share that read, unless a write to the scope committed since it began.
// read returns the page, when something on it expires (zero for never) and its size.
func (c *Cache[K, P]) Get(ctx context.Context, k K, scope string, now time.Time, read func(seq uint64) (P, time.Time, int, error)) (P, error) {
	if c.ttl < 0 {
		Spoil(ctx)
		p, _, _, err := read(0)
		return p, err
	}
	c.mu.Lock()
	if e, ok := c.entries[k]; ok && c.current(e.scope, e.seq, e.at, e.until, now) {
		c.mu.Unlock()
		noteCachedRead(ctx, readDep{cache: c, scope: e.scope, seq: e.seq, at: e.at, until: e.until})
		return e.page, nil
	}
	if f := c.flights[k]; f != nil && c.valid(scope, f.seq) {
		f.waiters++
		c.mu.Unlock()
		Spoil(ctx) // not from memory: whoever tracks these reads cannot tell when it changes
		select {
		case <-f.done:
		case <-ctx.Done():
			var zero P
			return zero, ctx.Err()
		}
		if f.err == nil && (f.until.IsZero() || now.Before(f.until)) {
			return f.page, nil
		}
		// The shared read failed (its caller may have gone) or ended before now: read alone.
		p, _, _, err := read(c.token())
		return p, err
	}
	f := &flight[P]{seq: c.seq, done: make(chan struct{})}
	if c.flights == nil {
		c.flights = map[K]*flight[P]{}
	}
	c.flights[k] = f
	c.mu.Unlock()
	Spoil(ctx)

	at := time.Now()
	var items int
	f.err = errReadPanicked // until read returns: a panic must not leave the others waiting
	defer func() {
		c.mu.Lock()
		if c.flights[k] == f {
			delete(c.flights, k)
		}
		c.mu.Unlock()
		close(f.done)
	}()
	f.page, f.until, items, f.err = read(f.seq)
	if f.err == nil {
		c.keep(k, scope, f.seq, at, f.until, items, f.page)
	}
	return f.page, f.err
}

var errReadPanicked = errors.New("the shared read of a page panicked")

// token is what a read beginning now must bring back to keep what it read.
func (c *Cache[K, P]) token() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seq
}

// valid tells whether a page read at seq is still current for its scope.
func (c *Cache[K, P]) valid(scope string, seq uint64) bool {
	return seq >= c.allSeq && seq >= c.scopeSeq[scope]
}

// current tells whether a page or horizon of scope, read at seq (wall time at), may still
// be served at the caller's time now.
func (c *Cache[K, P]) current(scope string, seq uint64, at, until, now time.Time) bool {
	return c.valid(scope, seq) && time.Since(at) < c.ttl && (until.IsZero() || now.Before(until))
}

// stillCurrent is current under the cache's lock, for a page served earlier (Reads.Current).
func (c *Cache[K, P]) stillCurrent(scope string, seq uint64, at, until, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.current(scope, seq, at, until, now)
}

// Horizon returns when something on the pages of scope next expires, as kept, if it still
// holds at now.
func (c *Cache[K, P]) Horizon(scope string, now time.Time) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.horizons[scope]
	if ok && c.current(scope, h.seq, h.at, h.until, now) {
		return h.until, true
	}
	return time.Time{}, false
}

// KeepHorizon keeps when something on the pages of scope next expires (until), read at wall
// time read by a read that Get gave token seq, unless the scope was invalidated since.
func (c *Cache[K, P]) KeepHorizon(scope string, seq uint64, read, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ttl < 0 || !c.valid(scope, seq) {
		return
	}
	if c.horizons == nil {
		c.horizons = map[string]horizon{}
	}
	c.horizons[scope] = horizon{seq: seq, at: read, until: until}
}

// keep caches page p of scope, read since start gave token seq (at wall time read), unless
// its scope was invalidated since. items is its size, for the bound.
func (c *Cache[K, P]) keep(k K, scope string, seq uint64, read, until time.Time, items int, p P) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ttl < 0 || !c.valid(scope, seq) {
		return
	}
	if c.items+items > c.maxItems {
		// Full: start over. The scopes' history goes too; every page read before now is void.
		c.entries, c.items, c.scopeSeq, c.horizons, c.allSeq = nil, 0, nil, nil, c.seq
		if !c.valid(scope, seq) {
			return
		}
	}
	if c.entries == nil {
		c.entries = map[K]entry[P]{}
	}
	if old, ok := c.entries[k]; ok {
		c.items -= old.items
	}
	c.entries[k] = entry[P]{scope: scope, seq: seq, at: read, until: until, items: items, page: p}
	c.items += items
}

// Invalidate voids the pages of scope: a write to it has committed (or may have).
func (c *Cache[K, P]) Invalidate(scope string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	if c.scopeSeq == nil {
		c.scopeSeq = map[string]uint64{}
	}
	c.scopeSeq[scope] = c.seq
}

// InvalidateAll voids every page.
func (c *Cache[K, P]) InvalidateAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	c.allSeq = c.seq
	c.entries, c.items, c.scopeSeq, c.horizons = nil, 0, nil, nil
}
