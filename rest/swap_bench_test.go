package rest

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// benchPool is a pool of 50 open LP quotes from 5 LPs (25 asks, 25 bids, deep enough for
// hundreds of thousands of small fills) and funded takers, signed in.
type benchPool struct {
	pool    *store.Pool
	lps     []benchTrader
	takers  []benchTrader
	expires int64
}

type benchTrader struct {
	p   *storetest.Party
	tok string
}

func newBenchPool(b *testing.B, a *benchAPI, takers int) *benchPool {
	const lps, quotes = 5, 50
	ctx := context.Background()
	if _, err := a.store.SetOraclePrice(ctx, store.CC, store.USDCx, "2.5"); err != nil {
		b.Fatal(err)
	}
	pool, err := a.store.CreatePool(ctx, store.CC, store.USDCx, 30)
	if err != nil {
		b.Fatal(err)
	}
	m := &benchPool{pool: pool, expires: time.Now().Add(24 * time.Hour).Unix()}
	trader := func(hint string) benchTrader {
		p := a.onboard(b, hint)
		tok := a.signIn(b, p)
		a.prepareExecute(b, "/api/wallet/tap", tok, map[string]string{"instrument": "CC", "amount": "1000000"}, p)
		a.prepareExecute(b, "/api/wallet/tap", tok, map[string]string{"instrument": "USDCx", "amount": "1000000"}, p)
		return benchTrader{p, tok}
	}
	for i := range lps {
		lp := trader(fmt.Sprintf("lp%d", i))
		for j := range quotes / lps {
			side, price := "ask", fmt.Sprintf("2.%d", 51+i*10+j)
			if j%2 == 1 {
				side, price = "bid", fmt.Sprintf("2.%d", 49-i*4-j)
			}
			a.prepareExecute(b, "/api/swap/lp-quote", lp.tok, map[string]any{"poolId": pool.PoolID, "side": side, "price": price, "size": "20000", "expiresAt": m.expires}, lp.p)
		}
		m.lps = append(m.lps, lp)
	}
	for i := range takers {
		m.takers = append(m.takers, trader(fmt.Sprintf("t%d", i)))
	}
	return m
}

// swap prepares and submits one small intent as t (selling CC when sellBase, else USDCx)
// and returns its status and the submit's time.
func (m *benchPool) swap(b *testing.B, a *benchAPI, t benchTrader, sellBase bool) (string, time.Duration) {
	sell, amount := "CC", "1"
	if !sellBase {
		sell, amount = "USDCx", "2.5"
	}
	var prep struct {
		Hash string `json:"preparedTransactionHash"`
	}
	a.call(b, "POST", "/api/swap/prepare", t.tok, map[string]any{"poolId": m.pool.PoolID, "sell": sell, "amount": amount, "minReceive": "0", "deadline": m.expires}, &prep)
	raw, _ := base64.StdEncoding.DecodeString(prep.Hash)
	var res struct {
		IntentStatus string `json:"intentStatus"`
	}
	start := time.Now()
	a.call(b, "POST", "/api/swap/intent/submit", t.tok, map[string]string{"preparedTransactionHash": prep.Hash, "signature": t.p.SignBase64(raw)}, &res)
	return res.IntentStatus, time.Since(start)
}

// BenchmarkSwapFills is one intent per op, prepared and submitted over HTTP by 16 concurrent
// takers against a pool of 50 open LP quotes (25 asks, 25 bids, deep enough never to run
// out); every intent fills at submit. It reports fills/s and the p99 of the submit call.
// Run:
//
//	TEST_DATABASE_URL=postgres://... go test -run '^$' -bench SwapFills -benchtime 10s ./rest/
func BenchmarkSwapFills(b *testing.B) {
	const takers = 16
	eachBackend(b, func(b *testing.B, be storetest.Backend) {
		a := newBenchAPI(b, be)
		m := newBenchPool(b, a, takers)
		var (
			next     atomic.Int64
			mu       sync.Mutex
			submits  []time.Duration
			unfilled atomic.Int64
		)
		b.SetParallelism(takers / 2)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			t := m.takers[next.Add(1)%int64(len(m.takers))]
			var mine []time.Duration
			for i := 0; pb.Next(); i++ {
				status, took := m.swap(b, a, t, i%2 == 0)
				mine = append(mine, took)
				if status != "filled" {
					unfilled.Add(1)
				}
			}
			mu.Lock()
			submits = append(submits, mine...)
			mu.Unlock()
		})
		b.StopTimer()
		if n := unfilled.Load(); n > 0 {
			b.Fatalf("%d intents did not fill at submit", n)
		}
		perSecond(b, "fills/s")
		slices.Sort(submits)
		if len(submits) > 0 {
			b.ReportMetric(float64(submits[len(submits)*99/100].Microseconds())/1000, "p99-submit-ms")
		}
	})
}

// BenchmarkPoolAggregates reads a pool's aggregates over HTTP from 32 clients on a fresh pool,
// then again after MARKETD_BENCH_FILLS fills (100,000 by default, 16 takers submitting at
// once), and times one LP's claim-fees of what those fills retained for it. Run:
//
//	TEST_DATABASE_URL=postgres://... go test -run '^$' -bench PoolAggregates -benchtime 5s ./rest/
func BenchmarkPoolAggregates(b *testing.B) {
	fills := 100_000
	if v := os.Getenv("MARKETD_BENCH_FILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("MARKETD_BENCH_FILLS=%q: %v", v, err)
		}
		fills = n
	}
	eachBackend(b, func(b *testing.B, be storetest.Backend) {
		a := newBenchAPI(b, be)
		m := newBenchPool(b, a, 16)
		path := "/api/swap/pool/" + m.pool.PoolID + "/aggregates"
		b.Run("fresh", func(b *testing.B) { benchGets(b, a, path, "req/s") })

		start := time.Now()
		var next, unfilled atomic.Int64
		var wg sync.WaitGroup
		for _, t := range m.takers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := next.Add(1); i <= int64(fills); i = next.Add(1) {
					if status, _ := m.swap(b, a, t, i%2 == 0); status != "filled" {
						unfilled.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		if n := unfilled.Load(); n > 0 {
			b.Fatalf("%d of %d intents did not fill", n, fills)
		}
		b.Logf("%d fills in %s", fills, time.Since(start).Round(time.Millisecond))

		b.Run(fmt.Sprintf("after-%d-fills", fills), func(b *testing.B) { benchGets(b, a, path, "req/s") })

		lp := m.lps[0]
		var agg map[string]any
		a.call(b, "GET", path, "", nil, &agg)
		start = time.Now()
		a.prepareExecute(b, "/api/swap/lp-quote/claim-fees", lp.tok, map[string]any{"poolId": m.pool.PoolID}, lp.p)
		b.Logf("claim-fees of lp0 after %d fills (the pool accrued %v): %s, prepare to receipt", fills, agg["accruedFees"], time.Since(start).Round(time.Microsecond))
	})
}
