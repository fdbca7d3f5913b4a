package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"marketd/store"
	"marketd/store/storetest"
)

// openSwapWorld is newSwapWorld with a raw connection to the same database, through which a
// test reads the update log and the contract tables independently of the store's queries.
func openSwapWorld(t *testing.T, b storetest.Backend, feeBps int) (*swapWorld, *sql.DB) {
	t.Helper()
	s, clock, raw := openLedger(t, b)
	ctx := context.Background()
	if _, err := s.SetOraclePrice(ctx, store.CC, store.USDCx, "2.5"); err != nil {
		t.Fatal(err)
	}
	p, err := s.CreatePool(ctx, store.CC, store.USDCx, feeBps)
	if err != nil {
		t.Fatal(err)
	}
	return &swapWorld{t: t, s: s, clock: clock, pool: p}, raw
}

func dec(t testing.TB, s string) decimal.Decimal {
	t.Helper()
	d, err := decimal.NewFromString(s)
	if err != nil {
		t.Fatalf("decimal %q: %v", s, err)
	}
	return d
}

// swapTolerated tells whether err is what a concurrent swap world may answer instead of
// success: another worker took the liquidity, the funds or the time first.
func swapTolerated(err error) bool {
	switch store.ErrorCode(err) {
	case store.CodeStale, store.CodeConflict, store.CodeInsufficientFunds, store.CodePreparedExpired:
		return true
	case store.CodeInvalidRequest: // another worker moved the clock past the expiry it chose
		return strings.Contains(store.ErrorMessage(err), "in the future")
	}
	return false
}

// TestSwap_PropertyConcurrentQuotesAndIntentsConserveAndFillWithinTerms runs LP quote
// publishes, cancels and expiries concurrently with intents that fill at once, across
// several quotes, wait and fill later, expire or are cancelled; then checks that every
// instrument is conserved (locked and unclaimed fees included), no quote gave more than its
// size, every fill met its taker's minimum with fees by the rule, and every fill's update
// moved exactly the holdings its receipt states.
func TestSwap_PropertyConcurrentQuotesAndIntentsConserveAndFillWithinTerms(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		w, raw := openSwapWorld(t, b, 30)
		ctx := context.Background()
		seed := propertySeed(t)
		const lps, takers, workers, steps = 3, 5, 6, 25
		var parties []*storetest.Party
		for i := range lps + takers {
			parties = append(parties, w.party(fmt.Sprintf("p%d", i), "2000", "5000"))
		}
		minted := map[store.Instrument]decimal.Decimal{store.CC: dec(t, "2000").Mul(decimal.NewFromInt(lps + takers)), store.USDCx: dec(t, "5000").Mul(decimal.NewFromInt(lps + takers))}

		var mu sync.Mutex
		stats := map[string]int{}
		count := func(what string) { mu.Lock(); stats[what]++; mu.Unlock() }
		var wg sync.WaitGroup
		for g := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(seed, uint64(g)))
				for range steps {
					switch op := rng.IntN(10); {
					case op < 3: // an LP publishes
						lp := parties[rng.IntN(lps)]
						side, price := store.SideAsk, fmt.Sprintf("2.%02d", 50+rng.IntN(15))
						if rng.IntN(2) == 0 {
							side, price = store.SideBid, fmt.Sprintf("2.%02d", 35+rng.IntN(15))
						}
						life := time.Duration(10+rng.IntN(90)) * time.Minute
						prep, err := w.s.PrepareLPQuote(ctx, lp.ID, store.LPQuoteTerms{PoolID: w.pool.PoolID, Side: side, Price: price,
							Size: fmt.Sprintf("%d.%d", 1+rng.IntN(30), rng.IntN(10)), ExpiresAt: w.in(life)})
						if err == nil {
							_, err = lp.Execute(w.s, store.KindLPQuote, prep)
						}
						if err != nil && !swapTolerated(err) {
							t.Errorf("publish: %v", err)
						}
						count("publish")
					case op < 4: // an LP cancels one of its quotes
						lp := parties[rng.IntN(lps)]
						page, err := w.s.ActiveLPQuotes(ctx, lp.ID, store.PageRequest{Limit: 100})
						if err != nil || len(page.Items) == 0 {
							continue
						}
						prep, err := w.s.PrepareLPQuoteCancel(ctx, lp.ID, page.Items[rng.IntN(len(page.Items))].QuoteID)
						if err == nil {
							_, err = lp.Execute(w.s, store.KindLPQuoteCancel, prep)
						}
						if err != nil && !swapTolerated(err) {
							t.Errorf("cancel quote: %v", err)
						}
						count("cancel quote")
					case op < 8: // a taker swaps; a high minimum makes it wait
						tk := parties[lps+rng.IntN(takers)]
						sell, amount, est := store.CC, decimal.NewFromInt(int64(1+rng.IntN(20))), dec(t, "2.4")
						if rng.IntN(2) == 0 {
							sell, amount, est = store.USDCx, decimal.NewFromInt(int64(2+rng.IntN(50))), dec(t, "0.38")
						}
						minimum := amount.Mul(est).Truncate(6)
						if rng.IntN(3) == 0 {
							minimum = minimum.Mul(dec(t, "1.05")).Truncate(6)
						}
						prep, err := w.s.PrepareSwap(ctx, tk.ID, store.SwapTerms{PoolID: w.pool.PoolID, Sell: string(sell), Amount: amount.String(),
							MinReceive: minimum.String(), Deadline: w.in(time.Duration(5+rng.IntN(60)) * time.Minute)})
						if err == nil {
							_, err = tk.Execute(w.s, store.KindSwapIntent, prep)
						}
						if err != nil && !swapTolerated(err) {
							t.Errorf("swap: %v", err)
						}
						count("swap")
					case op < 9: // a taker cancels a pending intent
						tk := parties[lps+rng.IntN(takers)]
						page, err := w.s.ActiveIntents(ctx, tk.ID, store.PageRequest{Limit: 100})
						if err != nil || len(page.Items) == 0 {
							continue
						}
						prep, err := w.s.PrepareIntentCancel(ctx, tk.ID, page.Items[0].IntentCID)
						if err == nil {
							_, err = tk.Execute(w.s, store.KindIntentCancel, prep)
						}
						if err != nil && !swapTolerated(err) {
							t.Errorf("cancel intent: %v", err)
						}
						count("cancel intent")
					default: // time passes: expiries, and the loop's retry
						w.clock.Advance(time.Duration(1+rng.IntN(5)) * time.Minute)
						if _, err := w.s.ExpireSwaps(ctx, 100); err != nil {
							t.Errorf("expire: %v", err)
						}
						if _, err := w.s.FillWaiting(ctx, w.pool.PoolID); err != nil {
							t.Errorf("fill waiting: %v", err)
						}
						count("tick")
					}
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			return
		}

		// Conservation: spendable + locked + unclaimed fees = what was minted.
		held := map[store.Instrument]decimal.Decimal{store.CC: decimal.Zero, store.USDCx: decimal.Zero}
		for _, p := range parties {
			for _, inst := range store.Instruments {
				bal := balanceOf(t, w.s, p, inst)
				held[inst] = held[inst].Add(bal.Amount.Decimal()).Add(bal.Locked.Decimal())
			}
		}
		agg, err := w.s.Aggregates(ctx, w.pool.PoolID)
		if err != nil {
			t.Fatal(err)
		}
		for _, inst := range store.Instruments {
			if got := held[inst].Add(agg.AccruedFees[inst].Decimal()); !got.Equal(minted[inst]) {
				t.Errorf("%s not conserved: held+locked+fees %s, minted %s", inst, got, minted[inst])
			}
		}

		// No quote gave more than its size.
		rows, err := raw.Query(`SELECT q.quote_id, q.side, q.size, f.amount_in, f.amount_out FROM swap_fills f
			JOIN lp_quotes q ON q.cid = f.quote_id`)
		if err != nil {
			t.Fatal(err)
		}
		taken := map[string]decimal.Decimal{}
		size := map[string]decimal.Decimal{}
		fills := 0
		for rows.Next() {
			var id, side, sz, in, out string
			if err := rows.Scan(&id, &side, &sz, &in, &out); err != nil {
				t.Fatal(err)
			}
			base := dec(t, out)
			if side == store.SideBid {
				base = dec(t, in)
			}
			taken[id] = taken[id].Add(base)
			size[id] = dec(t, sz)
			fills++
		}
		rows.Close()
		for id, n := range taken {
			if n.GreaterThan(size[id]) {
				t.Errorf("quote %s gave %s base, more than its size %s", id, n, size[id])
			}
		}

		// Every filled intent met its minimum, its fees follow the rule, and its update moved
		// exactly what its fills say.
		filledIntents, waited := 0, 0
		for _, tk := range parties[lps:] {
			for r := (store.PageRequest{Limit: 100}); ; {
				page, err := w.s.SwapHistory(ctx, store.SwapHistoryFilter{Taker: tk.ID}, r)
				if err != nil {
					t.Fatal(err)
				}
				for _, h := range page.Items {
					filledIntents++
					v, err := w.s.IntentStatus(ctx, tk.ID, h.IntentCID)
					if err != nil {
						t.Fatal(err)
					}
					if checkFilledIntent(t, w.s, v, w.pool.FeeBps) == store.KindSwapFill {
						waited++
					}
				}
				if page.Cursor == "" {
					break
				}
				r.Cursor = page.Cursor
			}
		}
		if fills == 0 || filledIntents == 0 || stats["swap"] == 0 || stats["publish"] == 0 {
			t.Errorf("the run exercised too little: %d fills, %d filled intents, %v", fills, filledIntents, stats)
		}
		t.Logf("seed %d: %v; %d fills in %d filled intents, %d of them after waiting", seed, stats, fills, filledIntents, waited)
		storetest.CheckLog(t, w.s) // quotes, intents batched per pool, the service's fills
	})
}

// checkFilledIntent checks a filled intent against its terms and against the holdings its
// settling update created, and returns that update's kind.
func checkFilledIntent(t *testing.T, s *store.Store, v *store.IntentView, feeBps int) string {
	t.Helper()
	ctx := context.Background()
	if v.Received == nil || v.Received.Cmp(v.MinReceive) < 0 {
		t.Errorf("intent %s received %v, below its minimum %s", v.IntentCID, v.Received, v.MinReceive)
		return ""
	}
	in, out, fee := decimal.Zero, decimal.Zero, decimal.Zero
	paid := map[string]decimal.Decimal{}
	for _, f := range v.Fills {
		want := f.AmountOut.Decimal().Mul(decimal.NewFromInt(int64(feeBps))).Div(decimal.NewFromInt(10000)).Truncate(v.Receive.Decimals())
		if !f.Fee.Decimal().Equal(want) {
			t.Errorf("intent %s: fill fee %s, want %s", v.IntentCID, f.Fee, want)
		}
		in, out, fee = in.Add(f.AmountIn.Decimal()), out.Add(f.AmountOut.Decimal()), fee.Add(f.Fee.Decimal())
		paid[f.LP] = paid[f.LP].Add(f.AmountIn.Decimal())
	}
	if !in.Equal(v.Amount.Decimal()) || !out.Sub(fee).Equal(v.Received.Decimal()) {
		t.Errorf("intent %s: fills take %s of %s and give %s-%s, received %s", v.IntentCID, in, v.Amount, out, fee, v.Received)
	}
	u, events, err := s.UpdateByID(ctx, *v.ClosedUpdate)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]decimal.Decimal{} // credits of the update, by owner and instrument
	for _, e := range events {
		if e.Event != "created" || e.Template != "holdings" {
			continue
		}
		h, err := s.HoldingByID(ctx, e.CID)
		if err != nil {
			t.Fatal(err)
		}
		k := h.Owner + "/" + string(h.Instrument)
		got[k] = got[k].Add(h.Amount.Decimal())
	}
	if k := v.Taker + "/" + string(v.Receive); !got[k].Equal(v.Received.Decimal()) {
		t.Errorf("intent %s: the update credited the taker %s %s, the receipt says %s", v.IntentCID, got[k], v.Receive, v.Received)
	}
	for lp, amount := range paid {
		if k := lp + "/" + string(v.Sell); !got[k].Equal(amount) {
			t.Errorf("intent %s: the update paid LP %s %s %s, the fills say %s", v.IntentCID, lp, got[k], v.Sell, amount)
		}
	}
	return u.Kind
}

// TestSwap_TwoIntentsRacingForTheLastLiquidityOfAQuoteFillOnce races two intents that each
// need all that is left of one ask: exactly one fills from it, the other waits, and then
// fills from the next liquidity, not from the first quote again.
func TestSwap_TwoIntentsRacingForTheLastLiquidityOfAQuoteFillOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		w, raw := openSwapWorld(t, b, 0)
		ctx := context.Background()
		lp := w.party("lp", "1000", "")
		a, c := w.party("a", "", "100"), w.party("c", "", "100")
		for round := range 3 {
			first := w.quote(lp, store.SideAsk, "2", "10")
			preps := make([]*store.Prepared, 2)
			for i, tk := range []*storetest.Party{a, c} {
				p, err := w.s.PrepareSwap(ctx, tk.ID, store.SwapTerms{PoolID: w.pool.PoolID, Sell: "USDCx", Amount: "20", MinReceive: "10", Deadline: w.in(time.Hour)})
				if err != nil {
					t.Fatal(err)
				}
				preps[i] = p
			}
			var wg sync.WaitGroup
			start := make(chan struct{})
			results := make([]string, 2)
			for i, tk := range []*storetest.Party{a, c} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					r, err := tk.Execute(w.s, store.KindSwapIntent, preps[i])
					if err != nil {
						t.Errorf("submit: %v", err)
						return
					}
					results[i] = string(r)
				}()
			}
			close(start)
			wg.Wait()
			if t.Failed() {
				return
			}
			filled, pending := 0, 0
			for _, r := range results {
				switch {
				case strings.Contains(r, `"intentStatus":"filled"`):
					filled++
				case strings.Contains(r, `"intentStatus":"pending"`):
					pending++
				}
			}
			if filled != 1 || pending != 1 {
				t.Fatalf("round %d: %d filled, %d pending: %v", round, filled, pending, results)
			}
			second := w.quote(lp, store.SideAsk, "2", "10") // the waiting intent fills from this one
			var takenFirst, takenSecond string
			if err := raw.QueryRow(fmt.Sprintf(`SELECT COALESCE(SUM(amount_out), 0) FROM swap_fills WHERE quote_id = '%s'`, first)).Scan(&takenFirst); err != nil {
				t.Fatal(err)
			}
			if err := raw.QueryRow(fmt.Sprintf(`SELECT COALESCE(SUM(amount_out), 0) FROM swap_fills WHERE quote_id = '%s'`, second)).Scan(&takenSecond); err != nil {
				t.Fatal(err)
			}
			if !dec(t, takenFirst).Equal(decimal.NewFromInt(10)) || !dec(t, takenSecond).Equal(decimal.NewFromInt(10)) {
				t.Fatalf("round %d: quotes gave %s and %s CC, want 10 each", round, takenFirst, takenSecond)
			}
		}
		w.wantBalance(a, store.CC, "30", "0")
		w.wantBalance(c, store.CC, "30", "0")
		w.wantBalance(lp, store.USDCx, "120", "0")
	})
}

// TestSwap_AggregatesEqualAnIndependentRecomputationFromTheUpdateLog recomputes a pool's
// aggregates from the update log (what was created and not consumed since) and the oracle,
// with its own arithmetic, and compares them with the store's.
func TestSwap_AggregatesEqualAnIndependentRecomputationFromTheUpdateLog(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		w, raw := openSwapWorld(t, b, 30)
		ctx := context.Background()
		lp1, lp2, lp3 := w.party("lp1", "1000", "1000"), w.party("lp2", "1000", "1000"), w.party("lp3", "1000", "1000")
		tk := w.party("tk", "500", "500")
		w.quote(lp1, store.SideAsk, "2.6", "40")
		w.quote(lp1, store.SideBid, "2.41", "13.5")
		w.quote(lp2, store.SideAsk, "2.55", "7.25")
		gone := w.quote(lp3, store.SideBid, "2.3", "100")
		w.quote(lp2, store.SideBid, "2.45", "30")
		w.swap(tk, "CC", "5", "0")
		w.swap(tk, "USDCx", "30", "0")
		w.swap(tk, "USDCx", "2.123457", "0")
		prep, err := w.s.PrepareLPQuoteCancel(ctx, lp3.ID, gone)
		w.run(lp3, store.KindLPQuoteCancel, prep, err)
		prep, err = w.s.PrepareClaimFees(ctx, lp2.ID, w.pool.PoolID)
		w.run(lp2, store.KindLPClaimFees, prep, err)
		w.swap(tk, "CC", "1.5", "0")

		// Live contracts by the log: created by some update and consumed by none.
		live := map[string]bool{}
		rows, err := raw.Query(`SELECT template, cid, event FROM update_events e JOIN updates u ON u.update_id = e.update_id ORDER BY u.ledger_offset, e.seq`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var template, cid, event string
			if err := rows.Scan(&template, &cid, &event); err != nil {
				t.Fatal(err)
			}
			live[template+"/"+cid] = event == "created"
		}
		rows.Close()
		P := dec(t, "2.5")
		tvl, depth, weighted := decimal.Zero, decimal.Zero, decimal.Zero
		lps := map[string]bool{}
		rows, err = raw.Query(fmt.Sprintf(`SELECT cid, lp, side, price, remaining, instrument, amount FROM lp_quotes WHERE pool_id = '%s'`, w.pool.PoolID))
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var cid, lp, side, price, remaining, inst, amount string
			if err := rows.Scan(&cid, &lp, &side, &price, &remaining, &inst, &amount); err != nil {
				t.Fatal(err)
			}
			if !live["lp_quotes/"+cid] {
				continue
			}
			lps[lp] = true
			if side == store.SideAsk {
				tvl = tvl.Add(dec(t, amount).Mul(P))
			} else {
				tvl = tvl.Add(dec(t, amount))
			}
			depth = depth.Add(dec(t, remaining))
			weighted = weighted.Add(dec(t, remaining).Mul(dec(t, price).Sub(P).Abs()))
		}
		rows.Close()
		fees := map[string]decimal.Decimal{"CC": decimal.Zero, "USDCx": decimal.Zero}
		rows, err = raw.Query(fmt.Sprintf(`SELECT cid, instrument, amount FROM lp_fees WHERE pool_id = '%s'`, w.pool.PoolID))
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var cid, inst, amount string
			if err := rows.Scan(&cid, &inst, &amount); err != nil {
				t.Fatal(err)
			}
			if live["lp_fees/"+cid] {
				fees[inst] = fees[inst].Add(dec(t, amount))
			}
		}
		rows.Close()
		spread := weighted.Mul(decimal.NewFromInt(20000)).DivRound(P.Mul(depth), 8).Truncate(2)

		a, err := w.s.Aggregates(ctx, w.pool.PoolID)
		if err != nil {
			t.Fatal(err)
		}
		if !a.TVL.Decimal().Equal(tvl.Truncate(6)) || a.LPCount != len(lps) || !a.DepthWeightedSpreadBps.Decimal().Equal(spread) ||
			!a.AccruedFees[store.CC].Decimal().Equal(fees["CC"]) || !a.AccruedFees[store.USDCx].Decimal().Equal(fees["USDCx"]) {
			t.Fatalf("aggregates tvl %s lps %d spread %s fees %v; the log says %s, %d, %s, %v", a.TVL, a.LPCount, a.DepthWeightedSpreadBps, a.AccruedFees, tvl.Truncate(6), len(lps), spread, fees)
		}
		if a.LPCount != 2 || !fees["CC"].IsPositive() || !fees["USDCx"].IsPositive() {
			t.Fatalf("the scenario should leave 2 LPs and fees in both instruments: %+v", a)
		}
	})
}
