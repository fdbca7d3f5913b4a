package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"marketd/store"
	"marketd/store/storetest"
)

// sameAggregates fails unless a and b hold the same figures.
func sameAggregates(t *testing.T, what string, a, b *store.PoolAggregates) {
	t.Helper()
	if !a.TVL.Equal(b.TVL) || a.LPCount != b.LPCount || !a.DepthWeightedSpreadBps.Equal(b.DepthWeightedSpreadBps) ||
		!a.AccruedFees[store.CC].Equal(b.AccruedFees[store.CC]) || !a.AccruedFees[store.USDCx].Equal(b.AccruedFees[store.USDCx]) {
		t.Fatalf("%s: running figures tvl %s lps %d spread %s fees %v; recomputed tvl %s lps %d spread %s fees %v", what,
			a.TVL, a.LPCount, a.DepthWeightedSpreadBps, a.AccruedFees, b.TVL, b.LPCount, b.DepthWeightedSpreadBps, b.AccruedFees)
	}
}

// liveFeeContracts counts the live LP fee contracts of the pool by LP and instrument.
func liveFeeContracts(t *testing.T, raw *sql.DB, poolID string) map[string]int {
	t.Helper()
	rows, err := raw.Query(fmt.Sprintf(`SELECT lp, instrument FROM lp_fees WHERE pool_id = '%s' AND consumed_update IS NULL`, poolID))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := map[string]int{}
	for rows.Next() {
		var lp, inst string
		if err := rows.Scan(&lp, &inst); err != nil {
			t.Fatal(err)
		}
		n[lp+"/"+inst]++
	}
	return n
}

// TestPoolFigures_EqualARecomputationAfterEveryRoundOfConcurrentTrading runs rounds of
// concurrent LP quotes, cancels, swaps (filling at once or waiting), intent cancels, fee
// claims, expiries and oracle moves; after each round the pool's aggregates, read from its
// running figures, equal the same figures computed from its open quotes and live fees, an LP
// never has more than one live fee contract per instrument, and (PostgreSQL) another
// instance reads the same figures.
func TestPoolFigures_EqualARecomputationAfterEveryRoundOfConcurrentTrading(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		w, raw := openSwapWorld(t, b, 30)
		ctx := context.Background()
		seed := propertySeed(t)
		var other *store.Store
		if b.Dialect == store.Postgres {
			other = b.Reopen(t, w.s.Config())
		}
		const lps, takers, workers, rounds, steps = 3, 4, 4, 6, 8
		var parties []*storetest.Party
		for i := range lps + takers {
			parties = append(parties, w.party(fmt.Sprintf("p%d", i), "3000", "8000"))
		}
		var mu sync.Mutex
		stats := map[string]int{}
		do := func(what string, err error) {
			if err != nil && !swapTolerated(err) {
				t.Errorf("%s: %v", what, err)
			}
			mu.Lock()
			if err == nil {
				stats[what]++
			}
			mu.Unlock()
		}
		for round := range rounds {
			var wg sync.WaitGroup
			for g := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(seed, uint64(round*workers+g)))
					for range steps {
						switch op := rng.IntN(12); {
						case op < 4:
							lp := parties[rng.IntN(lps)]
							side, price := store.SideAsk, fmt.Sprintf("2.%02d", 45+rng.IntN(20))
							if rng.IntN(2) == 0 {
								side, price = store.SideBid, fmt.Sprintf("2.%02d", 35+rng.IntN(20))
							}
							prep, err := w.s.PrepareLPQuote(ctx, lp.ID, store.LPQuoteTerms{PoolID: w.pool.PoolID, Side: side, Price: price,
								Size: fmt.Sprintf("%d.%d", 1+rng.IntN(30), rng.IntN(10)), ExpiresAt: w.in(time.Duration(5+rng.IntN(40)) * time.Minute)})
							if err == nil {
								_, err = lp.Execute(w.s, store.KindLPQuote, prep)
							}
							do("quote", err)
						case op < 5:
							lp := parties[rng.IntN(lps)]
							page, err := w.s.ActiveLPQuotes(ctx, lp.ID, store.PageRequest{Limit: 100})
							if err != nil || len(page.Items) == 0 {
								continue
							}
							prep, err := w.s.PrepareLPQuoteCancel(ctx, lp.ID, page.Items[rng.IntN(len(page.Items))].QuoteID)
							if err == nil {
								_, err = lp.Execute(w.s, store.KindLPQuoteCancel, prep)
							}
							do("cancel quote", err)
						case op < 9:
							tk := parties[lps+rng.IntN(takers)]
							sell, amount, est := store.CC, decimal.NewFromInt(int64(1+rng.IntN(15))), dec(t, "2.3")
							if rng.IntN(2) == 0 {
								sell, amount, est = store.USDCx, decimal.NewFromInt(int64(2+rng.IntN(40))), dec(t, "0.37")
							}
							minimum := amount.Mul(est).Truncate(6)
							if rng.IntN(3) == 0 {
								minimum = minimum.Mul(dec(t, "1.08")).Truncate(6) // waits
							}
							prep, err := w.s.PrepareSwap(ctx, tk.ID, store.SwapTerms{PoolID: w.pool.PoolID, Sell: string(sell), Amount: amount.String(),
								MinReceive: minimum.String(), Deadline: w.in(time.Duration(5+rng.IntN(30)) * time.Minute)})
							if err == nil {
								_, err = tk.Execute(w.s, store.KindSwapIntent, prep)
							}
							do("swap", err)
						case op < 10:
							lp := parties[rng.IntN(lps)]
							prep, err := w.s.PrepareClaimFees(ctx, lp.ID, w.pool.PoolID)
							if err == nil {
								_, err = lp.Execute(w.s, store.KindLPClaimFees, prep)
							}
							do("claim", err)
						case op < 11:
							w.clock.Advance(time.Duration(1+rng.IntN(6)) * time.Minute)
							_, err := w.s.ExpireSwaps(ctx, 100)
							do("expire", err)
						default:
							_, err := w.s.SetOraclePrice(ctx, store.CC, store.USDCx, fmt.Sprintf("2.%02d", 40+rng.IntN(20)))
							do("oracle", err)
						}
					}
				}()
			}
			wg.Wait()
			what := fmt.Sprintf("round %d", round)
			got, err := w.s.Aggregates(ctx, w.pool.PoolID)
			if err != nil {
				t.Fatal(err)
			}
			want, err := w.s.AggregatesFromContracts(ctx, w.pool.PoolID)
			if err != nil {
				t.Fatal(err)
			}
			sameAggregates(t, what, got, want)
			if other != nil {
				there, err := other.Aggregates(ctx, w.pool.PoolID)
				if err != nil {
					t.Fatal(err)
				}
				sameAggregates(t, what+" on another instance", there, want)
			}
			for k, n := range liveFeeContracts(t, raw, w.pool.PoolID) {
				if n > 1 {
					t.Fatalf("%s: LP/instrument %s has %d live fee contracts, want at most 1", what, k, n)
				}
			}
		}
		for _, what := range []string{"quote", "swap", "claim", "expire", "oracle"} {
			if stats[what] == 0 {
				t.Errorf("no %s committed in the run: %v", what, stats)
			}
		}
		t.Logf("seed %d: %v", seed, stats)
	})
}

// TestClaimFees_AfterManyFillsIsOneSmallTransactionAndPaysWhatItPrepared fills an LP's quotes
// many times, then claims: the claim archives one fee contract per instrument, pays the sum
// of the fills' fees, and a claim prepared before more fills pays what it showed and leaves
// the later fees accrued.
func TestClaimFees_AfterManyFillsIsOneSmallTransactionAndPaysWhatItPrepared(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		w, raw := openSwapWorld(t, b, 30)
		ctx := context.Background()
		lp, tk := w.party("lp", "10000", "10000"), w.party("tk", "10000", "10000")
		w.quote(lp, store.SideAsk, "2.6", "5000")
		w.quote(lp, store.SideBid, "2.4", "2000")
		const fills = 60
		for i := range fills {
			if i%2 == 0 {
				w.swap(tk, "USDCx", "3", "0")
			} else {
				w.swap(tk, "CC", "1", "0")
			}
		}
		sum := func() map[store.Instrument]decimal.Decimal {
			out := map[store.Instrument]decimal.Decimal{store.CC: decimal.Zero, store.USDCx: decimal.Zero}
			for r := (store.PageRequest{Limit: 100}); ; {
				page, err := w.s.SwapHistory(ctx, store.SwapHistoryFilter{Taker: tk.ID}, r)
				if err != nil {
					t.Fatal(err)
				}
				for _, h := range page.Items {
					out[h.Receive] = out[h.Receive].Add(h.Fee.Decimal())
				}
				if page.Cursor == "" {
					return out
				}
				r.Cursor = page.Cursor
			}
		}
		fees := sum()
		if live := liveFeeContracts(t, raw, w.pool.PoolID); live[lp.ID+"/CC"] != 1 || live[lp.ID+"/USDCx"] != 1 {
			t.Fatalf("after %d fills the LP has live fee contracts %v, want one per instrument", fills, live)
		}
		prep, err := w.s.PrepareClaimFees(ctx, lp.ID, w.pool.PoolID)
		if err != nil {
			t.Fatal(err)
		}
		w.swap(tk, "USDCx", "3", "0") // a fill between prepare and execute
		r := w.run(lp, store.KindLPClaimFees, prep, nil)
		claimed := r["claimed"].(map[string]any)
		for inst, want := range fees {
			if got := dec(t, claimed[string(inst)].(string)); !got.Equal(want) {
				t.Errorf("claimed %s %s, the fills' fees before the prepare sum to %s", got, inst, want)
			}
		}
		var consumed int
		if err := raw.QueryRow(`SELECT COUNT(*) FROM update_events WHERE update_id = (SELECT update_id FROM updates WHERE kind = 'swap.lp-claim-fees') AND event = 'consumed'`).Scan(&consumed); err != nil {
			t.Fatal(err)
		}
		if consumed != 2 {
			t.Errorf("the claim archived %d contracts, want 2 (one running fee per instrument)", consumed)
		}
		a, err := w.s.Aggregates(ctx, w.pool.PoolID)
		if err != nil {
			t.Fatal(err)
		}
		later := sum()
		if !a.AccruedFees[store.CC].Decimal().Equal(later[store.CC].Sub(fees[store.CC])) || !a.AccruedFees[store.USDCx].IsZero() {
			t.Errorf("after the claim the pool accrues %v; the fill after the prepare retained %s CC", a.AccruedFees, later[store.CC].Sub(fees[store.CC]))
		}
		again, err := w.s.PrepareClaimFees(ctx, lp.ID, w.pool.PoolID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lp.Execute(w.s, store.KindLPClaimFees, again); err != nil {
			t.Fatal(err)
		}
		if _, err := w.s.PrepareClaimFees(ctx, lp.ID, w.pool.PoolID); store.ErrorCode(err) != store.CodeConflict {
			t.Errorf("a claim with nothing accrued: %v, want conflict", err)
		}
	})
}

// TestClaimFees_TwoClaimsOfTheSameFeesPayOnce executes two claims prepared from the same
// fees: the second is stale, and nothing is paid twice.
func TestClaimFees_TwoClaimsOfTheSameFeesPayOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		w, _ := openSwapWorld(t, b, 30)
		ctx := context.Background()
		lp, tk := w.party("lp", "1000", "1000"), w.party("tk", "1000", "1000")
		w.quote(lp, store.SideAsk, "2.6", "100")
		w.swap(tk, "USDCx", "30", "0")
		first, err := w.s.PrepareClaimFees(ctx, lp.ID, w.pool.PoolID)
		if err != nil {
			t.Fatal(err)
		}
		second, err := w.s.PrepareClaimFees(ctx, lp.ID, w.pool.PoolID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lp.Execute(w.s, store.KindLPClaimFees, first); err != nil {
			t.Fatal(err)
		}
		if _, err := lp.Execute(w.s, store.KindLPClaimFees, second); store.ErrorCode(err) != store.CodeStale {
			t.Fatalf("the second claim of the same fees: %v, want stale", err)
		}
	})
}
