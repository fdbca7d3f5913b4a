package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// swapWorld is a store with an oracle price, one pool and funded parties.
type swapWorld struct {
	t     testing.TB
	s     *store.Store
	clock *storetest.Clock
	pool  *store.Pool
}

func newSwapWorld(t testing.TB, b storetest.Backend, feeBps int) *swapWorld {
	t.Helper()
	clock := storetest.NewClock(storetest.Epoch)
	s := b.Open(t, storetest.Config(clock))
	ctx := context.Background()
	if _, err := s.SetOraclePrice(ctx, store.CC, store.USDCx, "2.5"); err != nil {
		t.Fatal(err)
	}
	p, err := s.CreatePool(ctx, store.CC, store.USDCx, feeBps)
	if err != nil {
		t.Fatal(err)
	}
	return &swapWorld{t: t, s: s, clock: clock, pool: p}
}

func (w *swapWorld) party(hint, cc, usdcx string) *storetest.Party {
	w.t.Helper()
	p := storetest.Onboard(w.t, w.s, hint)
	if cc != "" {
		p.Tap(w.t, w.s, store.CC, cc)
	}
	if usdcx != "" {
		p.Tap(w.t, w.s, store.USDCx, usdcx)
	}
	return p
}

// run executes a prepare's outcome signed by p and decodes the receipt.
func (w *swapWorld) run(p *storetest.Party, kind string, prep *store.Prepared, err error) map[string]any {
	w.t.Helper()
	if err != nil {
		w.t.Fatalf("%s prepare: %v", kind, err)
	}
	r, err := p.Execute(w.s, kind, prep)
	if err != nil {
		w.t.Fatalf("%s execute: %v", kind, err)
	}
	var m map[string]any
	if err := json.Unmarshal(r, &m); err != nil {
		w.t.Fatal(err)
	}
	return m
}

func (w *swapWorld) in(d time.Duration) int64 { return w.clock.Now().Add(d).Unix() }

func (w *swapWorld) quote(lp *storetest.Party, side, price, size string) string {
	w.t.Helper()
	prep, err := w.s.PrepareLPQuote(context.Background(), lp.ID, store.LPQuoteTerms{PoolID: w.pool.PoolID, Side: side, Price: price, Size: size, ExpiresAt: w.in(time.Hour)})
	return w.run(lp, store.KindLPQuote, prep, err)["cid"].(string)
}

func (w *swapWorld) swap(taker *storetest.Party, sell, amount, minReceive string) (cid, status string) {
	w.t.Helper()
	prep, err := w.s.PrepareSwap(context.Background(), taker.ID, store.SwapTerms{PoolID: w.pool.PoolID, Sell: sell, Amount: amount, MinReceive: minReceive, Deadline: w.in(time.Hour)})
	r := w.run(taker, store.KindSwapIntent, prep, err)
	return r["intentCid"].(string), r["intentStatus"].(string)
}

func (w *swapWorld) wantBalance(p *storetest.Party, inst store.Instrument, amount, locked string) {
	w.t.Helper()
	b := balanceOf(w.t, w.s, p, inst)
	if !b.Amount.Equal(store.MustAmount(amount)) || !b.Locked.Equal(store.MustAmount(locked)) {
		w.t.Fatalf("%s balance %s locked %s, want %s locked %s", inst, b.Amount, b.Locked, amount, locked)
	}
}

func TestSwap_FillsBestPriceFirstAcrossQuotesWithFeesToTheLPs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		w := newSwapWorld(t, b, 30)
		ctx := context.Background()
		lp1, lp2 := w.party("lp1", "1000", "1000"), w.party("lp2", "1000", "1000")
		taker := w.party("taker", "100", "100")
		w.quote(lp1, store.SideBid, "2.4", "5")
		best := w.quote(lp2, store.SideBid, "2.45", "4")
		w.quote(lp1, store.SideAsk, "2.6", "100")
		w.wantBalance(lp1, store.USDCx, "988", "12")
		w.wantBalance(lp1, store.CC, "900", "100")

		// 6 CC: 4 to lp2's bid at 2.45 (9.8 gross), 2 to lp1's at 2.4 (4.8 gross); fees 30 bps.
		cid, status := w.swap(taker, "CC", "6", "14.5")
		if status != store.IntentFilled {
			t.Fatalf("status %s, want filled", status)
		}
		v, err := w.s.IntentStatus(ctx, taker.ID, cid)
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Fills) != 2 || v.Fills[0].QuoteID != best || v.Fills[0].AmountOut.String() != "9.8" || v.Fills[0].Fee.String() != "0.0294" ||
			v.Fills[1].AmountOut.String() != "4.8" || v.Fills[1].Fee.String() != "0.0144" || v.Received.String() != "14.5562" {
			t.Fatalf("fills %+v received %s", v.Fills, v.Received)
		}
		w.wantBalance(taker, store.USDCx, "114.5562", "0")
		w.wantBalance(taker, store.CC, "94", "0")
		w.wantBalance(lp2, store.CC, "1004", "0")
		// lp1's bid keeps 3 CC open: 7.2 USDCx locked.
		w.wantBalance(lp1, store.USDCx, "988", "7.2")
		a, err := w.s.Aggregates(ctx, w.pool.PoolID)
		if err != nil {
			t.Fatal(err)
		}
		if a.AccruedFees[store.USDCx].String() != "0.0438" || a.LPCount != 1 {
			t.Fatalf("aggregates %+v", a)
		}
		prep, err := w.s.PrepareClaimFees(ctx, lp2.ID, w.pool.PoolID)
		r := w.run(lp2, store.KindLPClaimFees, prep, err)
		if got := r["claimed"].(map[string]any)["USDCx"]; got != "0.0294" {
			t.Fatalf("claimed %v", r)
		}
		w.wantBalance(lp2, store.USDCx, "990.2294", "0")
		if _, err := w.s.PrepareClaimFees(ctx, lp2.ID, w.pool.PoolID); store.ErrorCode(err) != store.CodeConflict {
			t.Fatalf("second claim: %v, want conflict", err)
		}

		// Buying CC with 26 USDCx from the ask at 2.6: 10 CC gross, 0.03 CC fee.
		_, status = w.swap(taker, "USDCx", "26", "9.97")
		if status != store.IntentFilled {
			t.Fatalf("status %s", status)
		}
		w.wantBalance(taker, store.CC, "103.97", "0")
	})
}

func TestSwap_WaitingIntentFillsWhenLiquidityArrivesAndExpiresOtherwise(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		w := newSwapWorld(t, b, 0)
		ctx := context.Background()
		lp := w.party("lp", "1000", "1000")
		taker := w.party("taker", "100", "")
		w.quote(lp, store.SideBid, "2", "1")
		cid, status := w.swap(taker, "CC", "10", "20")
		if status != store.IntentPending {
			t.Fatalf("status %s, want pending", status)
		}
		w.wantBalance(taker, store.CC, "90", "10")
		page, err := w.s.ActiveIntents(ctx, taker.ID, store.PageRequest{})
		if err != nil || len(page.Items) != 1 || page.Items[0].IntentCID != cid {
			t.Fatalf("active %+v %v", page.Items, err)
		}
		// A bid too low to meet the minimum changes nothing; a better one fills it.
		w.quote(lp, store.SideBid, "1.9", "20")
		w.wantBalance(taker, store.CC, "90", "10")
		w.quote(lp, store.SideBid, "2.1", "9")
		v, err := w.s.IntentStatus(ctx, taker.ID, cid)
		if err != nil || v.Status != store.IntentFilled || v.Received.String() != "20.9" {
			t.Fatalf("intent %+v %v", v, err)
		}
		w.wantBalance(taker, store.CC, "90", "0")
		w.wantBalance(taker, store.USDCx, "20.9", "0")

		// A second waiting intent expires at its deadline and gets its lock back.
		cid2, status := w.swap(taker, "CC", "50", "200")
		if status != store.IntentPending {
			t.Fatalf("status %s", status)
		}
		w.clock.Advance(2 * time.Hour)
		if n, err := w.s.ExpireSwaps(ctx, 100); err != nil || n < 2 {
			t.Fatalf("expired %d %v", n, err)
		}
		v, err = w.s.IntentStatus(ctx, taker.ID, cid2)
		if err != nil || v.Status != store.IntentExpired {
			t.Fatalf("intent %+v %v", v, err)
		}
		w.wantBalance(taker, store.CC, "90", "0")
		w.wantBalance(lp, store.CC, "1010", "0")
		w.wantBalance(lp, store.USDCx, "979.1", "0")
	})
}

func TestSeedDemo_AddsAPoolAnOraclePriceAndQuotesOnBothSides(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
		sum, err := s.SeedDemo(ctx, store.DemoOptions{NFTs: 40, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(sum.Pools) != 1 || sum.LPQuotes == 0 || sum.Swaps == 0 {
			t.Fatalf("seeded %+v", sum)
		}
		for _, sell := range []string{"CC", "USDCx"} {
			q, err := s.Quote(ctx, sell, "10", "")
			if err != nil || q.EstimatedReceive == nil || !q.EstimatedReceive.IsPositive() {
				t.Fatalf("a newcomer's quote to sell 10 %s: %+v, %v", sell, q, err)
			}
		}
		h, err := s.SwapHistory(ctx, store.SwapHistoryFilter{PoolID: sum.Pools[0]}, store.PageRequest{})
		if err != nil || len(h.Items) != sum.Swaps {
			t.Fatalf("pool history %d items, %v; want %d", len(h.Items), err, sum.Swaps)
		}
	})
}

func TestSwap_SubmitIsIdempotentAndRefusesAWrongSignerChangingNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		w := newSwapWorld(t, b, 30)
		ctx := context.Background()
		lp, taker, other := w.party("lp", "100", "100"), w.party("taker", "10", ""), w.party("other", "", "")
		w.quote(lp, store.SideBid, "2", "50")
		prep, err := w.s.PrepareSwap(ctx, taker.ID, store.SwapTerms{PoolID: w.pool.PoolID, Sell: "CC", Amount: "4", MinReceive: "7", Deadline: w.in(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.Execute(w.s, store.KindSwapIntent, prep); store.ErrorCode(err) != store.CodePartyMismatch {
			t.Fatalf("another party's submit: %v, want party_mismatch", err)
		}
		forged, err := w.s.Execute(ctx, store.Execution{Kinds: []string{store.KindSwapIntent}, Hash: prep.Hash, Signature: make([]byte, 64), Caller: taker.ID})
		if store.ErrorCode(err) != store.CodeInvalidSignature || forged != nil {
			t.Fatalf("a bad signature: %v, want invalid_signature", err)
		}
		w.wantBalance(taker, store.CC, "10", "0")
		first, err := taker.Execute(w.s, store.KindSwapIntent, prep)
		if err != nil {
			t.Fatal(err)
		}
		again, err := taker.Execute(w.s, store.KindSwapIntent, prep)
		if err != nil || string(again) != string(first) {
			t.Fatalf("replay answered %s, %v; the first receipt was %s", again, err, first)
		}
		w.wantBalance(taker, store.CC, "6", "0")
		w.wantBalance(taker, store.USDCx, "7.976", "0")
	})
}
