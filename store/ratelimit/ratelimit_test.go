package ratelimit_test

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"marketd/store/internal/testdb"
	"marketd/store/ratelimit"
)

// fakeClock is a clock the test moves by hand.
type fakeClock = testdb.Clock

var epoch = testdb.Epoch

func newFakeClock() *fakeClock { return testdb.NewClock(epoch) }

var _ ratelimit.Limiter = (*ratelimit.Memory)(nil)

func wantDecision(t *testing.T, got ratelimit.Decision, allowed bool, remaining int, resetIn time.Duration) {
	t.Helper()
	if got.Allowed != allowed || got.Remaining != remaining || got.ResetIn != resetIn {
		t.Fatalf("decision %+v, want allowed %v remaining %d reset in %v", got, allowed, remaining, resetIn)
	}
}

func TestMemory_CountsDownThenRefusesUntilTheWindowEnds(t *testing.T) {
	clock := newFakeClock()
	m := ratelimit.NewMemory(time.Minute, clock.Now)
	for i := range 3 {
		d := m.Allow("k", 3)
		if d.Limit != 3 {
			t.Fatalf("limit %d", d.Limit)
		}
		wantDecision(t, d, true, 2-i, time.Minute-time.Duration(i)*10*time.Second)
		clock.Advance(10 * time.Second)
	}
	// 30 s in: full.
	wantDecision(t, m.Allow("k", 3), false, 0, 30*time.Second)
	clock.Advance(30*time.Second - time.Nanosecond)
	wantDecision(t, m.Allow("k", 3), false, 0, time.Nanosecond)
	// The window ends exactly a minute after its first request; the next opens at that request.
	clock.Advance(time.Nanosecond)
	wantDecision(t, m.Allow("k", 3), true, 2, time.Minute)
	clock.Advance(5 * time.Second)
	wantDecision(t, m.Allow("k", 3), true, 1, 55*time.Second)
}

func TestMemory_WindowStartsAtTheFirstRequestAfterAPause(t *testing.T) {
	clock := newFakeClock()
	m := ratelimit.NewMemory(time.Minute, clock.Now)
	m.Allow("k", 2)
	clock.Advance(90 * time.Second) // the old window ended 30 s ago
	wantDecision(t, m.Allow("k", 2), true, 1, time.Minute)
	wantDecision(t, m.Allow("k", 2), true, 0, time.Minute)
	wantDecision(t, m.Allow("k", 2), false, 0, time.Minute)
}

func TestMemory_KeysHaveSeparateWindows(t *testing.T) {
	clock := newFakeClock()
	m := ratelimit.NewMemory(time.Minute, clock.Now)
	wantDecision(t, m.Allow("a", 1), true, 0, time.Minute)
	wantDecision(t, m.Allow("a", 1), false, 0, time.Minute)
	clock.Advance(20 * time.Second)
	wantDecision(t, m.Allow("b", 1), true, 0, time.Minute)
	wantDecision(t, m.Allow("a", 1), false, 0, 40*time.Second)
}

func TestMemory_StateListsUsedRemainingAndRejected(t *testing.T) {
	clock := newFakeClock()
	m := ratelimit.NewMemory(time.Minute, clock.Now)
	for range 5 {
		m.Allow("read:https://a.example", 3) // 3 admitted, 2 refused
	}
	m.Allow("prepare:alice", 10)
	clock.Advance(15 * time.Second)

	st := m.State()
	if len(st) != 2 || st[0].Key != "prepare:alice" || st[1].Key != "read:https://a.example" {
		t.Fatalf("state %+v, want both keys sorted", st)
	}
	want := ratelimit.KeyState{Key: "read:https://a.example", Limit: 3, Used: 3, Remaining: 0,
		WindowStart: epoch, ResetAt: epoch.Add(time.Minute), Rejected: 2, RejectedTotal: 2}
	if st[1] != want {
		t.Fatalf("state %+v\nwant  %+v", st[1], want)
	}
	if st[0].Used != 1 || st[0].Remaining != 9 || st[0].Rejected != 0 {
		t.Fatalf("prepare:alice %+v", st[0])
	}

	// A new window: the window's counts start over, the history of refusals stays.
	clock.Advance(45 * time.Second)
	m.Allow("read:https://a.example", 3)
	m.Allow("read:https://a.example", 3)
	m.Allow("read:https://a.example", 3)
	m.Allow("read:https://a.example", 3)
	st = m.State()
	got := st[1]
	if got.Used != 3 || got.Rejected != 1 || got.RejectedTotal != 3 || !got.WindowStart.Equal(epoch.Add(time.Minute)) {
		t.Fatalf("second window %+v, want used 3, rejected 1, rejected total 3", got)
	}

	// A window that ended shows as unused until the key is forgotten.
	clock.Advance(time.Minute)
	for _, s := range m.State() {
		if s.Key == "read:https://a.example" && (s.Used != 0 || s.Rejected != 0 || s.Remaining != 3 || s.RejectedTotal != 3) {
			t.Fatalf("ended window %+v", s)
		}
	}
	// Idle for a whole window: the key is gone from the state, and its history with it.
	clock.Advance(time.Minute)
	if st := m.State(); len(st) != 0 {
		t.Fatalf("state after two idle windows %+v, want empty", st)
	}
	m.Allow("read:https://a.example", 3)
	if st := m.State(); len(st) != 1 || st[0].RejectedTotal != 0 || st[0].Used != 1 {
		t.Fatalf("state after a fresh start %+v", st)
	}
}

func TestMemory_ResetForgetsOneKey(t *testing.T) {
	clock := newFakeClock()
	m := ratelimit.NewMemory(time.Minute, clock.Now)
	m.Allow("a", 1)
	m.Allow("a", 1)
	m.Allow("b", 1)
	clock.Advance(10 * time.Second)
	if !m.Reset("a") {
		t.Fatal("Reset(a) = false for a key with a window")
	}
	if m.Reset("a") || m.Reset("never") {
		t.Fatal("Reset of a key without a window = true")
	}
	wantDecision(t, m.Allow("a", 1), true, 0, time.Minute)
	wantDecision(t, m.Allow("b", 1), false, 0, 50*time.Second)
	for _, s := range m.State() {
		if s.Key == "a" && (s.RejectedTotal != 0 || !s.WindowStart.Equal(epoch.Add(10*time.Second))) {
			t.Fatalf("a after reset %+v", s)
		}
	}
}

func TestMemory_ConcurrentRequestsNeverExceedTheLimit(t *testing.T) {
	clock := newFakeClock()
	m := ratelimit.NewMemory(time.Minute, clock.Now)
	const (
		limit      = 100
		goroutines = 32
		each       = 20
	)
	for window := range 3 {
		var admitted, refused atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range goroutines {
			wg.Go(func() {
				<-start
				for i := range each {
					// Other keys share the shards and their locks.
					m.Allow(fmt.Sprintf("other-%d-%d", g, i), limit)
					if m.Allow("hot", limit).Allowed {
						admitted.Add(1)
					} else {
						refused.Add(1)
					}
				}
			})
		}
		close(start)
		wg.Wait()
		if admitted.Load() != limit || refused.Load() != goroutines*each-limit {
			t.Fatalf("window %d: admitted %d, refused %d; want %d and %d", window, admitted.Load(), refused.Load(), limit, goroutines*each-limit)
		}
		for _, s := range m.State() {
			if s.Key == "hot" && (s.Used != limit || s.Rejected != goroutines*each-limit) {
				t.Fatalf("window %d: state %+v", window, s)
			}
		}
		clock.Advance(time.Minute)
	}
}

func TestMemory_ConcurrentStateAndResetAreSafe(t *testing.T) {
	clock := newFakeClock()
	m := ratelimit.NewMemory(time.Minute, clock.Now)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				key := fmt.Sprintf("k%d", i%16)
				switch (g + i) % 5 {
				case 0:
					m.State()
				case 1:
					m.Reset(key)
				case 2:
					clock.Advance(time.Second)
				default:
					if d := m.Allow(key, 5); d.Remaining < 0 || d.Remaining > 5 {
						t.Errorf("remaining %d", d.Remaining)
					}
				}
			}
		})
	}
	wg.Wait()
}

func TestMemory_FloodOfKeysStaysBoundedAndKeepsBusyClients(t *testing.T) {
	clock := newFakeClock()
	m := ratelimit.NewMemory(time.Minute, clock.Now)
	m.SetMaxKeys(1024)
	// A client that spent its budget before the flood.
	for range 5 {
		m.Allow("read:busy", 5)
	}
	for i := range 200_000 {
		m.Allow(fmt.Sprintf("read:flood-%d", i), 5)
		if i%1000 == 0 {
			clock.Advance(time.Millisecond)
		}
	}
	if n := m.Len(); n > 1024 {
		t.Fatalf("%d keys held after a flood of 200000, want at most 1024", n)
	}
	// The spent budget was not shed by the flood.
	if d := m.Allow("read:busy", 5); d.Allowed {
		t.Fatalf("the busy client's spent window was evicted by the flood: %+v", d)
	}
}

func TestMemory_AllowNCountsAllOrNone(t *testing.T) {
	clock := newFakeClock()
	m := ratelimit.NewMemory(time.Minute, clock.Now)
	wantDecision(t, m.AllowN("k", 7, 10), true, 3, time.Minute)
	// 4 does not fit in the 3 left: refused whole, nothing spent, one refusal counted.
	wantDecision(t, m.AllowN("k", 4, 10), false, 3, time.Minute)
	wantDecision(t, m.AllowN("k", 3, 10), true, 0, time.Minute)
	wantDecision(t, m.Allow("k", 10), false, 0, time.Minute)
	// More than the whole limit is never admitted.
	wantDecision(t, m.AllowN("big", 11, 10), false, 10, time.Minute)
	if st := m.State(); len(st) != 2 || st[1].Key != "k" || st[1].Used != 10 || st[1].Rejected != 2 || st[0].Used != 0 || st[0].Rejected != 1 {
		t.Fatalf("state %+v", st)
	}
}

func TestDecision_SetHeadersAsEveryDoorAnswers(t *testing.T) {
	h := http.Header{}
	ratelimit.Decision{Allowed: false, Limit: 300, Remaining: 2, ResetIn: 1500 * time.Millisecond}.SetHeaders(h)
	if h.Get("RateLimit-Limit") != "300" || h.Get("RateLimit-Remaining") != "2" || h.Get("RateLimit-Reset") != "2" || h.Get("Retry-After") != "2" {
		t.Fatalf("headers %v", h)
	}
	h = http.Header{}
	ratelimit.Decision{Allowed: true}.SetHeaders(h) // no limit
	if len(h) != 0 {
		t.Fatalf("headers %v", h)
	}
}
