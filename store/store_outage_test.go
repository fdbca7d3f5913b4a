package store_test

import (
	"context"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
	"marketd/store/storetest/pgproxy"
)

// A connection cut while a transaction commits leaves its outcome unknown: the execute says so
// (outcome_unknown, not internal), and the same execute sent again answers the receipt if the
// transaction applied, or applies it, once, if it did not.
func TestExecute_CommitCutIsOutcomeUnknownAndTheRetryAppliesOnce(t *testing.T) {
	for _, b := range storetest.Backends() {
		if b.Dialect != store.Postgres {
			continue // SQLite commits in process: no connection to lose
		}
		for _, c := range []struct {
			name string
			cut  pgproxy.Cut
		}{{"cut-before-commit", pgproxy.CutBeforeCommit}, {"cut-after-commit", pgproxy.CutAfterCommit}} {
			t.Run(b.Name+"/"+c.name, func(t *testing.T) {
				ctx := context.Background()
				cfg := storetest.Config(storetest.NewClock(storetest.Epoch))
				s, proxy := b.OpenProxied(t, cfg)
				alice, bob := storetest.Onboard(t, s, "alice"), storetest.Onboard(t, s, "bob")
				alice.Tap(t, s, store.CC, "100")
				prep, err := s.PrepareCCTransfer(ctx, alice.ID, bob.ID, store.MustAmount("30"))
				if err != nil {
					t.Fatal(err)
				}
				x := alice.Execution(store.KindCCTransfer, prep)

				proxy.CutCommits(c.cut)
				_, err = s.Execute(ctx, x)
				if store.ErrorCode(err) != store.CodeOutcomeUnknown || proxy.Cuts() != 1 {
					t.Fatalf("execute with its commit cut: %v (%d cuts), want %s", err, proxy.Cuts(), store.CodeOutcomeUnknown)
				}
				var first store.Receipt
				deadline := time.Now().Add(5 * time.Second)
				for { // the pool replaces the cut connection
					first, err = s.Execute(ctx, x)
					if err == nil || time.Now().After(deadline) {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
				if err != nil {
					t.Fatalf("the retry: %v", err)
				}
				again, err := s.Execute(ctx, x)
				if err != nil || string(again) != string(first) {
					t.Fatalf("a third execute answers %s %v, the retry %s", again, err, first)
				}
				if got := balanceOf(t, s, alice, store.CC).Amount.String(); got != "70" {
					t.Errorf("alice holds %s CC after one transfer of 30 from 100", got)
				}
				if got := balanceOf(t, s, bob, store.CC).Amount.String(); got != "30" {
					t.Errorf("bob holds %s CC after one transfer of 30", got)
				}
			})
		}
	}
}

// While the database cannot be reached, a store call is unavailable (503 at the front doors),
// never internal; once it is back, calls succeed again without a restart.
func TestStore_AnUnreachableDatabaseIsUnavailableAndRecovers(t *testing.T) {
	for _, b := range storetest.Backends() {
		if b.Dialect != store.Postgres {
			continue
		}
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			cfg := storetest.Config(storetest.NewClock(storetest.Epoch))
			s, proxy := b.OpenProxied(t, cfg)
			alice := storetest.Onboard(t, s, "alice")
			proxy.SetDown(true)
			for _, call := range []struct {
				name string
				run  func() error
			}{
				{"a read", func() error { _, err := s.Balances(ctx, alice.ID); return err }},
				{"a prepare", func() error { _, err := s.PrepareTap(ctx, alice.ID, store.CC, store.MustAmount("1")); return err }},
				{"a ping", func() error { return s.Ping(ctx) }},
			} {
				start := time.Now()
				err := call.run()
				if store.ErrorCode(err) != store.CodeUnavailable {
					t.Errorf("%s while the database is down: %v (code %s), want unavailable", call.name, err, store.ErrorCode(err))
				}
				if took := time.Since(start); took > 2*time.Second {
					t.Errorf("%s took %v to fail", call.name, took)
				}
			}
			proxy.SetDown(false)
			deadline := time.Now().Add(5 * time.Second)
			for {
				_, err := s.Balances(ctx, alice.ID)
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("5 s after the database came back: %v", err)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}
