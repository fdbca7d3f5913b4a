package store_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// A burst of slow write transactions, twenty times what the pool serves at once: those that find
// no connection within the admission wait are refused at once with unavailable, counted, and
// the ones admitted finish within the wait plus their own time, where an unbounded queue makes
// the last of them wait for every one before it.
func TestAdmission_ABusyPoolShedsTheExcessAtOnceAndAdmittedWritesKeepTheirLatency(t *testing.T) {
	const (
		slow  = 50 * time.Millisecond
		wait  = 100 * time.Millisecond
		burst = 80
	)
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		run := func(admissionWait time.Duration) (admitted, shed []time.Duration, sheds int64) {
			cfg := storetest.Config(storetest.NewClock(storetest.Epoch))
			cfg.MaxConns = 4
			cfg.AdmissionWait = admissionWait
			s := b.Open(t, cfg)
			before := s.DatabaseSheds()
			var mu sync.Mutex
			var wg sync.WaitGroup
			for range burst {
				wg.Go(func() {
					start := time.Now()
					err := s.SlowWrite(context.Background(), slow)
					took := time.Since(start)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						admitted = append(admitted, took)
					case store.Overloaded(err) && store.ErrorCode(err) == store.CodeUnavailable:
						shed = append(shed, took)
					default:
						t.Errorf("a slow write failed with %v, want success or unavailable for a busy pool", err)
					}
				})
			}
			wg.Wait()
			return admitted, shed, s.DatabaseSheds() - before
		}

		admitted, shed, sheds := run(wait)
		if len(admitted) == 0 || len(shed) == 0 || len(admitted)+len(shed) != burst {
			t.Fatalf("%d admitted, %d shed of %d: want both", len(admitted), len(shed), burst)
		}
		if sheds != int64(len(shed)) {
			t.Errorf("DatabaseSheds counted %d, %d were refused", sheds, len(shed))
		}
		// Margins for a shared 2-core machine; the bounds are what an unbounded queue breaks.
		if worst := slices.Max(shed); worst > wait+500*time.Millisecond {
			t.Errorf("a refusal took %v, want about the admission wait (%v)", worst, wait)
		}
		if worst := slices.Max(admitted); worst > wait+slow+500*time.Millisecond {
			t.Errorf("an admitted write took %v, want at most the wait plus its own %v", worst, slow)
		}
		unbounded, none, _ := run(-1)
		if len(none) != 0 || len(unbounded) != burst {
			t.Fatalf("without a bound %d were refused", len(none))
		}
		t.Logf("%s: bounded wait: %d admitted (slowest %v), %d refused (slowest refusal %v); unbounded: slowest %v",
			b.Name, len(admitted), slices.Max(admitted).Round(time.Millisecond), len(shed), slices.Max(shed).Round(time.Millisecond),
			slices.Max(unbounded).Round(time.Millisecond))
		if slices.Max(unbounded) < slices.Max(admitted) {
			t.Errorf("the unbounded queue's slowest write (%v) was faster than the bounded one's (%v): the burst did not exhaust the pool",
				slices.Max(unbounded), slices.Max(admitted))
		}
	})
}

// A crowd of write transactions arriving at once, thirty-two times what the pool serves at a
// time, on a store just opened, which the pool serves within the default admission bound:
// every one queues and commits, none is refused, and none waits much longer than the pool
// takes to serve them all (the queue is first come first served, nobody starves behind later
// arrivals). The store's migrations held its connections for tens of milliseconds each; a
// pace taken from them refused part of the crowd on a loaded host.
func TestAdmission_ACrowdThePoolServesInTimeQueuesAndNoneIsRefused(t *testing.T) {
	if raceDetector {
		t.Skip("under the race detector the pool does not serve the crowd in the time this test sizes it for")
	}
	const crowd = 128
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		cfg := storetest.Config(storetest.NewClock(storetest.Epoch))
		cfg.AdmissionWait = 0 // the default bound
		s := b.Open(t, cfg)
		slots := cfg.MaxConns
		if b.Dialect == store.SQLite {
			slots = 1 // one writer
		}
		// Each write holds its connection long enough that the whole crowd takes 320 ms to
		// serve: more than a fixed 100 ms wait allows the last ones, within the default bound.
		const served = 320 * time.Millisecond
		hold := served * time.Duration(slots) / crowd
		var mu sync.Mutex
		var took []time.Duration
		var wg sync.WaitGroup
		for range crowd {
			wg.Go(func() {
				start := time.Now()
				err := s.SlowWrite(context.Background(), hold)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Errorf("a write of the crowd: %v (code %s)", err, store.ErrorCode(err))
					return
				}
				took = append(took, time.Since(start))
			})
		}
		wg.Wait()
		if n := s.DatabaseSheds(); n != 0 {
			t.Errorf("%d writes of an honest crowd were refused", n)
		}
		if len(took) == 0 {
			return
		}
		// A margin for a shared 2-core machine: the bound is what starving a waiter breaks.
		if worst := slices.Max(took); worst > 2*served+time.Second {
			t.Errorf("the slowest write of the crowd took %v, the pool serves all in about %v", worst, served)
		}
		t.Logf("%s: %d writes of %v on %d connections: slowest %v", b.Name, crowd, hold, slots, slices.Max(took).Round(time.Millisecond))
	})
}
