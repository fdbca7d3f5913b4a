package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// KeyPrefix begins every Redis key the limiter writes.
const KeyPrefix = "marketd:ratelimit:"

// allowScript is Memory.Allow in one atomic round trip: a key's window is a hash of its start
// (µs, the caller's clock), used, rejected and rejected-since-idle counts. It expires two
// windows after its last request, so Redis holds only keys active in the last two windows.
var allowScript = redis.NewScript(`
local now, win, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local h = redis.call('HMGET', KEYS[1], 'start', 'used', 'rejected', 'rejtotal')
local start, used, rej, rejtotal = tonumber(h[1]), tonumber(h[2]) or 0, tonumber(h[3]) or 0, tonumber(h[4]) or 0
if start == nil then
  start, used, rej, rejtotal = now, 0, 0, 0
elseif now >= start + win then
  if now - start >= 2 * win then rejtotal = 0 end
  start, used, rej = now, 0, 0
end
local allowed = 0
if used < limit then
  used = used + 1
  allowed = 1
else
  rej = rej + 1
  rejtotal = rejtotal + 1
end
redis.call('HSET', KEYS[1], 'start', start, 'used', used, 'rejected', rej, 'rejtotal', rejtotal, 'limit', limit)
redis.call('PEXPIRE', KEYS[1], math.ceil(2 * win / 1000))
return {allowed, used, start}
`)

// Redis is a Limiter whose windows live in Redis, shared by every instance that names the same
// server: the same limits, keys and decisions as Memory. While Redis does not answer, an
// in-memory limiter decides (logged once, reported by Status), and Redis is tried again
// every second; its first answer ends the fallback.
type Redis struct {
	client   *redis.Client
	window   time.Duration
	now      func() time.Time
	log      *slog.Logger
	fallback *Memory

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
	return &Redis{client: redis.NewClient(opt), window: window, now: now, log: log, fallback: NewMemory(window, now)}, nil
}

// Close closes the connections to Redis.
func (r *Redis) Close() error { return r.client.Close() }

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

// Allow counts one request in Redis, or in memory while Redis is unreachable.
func (r *Redis) Allow(key string, limit int) Decision {
	if !r.useRedis() {
		return r.fallback.Allow(key, limit)
	}
	now := r.now()
	ctx, cancel := r.ctx()
	defer cancel()
	res, err := allowScript.Run(ctx, r.client, []string{KeyPrefix + key},
		now.UnixMicro(), r.window.Microseconds(), limit).Int64Slice()
	r.answered(err)
	if err != nil {
		return r.fallback.Allow(key, limit)
	}
	start := time.UnixMicro(res[2])
	d := Decision{Limit: limit, ResetIn: start.Add(r.window).Sub(now)}
	if res[0] == 1 {
		d.Allowed, d.Remaining = true, limit-int(res[1])
	}
	return d
}

// State lists every key with a window in Redis (in memory while Redis is unreachable).
func (r *Redis) State() []KeyState {
	ctx, cancel := r.ctx()
	defer cancel()
	states, err := r.state(ctx)
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
	n, err := r.client.Del(ctx, KeyPrefix+key).Result()
	r.answered(err)
	inMemory := r.fallback.Reset(key)
	return n > 0 || inMemory
}
