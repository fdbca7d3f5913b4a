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
