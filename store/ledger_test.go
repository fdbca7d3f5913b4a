package store_test

import (
	"context"
	"sync"
	"testing"

	"marketd/store"
	"marketd/store/storetest"
)

// balanceOf is p's balance of inst on s.
func balanceOf(t testing.TB, s *store.Store, p *storetest.Party, inst store.Instrument) store.Balance {
	t.Helper()
	bs, err := s.Balances(context.Background(), p.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		if b.Instrument == inst {
			return b
		}
	}
	t.Fatalf("no %s balance", inst)
	return store.Balance{}
}

func TestTransfer_SecondOfTwoOverSameHoldingsIsStale(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(new(storetest.Clock)))
		alice, bob := storetest.Onboard(t, s, "alice"), storetest.Onboard(t, s, "bob")
		alice.Tap(t, s, store.CC, "10")
		p1, err := s.PrepareCCTransfer(ctx, alice.ID, bob.ID, store.MustAmount("4"))
		if err != nil {
			t.Fatal(err)
		}
		p2, err := s.PrepareCCTransfer(ctx, alice.ID, bob.ID, store.MustAmount("5"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := alice.Execute(s, store.KindCCTransfer, p1); err != nil {
			t.Fatal(err)
		}
		_, err = alice.Execute(s, store.KindCCTransfer, p2)
		if store.ErrorCode(err) != store.CodeStale {
			t.Fatalf("second execute: %v, want stale", err)
		}
		if got := balanceOf(t, s, bob, store.CC).Amount; !got.Equal(store.MustAmount("4")) {
			t.Fatalf("bob has %s, want 4", got)
		}
		if got := balanceOf(t, s, alice, store.CC).Amount; !got.Equal(store.MustAmount("6")) {
			t.Fatalf("alice has %s, want 6", got)
		}
	})
}

func TestTransfer_ConcurrentExecutesCommitExactlyTheAffordable(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(new(storetest.Clock)))
		alice, bob := storetest.Onboard(t, s, "alice"), storetest.Onboard(t, s, "bob")
		const holdings, transfers = 20, 50
		for range holdings {
			alice.Tap(t, s, store.CC, "10")
		}
		preps := make([]*store.Prepared, transfers)
		for i := range preps {
			p, err := s.PrepareCCTransfer(ctx, alice.ID, bob.ID, store.MustAmount("10"))
			if err != nil {
				t.Fatal(err)
			}
			preps[i] = p
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		committed, stale := 0, 0
		for _, p := range preps {
			wg.Go(func() {
				_, err := alice.Execute(s, store.KindCCTransfer, p)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					committed++
				case store.ErrorCode(err) == store.CodeStale:
					stale++
				default:
					t.Errorf("execute: %v", err)
				}
			})
		}
		wg.Wait()
		if committed != holdings || stale != transfers-holdings {
			t.Fatalf("committed %d, stale %d; want %d and %d", committed, stale, holdings, transfers-holdings)
		}
		if got := balanceOf(t, s, bob, store.CC); !got.Amount.Equal(store.MustAmount("200")) {
			t.Fatalf("bob has %s, want 200", got.Amount)
		}
	})
}
