package store_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"sync"
	"testing"

	"marketd/store"
	"marketd/store/storetest"
)

// ledgerParty is an onboarded party and its key, for store-level tests.
type ledgerParty struct {
	id   string
	priv ed25519.PrivateKey
}

func onboardParty(t testing.TB, s *store.Store, hint string) *ledgerParty {
	t.Helper()
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	p, err := s.PrepareOnboarding(context.Background(), pub, hint)
	if err != nil {
		t.Fatal(err)
	}
	lp := &ledgerParty{id: p.PartyID, priv: priv}
	if _, err := lp.execute(s, store.KindOnboard, p); err != nil {
		t.Fatal(err)
	}
	return lp
}

func (p *ledgerParty) execute(s *store.Store, kind string, prep *store.Prepared) (store.Receipt, error) {
	return s.Execute(context.Background(), store.Execution{Kinds: []string{kind}, Hash: prep.Hash, Signature: ed25519.Sign(p.priv, prep.Hash), Caller: p.id})
}

func tap(t testing.TB, s *store.Store, p *ledgerParty, inst store.Instrument, amount string) {
	t.Helper()
	prep, err := s.PrepareTap(context.Background(), p.id, inst, store.MustAmount(amount))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.execute(s, store.KindTap, prep); err != nil {
		t.Fatal(err)
	}
}

func balanceOf(t testing.TB, s *store.Store, p *ledgerParty, inst store.Instrument) store.Balance {
	t.Helper()
	bs, err := s.Balances(context.Background(), p.id)
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
		alice, bob := onboardParty(t, s, "alice"), onboardParty(t, s, "bob")
		tap(t, s, alice, store.CC, "10")
		p1, err := s.PrepareCCTransfer(ctx, alice.id, bob.id, store.MustAmount("4"))
		if err != nil {
			t.Fatal(err)
		}
		p2, err := s.PrepareCCTransfer(ctx, alice.id, bob.id, store.MustAmount("5"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := alice.execute(s, store.KindCCTransfer, p1); err != nil {
			t.Fatal(err)
		}
		_, err = alice.execute(s, store.KindCCTransfer, p2)
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
		alice, bob := onboardParty(t, s, "alice"), onboardParty(t, s, "bob")
		const holdings, transfers = 20, 50
		for range holdings {
			tap(t, s, alice, store.CC, "10")
		}
		preps := make([]*store.Prepared, transfers)
		for i := range preps {
			p, err := s.PrepareCCTransfer(ctx, alice.id, bob.id, store.MustAmount("10"))
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
				_, err := alice.execute(s, store.KindCCTransfer, p)
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
