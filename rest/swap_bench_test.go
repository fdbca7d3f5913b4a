package rest

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// BenchmarkSwapFills is one intent per op, prepared and submitted over HTTP by 16 concurrent
// takers against a pool of 50 open LP quotes (25 asks, 25 bids, deep enough never to run
// out); every intent fills at submit. It reports fills/s and the p99 of the submit call.
// Run:
//
//	TEST_DATABASE_URL=postgres://... go test -run '^$' -bench SwapFills -benchtime 10s ./rest/
func BenchmarkSwapFills(b *testing.B) {
	const takers, lps, quotes = 16, 5, 50
	eachBackend(b, func(b *testing.B, be storetest.Backend) {
		a := newBenchAPI(b, be)
		ctx := context.Background()
		if _, err := a.store.SetOraclePrice(ctx, store.CC, store.USDCx, "2.5"); err != nil {
			b.Fatal(err)
		}
		pool, err := a.store.CreatePool(ctx, store.CC, store.USDCx, 30)
		if err != nil {
			b.Fatal(err)
		}
		fund := func(p *benchParty, tok string) {
			a.prepareExecute(b, "/api/wallet/tap", tok, map[string]string{"instrument": "CC", "amount": "1000000"}, p)
			a.prepareExecute(b, "/api/wallet/tap", tok, map[string]string{"instrument": "USDCx", "amount": "1000000"}, p)
		}
		expires := time.Now().Add(24 * time.Hour).Unix()
		for i := range lps {
			lp := a.onboard(b, fmt.Sprintf("lp%d", i))
			tok := a.signIn(b, lp)
			fund(lp, tok)
			for j := range quotes / lps {
				side, price := "ask", fmt.Sprintf("2.%d", 51+i*10+j)
				if j%2 == 1 {
					side, price = "bid", fmt.Sprintf("2.%d", 49-i*4-j)
				}
				a.prepareExecute(b, "/api/swap/lp-quote", tok, map[string]any{"poolId": pool.PoolID, "side": side, "price": price, "size": "20000", "expiresAt": expires}, lp)
			}
		}
		type taker struct {
			p   *benchParty
			tok string
		}
		ts := make([]taker, takers)
		for i := range ts {
			p := a.onboard(b, fmt.Sprintf("t%d", i))
			tok := a.signIn(b, p)
			fund(p, tok)
			ts[i] = taker{p, tok}
		}
		var (
			next     atomic.Int64
			mu       sync.Mutex
			submits  []time.Duration
			unfilled atomic.Int64
		)
		b.SetParallelism(takers / 2)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			t := ts[next.Add(1)%int64(len(ts))]
			var mine []time.Duration
			for i := 0; pb.Next(); i++ {
				sell, amount := "CC", "1"
				if i%2 == 1 {
					sell, amount = "USDCx", "2.5"
				}
				var prep struct {
					Hash string `json:"preparedTransactionHash"`
				}
				a.call(b, "POST", "/api/swap/prepare", t.tok, map[string]any{"poolId": pool.PoolID, "sell": sell, "amount": amount, "minReceive": "0", "deadline": expires}, &prep)
				raw, _ := base64.StdEncoding.DecodeString(prep.Hash)
				var res struct {
					IntentStatus string `json:"intentStatus"`
				}
				start := time.Now()
				a.call(b, "POST", "/api/swap/intent/submit", t.tok, map[string]string{"preparedTransactionHash": prep.Hash, "signature": base64.StdEncoding.EncodeToString(ed25519.Sign(t.p.priv, raw))}, &res)
				mine = append(mine, time.Since(start))
				if res.IntentStatus != "filled" {
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
