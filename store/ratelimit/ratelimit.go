// Package ratelimit counts requests per key in fixed windows. The limiter is an interface so a
// shared store (Redis) can replace the in-memory one when several instances serve one API; its
// state can be listed and reset for the admin console.
package ratelimit

import (
	"context"
	"hash/maphash"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Limiter decides whether a request under key may proceed.
type Limiter interface {
	// Allow counts one request against key's window of at most limit requests: AllowN(key, 1, limit).
	Allow(key string, limit int) Decision
	// AllowN counts n requests at once (an operation that costs n reads), all or none: it is
	// refused, and counted as one refusal, when fewer than n are left in the window.
	AllowN(key string, n, limit int) Decision
	// State lists every key with a live window, sorted by key.
	State() []KeyState
	// Reset forgets key's window; it reports whether there was one.
	Reset(key string) bool
}

// ContextLimiter is a Limiter whose checks carry a request's context (its trace) to a round
// trip they make.
type ContextLimiter interface {
	AllowNContext(ctx context.Context, key string, n, limit int) Decision
}

// AllowN is l.AllowN for the request of ctx: by AllowNContext when l has it.
func AllowN(ctx context.Context, l Limiter, key string, n, limit int) Decision {
	if c, ok := l.(ContextLimiter); ok {
		return c.AllowNContext(ctx, key, n, limit)
	}
	return l.AllowN(key, n, limit)
}

// Status says which backend answers a limiter's checks, for readiness and metrics.
type Status struct {
	Backend  string // "memory" or "redis"
	Fallback bool   // the shared backend is unreachable and the in-memory limiter answers
	Error    string // why, while Fallback
}

// Reporter is a Limiter that can tell its Status; one that cannot is taken to be in memory.
type Reporter interface {
	Status() Status
}

// StatusOf reports l's status.
func StatusOf(l Limiter) Status {
	if r, ok := l.(Reporter); ok {
		return r.Status()
	}
	return Status{Backend: "memory"}
}

// Decision is the outcome of one Allow.
type Decision struct {
	Allowed   bool
	Limit     int
	Remaining int
	ResetIn   time.Duration // until the window resets
}

// ResetSeconds is ResetIn in whole seconds, rounded up, at least 1: what the RateLimit-Reset
// and Retry-After headers say.
func (d Decision) ResetSeconds() int64 { return max(int64(math.Ceil(d.ResetIn.Seconds())), 1) }

// SetHeaders writes the decision as every front door answers a limited request: the
// RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset headers, and Retry-After when it
// is a refusal. A decision of no limit (Limit 0) writes nothing. A request counted against
// several budgets (an onboarding call is a sign-in and a prepare or an execute) keeps the
// headers of the one with the fewest requests remaining, or of the one that refused it.
func (d Decision) SetHeaders(h http.Header) {
	if d.Limit <= 0 {
		return
	}
	if prev, err := strconv.Atoi(h.Get("RateLimit-Remaining")); d.Allowed && err == nil && d.Remaining >= prev {
		return
	}
	reset := strconv.FormatInt(d.ResetSeconds(), 10)
	h.Set("RateLimit-Limit", strconv.Itoa(d.Limit))
	h.Set("RateLimit-Remaining", strconv.Itoa(d.Remaining))
	h.Set("RateLimit-Reset", reset)
	if !d.Allowed {
		h.Set("Retry-After", reset)
	}
}

// KeyState is one key's window, for inspection.
type KeyState struct {
	Key           string
	Limit         int
	Used          int
	Remaining     int
	WindowStart   time.Time
	ResetAt       time.Time
	Rejected      int   // requests refused in this window
	RejectedTotal int64 // requests refused since the key was last idle for a whole window
}

// DefaultMaxKeys bounds the keys a Memory limiter holds: about 100 bytes each, 10 MB in all.
const DefaultMaxKeys = 100_000

// Memory is an in-process Limiter with fixed windows that start at a key's first request.
// It holds at most SetMaxKeys keys (DefaultMaxKeys), however many distinct clients arrive: a
// new key that finds its shard full evicts one of a few sampled keys, as Redis does.
type Memory struct {
	now      func() time.Time
	window   time.Duration
	seed     maphash.Seed
	perShard int
	shards   [32]shard
}

type shard struct {
	mu    sync.Mutex
	keys  map[string]*counter
	calls int
}

type counter struct {
	limit         int
	start         time.Time
	used          int
	rejected      int
	rejectedTotal int64
}

// NewMemory returns a limiter with windows of the given length, reading time from now.
func NewMemory(window time.Duration, now func() time.Time) *Memory {
	m := &Memory{now: now, window: window, seed: maphash.MakeSeed()}
	for i := range m.shards {
		m.shards[i].keys = make(map[string]*counter)
	}
	m.SetMaxKeys(DefaultMaxKeys)
	return m
}

// Status reports the in-memory backend.
func (m *Memory) Status() Status { return Status{Backend: "memory"} }

// SetMaxKeys bounds how many keys m holds (rounded up to a multiple of its 32 shards).
func (m *Memory) SetMaxKeys(n int) {
	m.perShard = max((n+len(m.shards)-1)/len(m.shards), 1)
}

// Len is how many keys m holds, live or not yet swept.
func (m *Memory) Len() int {
	n := 0
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		n += len(sh.keys)
		sh.mu.Unlock()
	}
	return n
}

func (m *Memory) shard(key string) *shard {
	return &m.shards[maphash.String(m.seed, key)%uint64(len(m.shards))]
}

// Allow counts one request. The request that finds the window full is refused and counted
// as refused; the first request after the window ends opens the next one.
func (m *Memory) Allow(key string, limit int) Decision { return m.AllowN(key, 1, limit) }

// AllowN counts n requests at once, or refuses them all (one refusal) when fewer than n are
// left in the window.
func (m *Memory) AllowN(key string, n, limit int) Decision {
	n = max(n, 1)
	now := m.now()
	sh := m.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.calls++
	if sh.calls%4096 == 0 {
		sh.sweep(now, m.window)
	}
	c := sh.keys[key]
	if c == nil {
		if len(sh.keys) >= m.perShard {
			sh.evict(now, m.window)
		}
		c = &counter{start: now}
		sh.keys[key] = c
	}
	if !now.Before(c.start.Add(m.window)) {
		if now.Sub(c.start) >= 2*m.window {
			c.rejectedTotal = 0 // idle for a whole window: a fresh history
		}
		c.start, c.used, c.rejected = now, 0, 0
	}
	c.limit = limit
	d := Decision{Limit: limit, ResetIn: c.start.Add(m.window).Sub(now)}
	if c.used+n > limit {
		c.rejected++
		c.rejectedTotal++
		d.Remaining = max(limit-c.used, 0)
		return d
	}
	c.used += n
	d.Allowed, d.Remaining = true, limit-c.used
	return d
}

// evict drops, of a few keys sampled at random (map order is random), the one that has
// used least of its window, an ended window first and the older on a tie. A flood of new
// addresses (one request each) so evicts its own keys, not a busy client's, and a client
// that spent its budget cannot shed its window by flooding.
func (sh *shard) evict(now time.Time, window time.Duration) {
	var victim string
	var best *counter
	bestUsed, n := 0, 0
	for k, c := range sh.keys {
		used := c.used
		if !now.Before(c.start.Add(window)) {
			used = -1
		}
		if best == nil || used < bestUsed || (used == bestUsed && c.start.Before(best.start)) {
			victim, best, bestUsed = k, c, used
		}
		if n++; n == 8 {
			break
		}
	}
	delete(sh.keys, victim)
}

// sweep drops keys whose window ended a whole window ago.
func (sh *shard) sweep(now time.Time, window time.Duration) {
	for k, c := range sh.keys {
		if now.Sub(c.start) >= 2*window {
			delete(sh.keys, k)
		}
	}
}

// State lists the keys whose window is still open or ended less than a window ago.
func (m *Memory) State() []KeyState {
	now := m.now()
	var out []KeyState
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		for k, c := range sh.keys {
			if now.Sub(c.start) >= 2*m.window {
				continue
			}
			st := KeyState{Key: k, Limit: c.limit, WindowStart: c.start, ResetAt: c.start.Add(m.window), RejectedTotal: c.rejectedTotal}
			if now.Before(st.ResetAt) {
				st.Used, st.Rejected = c.used, c.rejected
			}
			st.Remaining = max(st.Limit-st.Used, 0)
			out = append(out, st)
		}
		sh.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b KeyState) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// Reset forgets key's window, so its next request opens a fresh one.
func (m *Memory) Reset(key string) bool {
	sh := m.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	_, ok := sh.keys[key]
	delete(sh.keys, key)
	return ok
}
