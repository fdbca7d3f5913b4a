package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// Renewal extends a consent that still holds; an expired one must be given anew, signed.
func TestPreapproval_RenewingAnExpiredOneIs404(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		clock := storetest.NewClock(storetest.Epoch)
		s := b.Open(t, storetest.Config(clock))
		alice := onboardParty(t, s, "alice")
		prep, err := s.PreparePreapproval(ctx, alice.id, store.PreapprovalUSDCx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := alice.execute(s, store.KindUSDCxPreapproval, prep); err != nil {
			t.Fatal(err)
		}
		clock.Advance(s.Config().PreapprovalTTL - time.Microsecond)
		if _, err := s.RenewPreapproval(ctx, alice.id, store.PreapprovalUSDCx); err != nil {
			t.Fatalf("renew just before expiry: %v", err)
		}
		clock.Advance(s.Config().PreapprovalTTL + time.Second)
		if _, err := s.RenewPreapproval(ctx, alice.id, store.PreapprovalUSDCx); store.ErrorCode(err) != store.CodeNotFound {
			t.Fatalf("renew after expiry: %v, want not_found", err)
		}
	})
}

// A party has one preapproval of each kind: of two prepared while it had none, the second
// to execute is stale, whether they run one after the other or at once.
func TestPreapproval_TwoFirstOnesCommitOnlyOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(new(storetest.Clock)))
		for _, concurrent := range []bool{false, true} {
			p := onboardParty(t, s, "p")
			var preps []*store.Prepared
			for range 4 {
				prep, err := s.PreparePreapproval(ctx, p.id, store.PreapprovalNFT)
				if err != nil {
					t.Fatal(err)
				}
				preps = append(preps, prep)
			}
			errs := make([]error, len(preps))
			var wg sync.WaitGroup
			for i, prep := range preps {
				run := func() { _, errs[i] = p.execute(s, store.KindNFTPreapproval, prep) }
				if concurrent {
					wg.Go(run)
				} else {
					run()
				}
			}
			wg.Wait()
			committed := 0
			for _, err := range errs {
				switch {
				case err == nil:
					committed++
				case store.ErrorCode(err) != store.CodeStale:
					t.Fatalf("concurrent=%v: %v, want stale", concurrent, err)
				}
			}
			ps, err := s.Preapprovals(ctx, p.id)
			if committed != 1 || err != nil || len(ps) != 1 {
				t.Fatalf("concurrent=%v: %d committed, %d preapprovals (%v); want 1 and 1", concurrent, committed, len(ps), err)
			}
		}
	})
}
