package pagecache

import (
	"context"
	"sync"
	"time"
)

// Reads records what the reads made under one context depended on, so that an answer built
// from them alone (a front door's response) can be kept and served again while it is current.
// Only a page served from a Cache says when it stops being current; any other read spoils
// the record: a Cache's miss, or anything else whose changes no one follows (whoever makes
// such a read calls Spoil: the store does for every statement it runs on its database).
type Reads struct {
	mu      sync.Mutex
	spoiled bool
	deps    []readDep
}

// readDep is one cached page a read was served: of scope, read at seq (wall time at), showing
// nothing that expires before until on the caller's clock (zero for never).
type readDep struct {
	cache     pageValidator
	scope     string
	seq       uint64
	at, until time.Time
}

// pageValidator is what a dependency asks its page cache: whether a page it kept still is.
type pageValidator interface {
	stillCurrent(scope string, seq uint64, at, until, now time.Time) bool
}

type readsKey struct{}

// TrackReads returns a context under which every read is recorded in the Reads it returns.
func TrackReads(ctx context.Context) (context.Context, *Reads) {
	r := new(Reads)
	return context.WithValue(ctx, readsKey{}, r), r
}

// Spoil marks the reads tracked under ctx (if any) as unfit to keep: what was built from them
// depends on something whose changes no Cache follows.
func Spoil(ctx context.Context) {
	if r, _ := ctx.Value(readsKey{}).(*Reads); r != nil {
		r.mu.Lock()
		r.spoiled = true
		r.mu.Unlock()
	}
}

// noteCachedRead records that a read under ctx was served a cached page.
func noteCachedRead(ctx context.Context, d readDep) {
	if r, _ := ctx.Value(readsKey{}).(*Reads); r != nil {
		r.mu.Lock()
		r.deps = append(r.deps, d)
		r.mu.Unlock()
	}
}

// Keepable tells whether every read came from a Cache, so an answer built from them may
// be kept (and checked with Current before each use).
func (r *Reads) Keepable() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.spoiled
}

// Clock is what Reads.Current asks: the time on the clock the pages' expiries are on (the
// store's).
type Clock interface {
	Now() time.Time
}

// Current tells whether every page the reads were served is still current at clock's time:
// its scope has not been invalidated since (the store invalidates a scope for every write to
// it that commits, on any of its instances), nothing on it has expired, and its cache's TTL has
// not passed. A spoiled record is never current.
func (r *Reads) Current(clock Clock) bool {
	r.mu.Lock()
	spoiled, deps := r.spoiled, r.deps
	r.mu.Unlock()
	if spoiled {
		return false
	}
	now := clock.Now()
	for _, d := range deps {
		if !d.cache.stillCurrent(d.scope, d.seq, d.at, d.until, now) {
			return false
		}
	}
	return true
}
