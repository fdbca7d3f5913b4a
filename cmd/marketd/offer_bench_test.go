package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkOfferCrowd is a crowd of owners selling into one collection offer, measured against
// ordinary traffic on one `marketd serve` process (rate limits off), on SQLite and on
// PostgreSQL (TEST_DATABASE_URL): a maker offers 1 CC each for MARKETD_BENCH_UNITS NFTs of one
// collection (default 5,000) in offers of the most an offer may ask (1,000), and 64 owners
// accept into the first one with their NFTs one at a time, moving to the next when it is
// exhausted, until all are or MARKETD_BENCH_SECONDS pass (default 20); then 64 other wallets
// send CC transfers for as long. Every owner meets the others on one offer at a time. Each op
// is a prepare + execute pair over HTTP. It reports accepts/s (up to the last accept) against
// transfers/s, the p50 and p99 of each, how many accepts met offer_exhausted (the only refusal
// expected, up to 64 an offer), and how many failed otherwise.
//
//	go test ./cmd/marketd -run '^$' -bench BenchmarkOfferCrowd -benchtime 1x
func BenchmarkOfferCrowd(b *testing.B) {
	const maxOfferQuantity = 1000 // the most one collection offer may ask
	const owners = 64
	seconds, units := benchSetting("MARKETD_BENCH_SECONDS", 20), benchSetting("MARKETD_BENCH_UNITS", 5000)
	perOwner := (units+owners-1)/owners + 10 // enough NFTs that the offer runs out first
	bin, err := binary()
	if err != nil {
		b.Fatal(err)
	}
	for _, st := range benchStores(b) {
		b.Run(st.name, func(b *testing.B) {
			in := startInstance(b, "MARKETD_DB="+st.dsn, "MARKETD_RATE_READ=0", "MARKETD_RATE_PREPARE=0", "MARKETD_RATE_EXECUTE=0", "MARKETD_LOG_LEVEL=error")
			c := newClient(b)
			c.http.Transport.(*http.Transport).MaxIdleConnsPerHost = 4 * owners
			onboard := func(hint string, n int, funds string) []*party {
				ps := make([]*party, n)
				for i := range ps {
					ps[i] = c.onboard(in.url, fmt.Sprintf("%s%d", hint, i))
					c.tap(in.url, ps[i], funds)
				}
				return ps
			}
			sellers, senders, receivers := onboard("owner", owners, "10"), onboard("sender", owners, "100000"), onboard("receiver", owners, "1")
			maker := onboard("maker", 1, "100000")[0]
			run := func(args ...string) {
				cmd := exec.Command(bin, args...)
				cmd.Env = append(os.Environ(), "MARKETD_DB="+st.dsn)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("marketd %v: %v: %s", args, err, out)
				}
			}
			now := time.Now().Unix()
			run("collection", "create", "--slug", "crowd", "--name", "Crowd", "--creator", receivers[0].ID, "--currency", "CC", "--supply", fmt.Sprint(owners*perOwner))
			run("collection", "add-phase", "--collection", "crowd", "--name", "free", "--price", "0",
				"--start", fmt.Sprint(now-60), "--end", fmt.Sprint(now+86400), "--per-party-limit", fmt.Sprint(perOwner))
			held := make([][]string, owners)
			var wg sync.WaitGroup
			for i := range owners {
				wg.Go(func() {
					for left := perOwner; left > 0; {
						n := min(left, 50)
						r := c.ok("POST", in.url+"/api/nft/mint/batch/atomic/prepare", sellers[i].tok, map[string]any{"collectionId": "crowd", "quantity": n})
						h := r.str("preparedTransactionHash")
						e := c.ok("POST", in.url+"/api/nft/mint/batch/atomic/execute", sellers[i].tok, map[string]string{"preparedTransactionHash": h, "signature": sellers[i].SignHash(c.t, h)})
						for _, id := range e.body["contractIds"].([]any) {
							held[i] = append(held[i], id.(string))
						}
						left -= n
					}
				})
			}
			wg.Wait()
			var offers []string
			for left := units; left > 0; left -= maxOfferQuantity {
				h := c.prepare(in.url, "/api/nft/offer", maker, map[string]any{"collectionId": "crowd", "price": "1", "quantity": min(left, maxOfferQuantity), "expiresAt": now + 3600})
				offers = append(offers, c.ok("POST", in.url+"/api/nft/offer/execute", maker.tok, map[string]string{"preparedTransactionHash": h, "signature": maker.SignHash(c.t, h)}).str("cid"))
			}
			var current atomic.Int64 // the offer the crowd accepts into

			accepts := newTally()
			var exhausted, lastAccept atomic.Int64
			var stop atomic.Bool
			start := time.Now()
			for i := range owners {
				wg.Go(func() {
					for k := 0; k < len(held[i]) && !stop.Load(); k++ {
						o := current.Load()
						if o >= int64(len(offers)) {
							return
						}
						t0 := time.Now()
						r, err := c.try("POST", in.url+"/api/nft/offer/accept/prepare", sellers[i].tok, map[string]any{"cid": offers[o], "contractIds": []string{held[i][k]}})
						if err == nil && r.status == 200 {
							h := r.str("preparedTransactionHash")
							t1 := time.Now()
							r, err = c.try("POST", in.url+"/api/nft/offer/accept/execute", sellers[i].tok, map[string]string{"preparedTransactionHash": h, "signature": sellers[i].SignHash(c.t, h)})
							if err == nil && r.status == 200 {
								accepts.mu.Lock()
								accepts.took, accepts.executes = append(accepts.took, time.Since(t0)), append(accepts.executes, time.Since(t1))
								accepts.mu.Unlock()
								lastAccept.Store(int64(time.Since(start)))
								continue
							}
						}
						accepts.mu.Lock()
						switch {
						case err != nil:
							accepts.failed[0]++
						case r.str("code") == "offer_exhausted": // on to the next offer, with the same NFT
							exhausted.Add(1)
							current.CompareAndSwap(o, o+1)
							k--
						default:
							accepts.failed[r.status]++
							b.Logf("accept refused: %s", r.raw)
						}
						accepts.mu.Unlock()
					}
				})
			}
			go func() { time.Sleep(time.Duration(seconds) * time.Second); stop.Store(true) }()
			wg.Wait()
			stop.Store(true)
			a := accepts.report(b, "accepts", time.Duration(lastAccept.Load()))
			b.ReportMetric(float64(exhausted.Load()), "exhausted-accepts")

			transfers := newTally()
			var stopX atomic.Bool
			startX := time.Now()
			for i := range owners {
				wg.Go(func() {
					for !stopX.Load() {
						transfers.pair(c, in.url, senders[i], "/api/wallet/cc-transfer/prepare", "/api/wallet/cc-transfer/execute", map[string]string{"receiver": receivers[i].ID, "amount": "0.01"})
					}
				})
			}
			time.Sleep(time.Duration(min(float64(seconds), time.Duration(lastAccept.Load()).Seconds()+1) * float64(time.Second)))
			stopX.Store(true)
			wg.Wait()
			x := transfers.report(b, "transfers", time.Since(startX))
			if x > 0 {
				b.ReportMetric(a/x, "accepts/transfers")
			}
		})
	}
}
