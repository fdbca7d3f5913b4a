package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
)

// KeyPrefix begins every Redis key the limiter writes.
const KeyPrefix = "marketd:ratelimit:"

// countScript counts in one atomic round trip what an instance admitted on its own since its
// last report (ARGV[4]) and refused (ARGV[5]), then, when ARGV[6] is n > 0, decides n more
// requests at once, all or none, as Memory.AllowN does (0 only reports). A key's window is a hash of its start (µs, the caller's
// clock), used, rejected and rejected-since-idle counts. It expires two windows after its
// last request, so Redis holds only keys active in the last two windows. Counts reported
// for a window that has ended are dropped with it.
var countScript = redis.NewScript(`
local now, win, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local add, rejn, decide = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local h = redis.call('HMGET', KEYS[1], 'start', 'used', 'rejected', 'rejtotal')
local start, used, rej, rejtotal = tonumber(h[1]), tonumber(h[2]) or 0, tonumber(h[3]) or 0, tonumber(h[4]) or 0
if start == nil then
  start, used, rej, rejtotal = now, 0, 0, 0
elseif now >= start + win then
  if now - start >= 2 * win then rejtotal = 0 end
  start, used, rej, add, rejn = now, 0, 0, 0, 0
end
used, rej, rejtotal = used + add, rej + rejn, rejtotal + rejn
local allowed = 0
if decide > 0 then
  if used + decide <= limit then
    used = used + decide
    allowed = 1
  else
    rej = rej + 1
    rejtotal = rejtotal + 1
  end
end
redis.call('HSET', KEYS[1], 'start', start, 'used', used, 'rejected', rej, 'rejtotal', rejtotal, 'limit', limit)
redis.call('PEXPIRE', KEYS[1], math.ceil(2 * win / 1000))
return {allowed, used, start}
`)

// Redis is a Limiter whose windows live in Redis, shared by every instance that names the same
// server: the same limits, keys and windows as Memory. While Redis does not answer, an
// in-memory limiter decides (logged once, reported by Status), and Redis is tried again
// every second; its first answer ends the fallback.
//
// An instance does not ask Redis for every request. Between two reports it admits, on its
// own, up to a thirty-second of what the window had left at its last report (never more than
// 64), and reports them with its next call (or within a second); once Redis says the window
// is spent, it refuses on its own until the window ends, and reports those refusals the same
// way. So a busy key costs a round trip every few dozen requests, and a flood's refusals
// cost none. Accuracy: an instance never refuses a request the shared count would admit
// (what it counts on its own are requests it admitted), and can take the fleet past the
// limit by at most what it admitted on its own since its last report: a thirty-second of
// what was left then, at most 64 (with 300 a minute, at most 9 per instance per window).
// Budgets under 32, and the last 32 requests of any budget, are decided in Redis one by one,
// exactly as Memory decides them.
type Redis struct {
	client   *redis.Client
	window   time.Duration
	now      func() time.Time
	log      *slog.Logger
	fallback *Memory
	tallies  [32]tallyShard
	perShard atomic.Int64
	seed     maphash.Seed
	stop     chan struct{}

	mu      sync.Mutex
	down    bool
	lastErr string
	retryAt time.Time // wall clock: when to try Redis again while down
}

// NewRedis connects to the Redis at url (redis://host:port[/db]). It does not fail when Redis
// is down: the limiter starts on its fallback.
func NewRedis(url string, window time.Duration, now func() time.Time, log *slog.Logger) (*Redis, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redis %q: %w", url, err)
	}
	// A check must not hold a request up for long when Redis is slow or gone.
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = 500*time.Millisecond, 500*time.Millisecond, 500*time.Millisecond
	opt.MaxRetries = 0
	if log == nil {
		log = slog.Default()
	}
	client := redis.NewClient(opt)
	// Each round trip a request makes is a span of its trace: the command's name, never its
	// keys or arguments; none without a traced request (childSpans).
	if err := redisotel.InstrumentTracing(client, redisotel.WithTracerProvider(childSpans{}),
		redisotel.WithDBStatement(false), redisotel.WithCallerEnabled(false)); err != nil {
		return nil, fmt.Errorf("redis tracing: %w", err)
	}
	r := &Redis{client: client, window: window, now: now, log: log, fallback: NewMemory(window, now),
		seed: maphash.MakeSeed(), stop: make(chan struct{})}
	for i := range r.tallies {
		r.tallies[i].keys = map[string]*tally{}
	}
	r.SetMaxKeys(DefaultMaxKeys)
	go r.reportRefusals()
	return r, nil
}

// reportRefusals sends what was decided in memory to Redis every second, until Close.
func (r *Redis) reportRefusals() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			r.mu.Lock()
			down := r.down
			r.mu.Unlock()
			if !down { // while Redis is down, Allow probes it; the counts wait
				ctx, cancel := r.ctx()
				if sent, err := r.flush(ctx); sent {
					r.answered(err)
				}
				cancel()
			}
		}
	}
}

// tally is what an instance knows and has not yet reported of one key's window.
type tally struct {
	start    time.Time // the window's start, as Redis has it
	limit    int
	known    int  // the window's count in Redis at the last report
	admitted int  // requests admitted here since
	sending  int  // admitted requests being reported now, not yet in known
	spent    bool // Redis said the window is spent: refuse here until it ends
	rejected int  // refusals made here since the last report
	// flight, while a round trip for this key is under way, is closed when its answer is in.
	flight chan struct{}
}

type tallyShard struct {
	mu    sync.Mutex
	keys  map[string]*tally
	calls int
}

// SetMaxKeys bounds how many keys r keeps tallies of (DefaultMaxKeys unless set), however
// many clients arrive; rounded up to a multiple of its 32 shards.
func (r *Redis) SetMaxKeys(n int) {
	r.perShard.Store(int64(max((n+len(r.tallies)-1)/len(r.tallies), 1)))
}

// Held is how many keys the instance keeps tallies of.
func (r *Redis) Held() int {
	n := 0
	for i := range r.tallies {
		sh := &r.tallies[i]
		sh.mu.Lock()
		n += len(sh.keys)
		sh.mu.Unlock()
	}
	return n
}

// onOwn is how many requests an instance may admit without asking Redis, knowing the window
// had used of limit at its last report: a thirty-second of what was left, at most 64. That
// is also how far past the limit an instance can take the fleet in a window.
func onOwn(limit, used int) int { return min((limit-used)/32, 64) }

func (r *Redis) tallyShard(key string) *tallyShard {
	return &r.tallies[maphash.String(r.seed, key)%uint64(len(r.tallies))]
}

// current tells whether t still describes its key's window at now, for limit.
func (r *Redis) current(t *tally, limit int, now time.Time) bool {
	return t != nil && t.limit == limit && now.Before(t.start.Add(r.window))
}

// Close stops reporting refusals and closes the connections to Redis.
func (r *Redis) Close() error {
	close(r.stop)
	return r.client.Close()
}

// Fallback is the in-memory limiter that decides while Redis is unreachable.
func (r *Redis) Fallback() *Memory { return r.fallback }

// Status reports whether Redis answers.
func (r *Redis) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Status{Backend: "redis", Fallback: r.down, Error: r.lastErr}
}

// useRedis tells whether to ask Redis now: always while it answers, once a second while not.
func (r *Redis) useRedis() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.down || !time.Now().Before(r.retryAt) {
		r.retryAt = time.Now().Add(time.Second) // one caller probes; the rest wait
		return true
	}
	return false
}

// answered records the outcome of a call to Redis, logging each change of state once.
func (r *Redis) answered(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err == nil && r.down:
		r.down, r.lastErr = false, ""
		r.log.Warn("rate limiter: Redis answers again; counting in Redis")
	case err != nil && !r.down:
		r.down, r.lastErr = true, err.Error()
		r.log.Error("rate limiter: Redis unreachable; counting in memory until it answers", "error", err.Error())
	case err != nil:
		r.lastErr = err.Error()
	}
}

func (r *Redis) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), time.Second)
}

// Allow counts one request: AllowN(key, 1, limit).
func (r *Redis) Allow(key string, limit int) Decision { return r.AllowN(key, 1, limit) }

// AllowN counts n requests at once, all or none: on its own while this instance's share since
// its last report covers them, else with a round trip that reports and decides; in memory
// while Redis is unreachable. While one request's round trip for a key is under way, others
// for that key that its share does not cover wait for its answer and decide on that, rather
// than each asking Redis (a busy key would otherwise cost a round trip per request for as long
// as one is in flight).
func (r *Redis) AllowN(key string, n, limit int) Decision {
	return r.AllowNContext(context.Background(), key, n, limit)
}

// AllowNContext is AllowN for the request of ctx: its round trip to Redis, if any, is in the
// request's trace. The request's end does not cut the round trip short.
func (r *Redis) AllowNContext(ctx context.Context, key string, n, limit int) Decision {
	n = max(n, 1)
	sh := r.tallyShard(key)
	for {
		now := r.now()
		sh.mu.Lock()
		t := sh.keys[key]
		add, rejn := 0, 0
		if r.current(t, limit, now) {
			d := Decision{Limit: limit, ResetIn: t.start.Add(r.window).Sub(now)}
			switch {
			case t.spent:
				t.rejected++
				sh.mu.Unlock()
				return d
			case t.admitted+t.sending+n <= onOwn(limit, t.known):
				t.admitted += n
				d.Allowed, d.Remaining = true, limit-t.known-t.admitted-t.sending
				sh.mu.Unlock()
				return d
			case t.flight != nil:
				flight := t.flight
				sh.mu.Unlock()
				<-flight // closed when that round trip's answer (or error) is in
				continue
			}
			add, rejn = t.admitted, t.rejected
			t.admitted, t.rejected = 0, 0
			t.sending += add
			t.flight = make(chan struct{})
		}
		sent := t
		sh.calls++
		if sh.calls%1024 == 0 {
			for k, old := range sh.keys { // windows long over
				if !now.Before(old.start.Add(2 * r.window)) {
					delete(sh.keys, k)
				}
			}
		}
		sh.mu.Unlock()
		return r.ask(ctx, sh, key, sent, now, n, limit, add, rejn)
	}
}

// ask reports add admitted and rejn refused requests of key's window to Redis and decides n
// more there; sent is the key's tally that those counts came from (nil for a key not yet
// known here), whose round trip this is.
func (r *Redis) ask(parent context.Context, sh *tallyShard, key string, sent *tally, now time.Time, n, limit, add, rejn int) Decision {
	if !r.useRedis() {
		sh.mu.Lock()
		landed(sent, add, false)
		sh.mu.Unlock()
		return r.fallback.AllowN(key, n, limit)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), time.Second)
	defer cancel()
	res, err := countScript.Run(ctx, r.client, []string{KeyPrefix + key},
		now.UnixMicro(), r.window.Microseconds(), limit, add, rejn, n).Int64Slice()
	r.answered(err)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	landed(sent, add, err == nil)
	if err != nil {
		return r.fallback.AllowN(key, n, limit)
	}
	allowed, used, start := res[0] == 1, int(res[1]), time.UnixMicro(res[2])
	d := Decision{Limit: limit, ResetIn: start.Add(r.window).Sub(now)}
	t := sh.keys[key]
	if t == nil || !t.start.Equal(start) || t.limit != limit {
		if t == nil && len(sh.keys) >= int(r.perShard.Load()) {
			// A flood of new keys: forget one. Redis keeps the count; what the forgotten key
			// had not reported yet (at most its share) goes uncounted.
			for k := range sh.keys {
				delete(sh.keys, k)
				break
			}
		}
		t = &tally{start: start, limit: limit}
		sh.keys[key] = t
	}
	t.known = max(t.known, used)
	t.spent = !allowed && used >= limit // a refused n > 1 may leave room for smaller ones
	d.Allowed, d.Remaining = allowed, max(limit-t.known-t.admitted-t.sending, 0)
	return d
}

// landed ends sent's round trip (the shard's lock held): its add reported requests are no
// longer being sent (counted again as admitted here when they were not reported, so the next
// call sends them), and those waiting for its answer go on.
func landed(sent *tally, add int, reported bool) {
	if sent == nil {
		return
	}
	if add > 0 {
		sent.sending -= add
		if !reported {
			sent.admitted += add
		}
	}
	if sent.flight != nil {
		close(sent.flight)
		sent.flight = nil
	}
}

// flush reports what this instance decided on its own, so State and the other instances
// count it; it says whether it had anything to send.
func (r *Redis) flush(ctx context.Context) (bool, error) {
	type report struct {
		key                       string
		start                     time.Time
		limit, admitted, rejected int
	}
	var reports []report
	now := r.now()
	for i := range r.tallies {
		sh := &r.tallies[i]
		sh.mu.Lock()
		for k, t := range sh.keys {
			if (t.admitted > 0 || t.rejected > 0) && r.current(t, t.limit, now) {
				reports = append(reports, report{k, t.start, t.limit, t.admitted, t.rejected})
				t.known += t.admitted
				t.admitted, t.rejected = 0, 0
			}
		}
		sh.mu.Unlock()
	}
	if len(reports) == 0 {
		return false, nil
	}
	pipe := r.client.Pipeline()
	for _, rp := range reports {
		// Reported at the window's own start, so counts never open a new window.
		countScript.Eval(ctx, pipe, []string{KeyPrefix + rp.key}, rp.start.UnixMicro(), r.window.Microseconds(), rp.limit, rp.admitted, rp.rejected, 0)
	}
	_, err := pipe.Exec(ctx)
	return true, err
}

// State lists every key with a window in Redis (in memory while Redis is unreachable).
func (r *Redis) State() []KeyState {
	ctx, cancel := r.ctx()
	defer cancel()
	_, err := r.flush(ctx)
	var states []KeyState
	if err == nil {
		states, err = r.state(ctx)
	}
	r.answered(err)
	if err != nil {
		return r.fallback.State()
	}
	return states
}

func (r *Redis) state(ctx context.Context) ([]KeyState, error) {
	var keys []string
	iter := r.client.Scan(ctx, 0, KeyPrefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return nil, err
	}
	pipe := r.client.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.HGetAll(ctx, k)
	}
	if len(keys) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, err
		}
	}
	now := r.now()
	out := make([]KeyState, 0, len(keys))
	for i, k := range keys {
		h := cmds[i].Val()
		if len(h) == 0 {
			continue // expired between the scan and the read
		}
		num := func(f string) int64 { n, _ := strconv.ParseInt(h[f], 10, 64); return n }
		start := time.UnixMicro(num("start"))
		if now.Sub(start) >= 2*r.window {
			continue
		}
		st := KeyState{Key: strings.TrimPrefix(k, KeyPrefix), Limit: int(num("limit")), WindowStart: start,
			ResetAt: start.Add(r.window), RejectedTotal: num("rejtotal")}
		if now.Before(st.ResetAt) {
			st.Used, st.Rejected = int(num("used")), int(num("rejected"))
		}
		st.Remaining = max(st.Limit-st.Used, 0)
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b KeyState) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// Reset forgets key's window in Redis and in the fallback.
func (r *Redis) Reset(key string) bool {
	ctx, cancel := r.ctx()
	defer cancel()
	sh := r.tallyShard(key)
	sh.mu.Lock()
	delete(sh.keys, key)
	sh.mu.Unlock()
	n, err := r.client.Del(ctx, KeyPrefix+key).Result()
	r.answered(err)
	inMemory := r.fallback.Reset(key)
	return n > 0 || inMemory
}
