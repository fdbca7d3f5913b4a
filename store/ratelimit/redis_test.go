package ratelimit_test

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"marketd/store/ratelimit"
	"marketd/store/storetest"
)

var _ ratelimit.Limiter = (*ratelimit.Redis)(nil)

func redisURL(t testing.TB) string { return storetest.RedisURL(t) }

// newTestRedis is a Redis limiter on the shared server; keys are made unique per test by the
// caller (a random tag), so parallel runs never share a window.
func newTestRedis(t testing.TB, url string, now func() time.Time) *ratelimit.Redis {
	t.Helper()
	r, err := ratelimit.NewRedis(url, time.Minute, now, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	r.Allow("probe:"+strconv.Itoa(rand.Int()), 1)
	if st := r.Status(); st.Fallback {
		t.Fatalf("Redis at %s does not answer: %s (run .ci/run, or set TEST_REDIS_URL)", url, st.Error)
	}
	return r
}

func tag() string { return fmt.Sprintf("t%d:", rand.Int64()) }

// The Redis limiter decides exactly as the in-memory one, request by request, on the same clock.
func TestRedis_DecidesExactlyAsMemory(t *testing.T) {
	clock := newFakeClock()
	r := newTestRedis(t, redisURL(t), clock.Now)
	m := ratelimit.NewMemory(time.Minute, clock.Now)
	k := tag()
	steps := []time.Duration{0, 10 * time.Second, 10 * time.Second, 5 * time.Second, 34*time.Second + 999*time.Millisecond,
		time.Millisecond, time.Second, 90 * time.Second, 0, 0, 0, 2 * time.Minute, 0}
	for i, step := range steps {
		clock.Advance(step)
		for _, key := range []string{k + "a", k + "b"} {
			want, got := m.Allow(key, 3), r.Allow(key, 3)
			if got != want {
				t.Fatalf("step %d %s: redis %+v, memory %+v", i, key, got, want)
			}
		}
	}
	// State and Reset agree too, for this test's keys.
	pick := func(all []ratelimit.KeyState) (out []ratelimit.KeyState) {
		for _, s := range all {
			if len(s.Key) > len(k) && s.Key[:len(k)] == k {
				out = append(out, s)
			}
		}
		return out
	}
	gotState, wantState := pick(r.State()), pick(m.State())
	if fmt.Sprint(gotState) != fmt.Sprint(wantState) {
		t.Fatalf("state: redis %+v, memory %+v", gotState, wantState)
	}
	if !r.Reset(k+"a") || r.Reset(k+"a") {
		t.Fatal("Reset reports wrongly")
	}
	if d := r.Allow(k+"a", 3); !d.Allowed || d.Remaining != 2 {
		t.Fatalf("after reset: %+v", d)
	}
}

// Two limiters (two instances) on one Redis share every window: concurrent requests through
// both never pass the limit in total.
func TestRedis_InstancesShareOneBudget(t *testing.T) {
	url := redisURL(t)
	a, b := newTestRedis(t, url, time.Now), newTestRedis(t, url, time.Now)
	key := tag() + "shared"
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := a
			if i%2 == 1 {
				l = b
			}
			for range 25 {
				if l.Allow(key, 100).Allowed {
					allowed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if n := allowed.Load(); n != 100 {
		t.Fatalf("%d of 400 requests allowed through two instances, want exactly 100", n)
	}
}

// Redis stopped: requests keep being decided on the in-memory fallback (with the same limit),
// Status says so, and when Redis is back the limits are counted there again.
func TestRedis_StoppedFallsBackToMemoryAndReturns(t *testing.T) {
	p := storetest.StartRedis(t)
	clock := newFakeClock()
	r := newTestRedis(t, p.URL(), clock.Now)
	other := newTestRedis(t, p.URL(), clock.Now) // a second instance, to see what is in Redis
	for range 2 {
		r.Allow("read:k", 3)
	}
	p.Stop()
	// The fallback keeps limiting: its own window, the same limit.
	for i := range 3 {
		if d := r.Allow("read:k", 3); !d.Allowed || d.Remaining != 2-i {
			t.Fatalf("fallback request %d: %+v", i, d)
		}
	}
	if d := r.Allow("read:k", 3); d.Allowed {
		t.Fatalf("the fallback does not limit: %+v", d)
	}
	if st := r.Status(); !st.Fallback || st.Backend != "redis" || st.Error == "" {
		t.Fatalf("status while Redis is down: %+v", st)
	}
	p.Start() // an empty Redis: the old windows are gone
	deadline := time.Now().Add(5 * time.Second)
	for r.Status().Fallback && time.Now().Before(deadline) {
		r.Allow("read:probe", 3)
		time.Sleep(50 * time.Millisecond)
	}
	if st := r.Status(); st.Fallback {
		t.Fatalf("still on the fallback 5 s after Redis returned: %+v", st)
	}
	// Counting in Redis again: the other instance sees this one's requests.
	r.Allow("read:k", 3)
	if d := other.Allow("read:k", 3); !d.Allowed || d.Remaining != 1 {
		t.Fatalf("back on Redis, the second instance sees %+v, want remaining 1", d)
	}
}

// Redis holds a key only while its window is recent: every key expires two windows after its
// last request, so a flood of addresses costs Redis at most two windows' worth of keys, and
// the instance itself holds nothing.
func TestRedis_FloodOfKeysExpiresAndLeavesTheProcessEmpty(t *testing.T) {
	p := storetest.StartRedis(t)
	r := newTestRedis(t, p.URL(), time.Now)
	r.SetMaxKeys(320)
	for i := range 2000 {
		r.Allow(fmt.Sprintf("read:10.0.%d.%d", i/256, i%256), 5)
	}
	if n := r.Fallback().Len(); n != 0 {
		t.Fatalf("the instance's fallback holds %d keys while Redis answers", n)
	}
	if n := r.Held(); n > 320 {
		t.Fatalf("the instance keeps tallies of %d keys, over its bound of 320", n)
	}
	out, err := exec.Command("redis-cli", "-p", strconv.Itoa(p.Port), "--scan", "--pattern", ratelimit.KeyPrefix+"*").Output()
	if err != nil {
		t.Fatal(err)
	}
	keys := 0
	for _, b := range out {
		if b == '\n' {
			keys++
		}
	}
	if keys < 2000 {
		t.Fatalf("%d keys in Redis, want the flood's 2000 (+ the probe)", keys)
	}
	ttl, err := exec.Command("redis-cli", "-p", strconv.Itoa(p.Port), "PTTL", ratelimit.KeyPrefix+"read:10.0.3.7").Output()
	if err != nil {
		t.Fatal(err)
	}
	ms, _ := strconv.Atoi(string(ttl[:len(ttl)-1]))
	if ms <= 0 || ms > 120_000 {
		t.Fatalf("a key's TTL is %q ms, want at most two windows (120000)", ttl)
	}
}

// BenchmarkAllow is the limiter's cost per request: in memory, and in Redis (one script
// round trip to the local server).
func BenchmarkAllow(b *testing.B) {
	r, err := ratelimit.NewRedis(storetest.RedisURL(b), time.Minute, time.Now, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	k := tag()
	for _, l := range []struct {
		name string
		lim  ratelimit.Limiter
	}{{"memory", ratelimit.NewMemory(time.Minute, time.Now)}, {"redis", r}} {
		b.Run(l.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				i++
				l.lim.Allow(k+strconv.Itoa(i%1000), 1<<30)
			}
			if st := ratelimit.StatusOf(l.lim); st.Fallback {
				b.Fatalf("Redis did not answer: %s", st.Error)
			}
		})
		b.Run(l.name+"/parallel=32", func(b *testing.B) {
			var n atomic.Int64
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					l.lim.Allow(k+strconv.Itoa(int(n.Add(1))%1000), 1<<30)
				}
			})
			if st := ratelimit.StatusOf(l.lim); st.Fallback {
				b.Fatalf("Redis did not answer: %s", st.Error)
			}
		})
	}
}

// Three instances on one Redis, each admitting a share of the budget on its own between
// reports: under concurrent requests through all three, even when each instance sees only a
// little more than a third of the requests, the fleet never refuses a request early, passes
// the limit by at most what each instance may admit on its own (a thirty-second of the budget,
// at most 64, per instance), and not at all for budgets under 32; State counts every request
// and refusal once reported.
func TestRedis_ThreeInstancesKeepTheStatedAccuracy(t *testing.T) {
	url := redisURL(t)
	ls := []*ratelimit.Redis{newTestRedis(t, url, time.Now), newTestRedis(t, url, time.Now), newTestRedis(t, url, time.Now)}
	for _, c := range []struct{ limit, requests int }{{7, 30}, {31, 60}, {300, 360}, {300, 3000}, {5000, 6000}} {
		for range 3 {
			key := tag() + "fleet"
			var allowed atomic.Int64
			var wg sync.WaitGroup
			for w := range 6 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range c.requests / 6 {
						if ls[(w+i)%3].Allow(key, c.limit).Allowed {
							allowed.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			over := 3 * min(c.limit/32, 64)
			if n := int(allowed.Load()); n < c.limit || n > c.limit+over {
				t.Fatalf("limit %d, %d requests: %d allowed through three instances, want %d to %d", c.limit, c.requests, n, c.limit, c.limit+over)
			}
			for _, l := range ls[1:] { // report what they decided on their own
				l.State()
			}
			var st ratelimit.KeyState
			for _, s := range ls[0].State() {
				if s.Key == key {
					st = s
				}
			}
			if n := int(allowed.Load()); st.Used != n || st.Rejected != c.requests-n {
				t.Fatalf("limit %d: state %+v, want %d used and %d rejected", c.limit, st, n, c.requests-n)
			}
		}
	}
}

// AllowN decides in Redis exactly as in memory, n at a time, all or none.
func TestRedis_AllowNDecidesExactlyAsMemory(t *testing.T) {
	clock := newFakeClock()
	r := newTestRedis(t, redisURL(t), clock.Now)
	m := ratelimit.NewMemory(time.Minute, clock.Now)
	k := tag()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		if i%50 == 49 {
			clock.Advance(61 * time.Second)
		}
		n, limit := 1+rng.IntN(12), []int{10, 40, 300}[i%3]
		key := k + strconv.Itoa(limit)
		want, got := m.AllowN(key, n, limit), r.AllowN(key, n, limit)
		if got.Allowed != want.Allowed || got.ResetIn != want.ResetIn || (got.Allowed || limit < 32) && got.Remaining != want.Remaining {
			t.Fatalf("step %d AllowN(%d, %d): redis %+v, memory %+v", i, n, limit, got, want)
		}
	}
}
