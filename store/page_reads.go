package store

import (
	"context"
	"sync"
	"time"

	"github.com/uptrace/bun"
)

// Reads records what the reads made under one context depended on, so that an answer built
// from them alone (a front door's response) can be kept and served again while it is current.
// Only a page served from a page cache says when it stops being current; any other read spoils
// the record: a statement run on the database (a page cache's miss included), or anything a
// front door reads that the store cannot follow (it calls Spoil).
type Reads struct {
	mu      sync.Mutex
	spoiled bool
	deps    []readDep
}

// readDep is one cached page a read was served: of scope, read at seq (wall time at), showing
// nothing that expires before until on the store's clock (zero for never).
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

// TrackReads returns a context under which the store records every read in the Reads it
// returns.
func TrackReads(ctx context.Context) (context.Context, *Reads) {
	r := new(Reads)
	return context.WithValue(ctx, readsKey{}, r), r
}

// Spoil marks the reads tracked under ctx (if any) as unfit to keep: what was built from them
// depends on something whose changes the store does not follow.
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

// Keepable tells whether every read came from a page cache, so an answer built from them may
// be kept (and checked with Current before each use).
func (r *Reads) Keepable() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.spoiled
}

// Current tells whether every page the reads were served is still current on s: no write to
// its scope has committed since (on any instance that notified this one), none of its listings
// has expired, and the page cache's TTL has not passed. A spoiled record is never current.
func (r *Reads) Current(s *Store) bool {
	r.mu.Lock()
	spoiled, deps := r.spoiled, r.deps
	r.mu.Unlock()
	if spoiled {
		return false
	}
	now := s.now()
	for _, d := range deps {
		if !d.cache.stillCurrent(d.scope, d.seq, d.at, d.until, now) {
			return false
		}
	}
	return true
}

// spoilOnQuery spoils the tracked reads of any statement: its answer is not in a page cache.
type spoilOnQuery struct{}

func (spoilOnQuery) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	Spoil(ctx)
	return ctx
}

func (spoilOnQuery) AfterQuery(context.Context, *bun.QueryEvent) {}
