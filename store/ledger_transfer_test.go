package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

func TestTransfer_ConsolidationReducesUTXOCount(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(new(storetest.Clock)))
		alice, bob := storetest.Onboard(t, s, "alice"), storetest.Onboard(t, s, "bob")
		const taps, maxInputs, handful = 60, 32, 3
		for range taps {
			alice.Tap(t, s, store.CC, "0.5")
		}
		count := func() int {
			n, err := s.UTXOCount(ctx, alice.ID)
			if err != nil {
				t.Fatal(err)
			}
			return n[store.CC]
		}
		before := count()
		if before != taps {
			t.Fatalf("alice has %d holdings after %d taps", before, taps)
		}
		sent := 0
		for before > handful {
			if sent == 10 {
				t.Fatalf("after %d transfers alice still has %d holdings", sent, before)
			}
			prep, err := s.PrepareCCTransfer(ctx, alice.ID, bob.ID, store.MustAmount("1"))
			if err != nil {
				t.Fatal(err)
			}
			r, err := alice.Execute(s, store.KindCCTransfer, prep)
			if err != nil {
				t.Fatal(err)
			}
			sent++
			_, events, err := s.UpdateByID(ctx, parseReceipt(t, r).UpdateID)
			if err != nil {
				t.Fatal(err)
			}
			inputs := 0
			for _, e := range events {
				if e.Event == "consumed" {
					inputs++
				}
			}
			after := count()
			t.Logf("transfer %d: %d inputs, alice's holdings %d -> %d", sent, inputs, before, after)
			if inputs > maxInputs {
				t.Errorf("transfer %d spends %d holdings, more than %d", sent, inputs, maxInputs)
			}
			if inputs <= 2 && before > 2 {
				t.Errorf("transfer %d spends %d holdings, only what 1 CC needs: no consolidation", sent, inputs)
			}
			if after >= before {
				t.Fatalf("transfer %d left alice with %d holdings, %d before", sent, after, before)
			}
			before = after
		}
		if got, want := balanceOf(t, s, alice, store.CC).Amount, store.MustAmount(fmt.Sprint(taps/2-sent)); !got.Equal(want) {
			t.Errorf("alice has %s, want %s", got, want)
		}
		if got := balanceOf(t, s, bob, store.CC).Amount; !got.Equal(store.MustAmount(fmt.Sprint(sent))) {
			t.Errorf("bob has %s, want %d", got, sent)
		}
	})
}

func TestTransfer_ConcurrentExecutesOverMixedHoldingsCommitExactlyTheAffordable(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(new(storetest.Clock)))
		alice, bob := storetest.Onboard(t, s, "alice"), storetest.Onboard(t, s, "bob")
		// 3 x 40 + 8 x 9.25 + 25 x 0.3 = 201.5 CC: 26 transfers of 7.5 CC, 6.5 CC left over.
		for _, h := range []struct {
			n      int
			amount string
		}{{3, "40"}, {8, "9.25"}, {25, "0.3"}} {
			for range h.n {
				alice.Tap(t, s, store.CC, h.amount)
			}
		}
		const workers, affordable = 50, 26
		amount, total, left := store.MustAmount("7.5"), store.MustAmount("201.5"), store.MustAmount("6.5")

		// Round one: fifty transfers prepared, then executed at once. Each holding is spent
		// once, so the committed ones spend disjoint holdings, and each stale one names a
		// holding a committed one spent.
		preps := make([]*store.Prepared, workers)
		for i := range preps {
			p, err := s.PrepareCCTransfer(ctx, alice.ID, bob.ID, amount)
			if err != nil {
				t.Fatal(err)
			}
			preps[i] = p
		}
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for i, p := range preps {
			wg.Go(func() { _, errs[i] = alice.Execute(s, store.KindCCTransfer, p) })
		}
		wg.Wait()
		spent := map[string]int{}
		var staleIdx []int
		for i, err := range errs {
			switch {
			case err == nil:
				for _, cid := range preparedInputs(t, preps[i]) {
					if prev, ok := spent[cid]; ok {
						t.Errorf("transfers %d and %d both committed spending %s", prev, i, cid)
					}
					spent[cid] = i
				}
			case store.ErrorCode(err) == store.CodeStale:
				staleIdx = append(staleIdx, i)
			default:
				t.Errorf("execute %d: %v", i, err)
			}
		}
		for _, i := range staleIdx {
			if !slices.ContainsFunc(preparedInputs(t, preps[i]), func(cid string) bool { _, ok := spent[cid]; return ok }) {
				t.Errorf("transfer %d was stale though no committed transfer spent its holdings", i)
			}
		}
		firstRound := workers - len(staleIdx)

		// Then every worker whose transfer went stale prepares again until it commits or the
		// wallet cannot pay: exactly the affordable number commit in all.
		var mu sync.Mutex
		committed := firstRound
		for range staleIdx {
			wg.Go(func() {
				for attempt := 0; ; attempt++ {
					if attempt == 200 {
						t.Errorf("no outcome after %d attempts", attempt)
						return
					}
					p, err := s.PrepareCCTransfer(ctx, alice.ID, bob.ID, amount)
					if store.ErrorCode(err) == store.CodeInsufficientFunds {
						return
					}
					if err != nil {
						t.Errorf("prepare: %v", err)
						return
					}
					_, err = alice.Execute(s, store.KindCCTransfer, p)
					if err == nil {
						mu.Lock()
						committed++
						mu.Unlock()
						return
					}
					if store.ErrorCode(err) != store.CodeStale {
						t.Errorf("execute: %v", err)
						return
					}
				}
			})
		}
		wg.Wait()
		t.Logf("%d committed in the first round, %d in all", firstRound, committed)
		if committed != affordable {
			t.Errorf("%d transfers committed, want %d", committed, affordable)
		}
		a, bb := balanceOf(t, s, alice, store.CC).Amount, balanceOf(t, s, bob, store.CC).Amount
		if !a.Equal(left) || !bb.Equal(total.Sub(left)) || !a.Add(bb).Equal(total) {
			t.Errorf("alice has %s and bob %s; want %s and %s, %s in all", a, bb, left, total.Sub(left), total)
		}
		if sup, err := s.Supply(ctx); err != nil || !sup[store.CC].Equal(total) {
			t.Errorf("supply %v, %v; want %s CC", sup, err, total)
		}
	})
}

// CC sent round a ring of one's own parties earns a reward at the first hop only: what a
// party passes on within RewardWindow of receiving it by transfer earns nothing, and earns
// again once the window has passed (the security read's row 9).
func TestRewards_ARingOfTransfersEarnsOnlyItsFirstHop(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s, clock, _ := openLedger(t, b)
		a, bb, c := storetest.Onboard(t, s, "a"), storetest.Onboard(t, s, "b"), storetest.Onboard(t, s, "c")
		a.Tap(t, s, store.CC, "100")
		send := func(from, to *storetest.Party, amount string) {
			t.Helper()
			prep, err := s.PrepareCCTransfer(ctx, from.ID, to.ID, store.MustAmount(amount))
			if err != nil {
				t.Fatal(err)
			}
			from.MustExecute(t, s, store.KindCCTransfer, prep)
		}
		reward := func(p *storetest.Party) string {
			t.Helper()
			r, err := s.RewardBalance(ctx, p.ID)
			if err != nil {
				t.Fatal(err)
			}
			return r.String()
		}
		send(a, bb, "10")
		send(bb, c, "10")
		send(c, a, "10")
		if ra, rb, rc := reward(a), reward(bb), reward(c); ra != "0.01" || rb != "0" || rc != "0" {
			t.Fatalf("after one turn of the ring: a %s, b %s, c %s; want 0.01, 0, 0", ra, rb, rc)
		}
		clock.Advance(store.RewardWindow + time.Minute)
		send(a, bb, "10") // a's own CC from the tap, or c's after the window: earns either way
		if ra := reward(a); ra != "0.02" {
			t.Fatalf("a sending again after the window: %s, want 0.02", ra)
		}
	})
}
