package main

import (
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkMintDrop is a mint drop measured against ordinary traffic on one `marketd serve`
// process (rate limits off), on SQLite and on PostgreSQL (TEST_DATABASE_URL): 64 wallets mint
// from one open phase of one collection (1 CC a mint, one NFT each), and 64 other wallets send
// CC transfers to wallets of their own, each crowd for MARKETD_BENCH_SECONDS (default 20). Each
// op is a prepare + execute pair over HTTP. Two sub-benchmarks on the same server:
//
//   - apart: the drop alone, then the transfers alone (the two loads compared as the drop's
//     acceptance states them: mints/s against transfers/s, p99 against p99);
//   - together: both crowds at once, sharing the server's two cores and its pool, where the
//     drop's batches wait for CPU behind the transfers.
//
// Each reports mints/s and transfers/s, their ratio, the p50 and p99 of each pair and of the
// execute alone, and how many failed. Run it once:
//
//	go test ./cmd/marketd -run '^$' -bench BenchmarkMintDrop -benchtime 1x
func BenchmarkMintDrop(b *testing.B) {
	const wallets = 64
	seconds := benchSetting("MARKETD_BENCH_SECONDS", 20)
	bin, err := binary()
	if err != nil {
		b.Fatal(err)
	}
	stores := benchStores(b)
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			in := startInstance(b, "MARKETD_DB="+st.dsn, "MARKETD_RATE_READ=0", "MARKETD_LOG_LEVEL=error")
			c := newClient(b)
			c.http.Transport.(*http.Transport).MaxIdleConnsPerHost = 4 * wallets
			onboard := func(hint string, n int) []*party {
				ps := make([]*party, n)
				for i := range ps {
					ps[i] = c.onboard(in.url, fmt.Sprintf("%s%d", hint, i))
					c.tap(in.url, ps[i], "100000")
				}
				return ps
			}
			minters, senders, receivers := onboard("minter", wallets), onboard("sender", wallets), onboard("receiver", wallets)
			run := func(args ...string) {
				cmd := exec.Command(bin, args...)
				cmd.Env = append(os.Environ(), "MARKETD_DB="+st.dsn)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("marketd %v: %v: %s", args, err, out)
				}
			}
			now := time.Now().Unix()
			run("collection", "create", "--slug", "drop", "--name", "Drop", "--creator", receivers[0].ID, "--currency", "CC", "--supply", "100000")
			run("collection", "add-phase", "--collection", "drop", "--name", "public", "--price", "1",
				"--start", fmt.Sprint(now-60), "--end", fmt.Sprint(now+86400), "--per-party-limit", "10000")

			mint := func(i int, t *tally) {
				t.pair(c, in.url, minters[i], "/api/nft/mint/atomic/prepare", "/api/nft/mint/atomic/execute", map[string]string{"collectionId": "drop"})
			}
			transfer := func(i int, t *tally) {
				t.pair(c, in.url, senders[i], "/api/wallet/cc-transfer/prepare", "/api/wallet/cc-transfer/execute", map[string]string{"receiver": receivers[i].ID, "amount": "0.01"})
			}
			// crowd runs each op given on its own 64 wallets at once for the bench's seconds.
			crowd := func(ops ...func(int, *tally)) ([]*tally, time.Duration) {
				tallies := make([]*tally, len(ops))
				var stop atomic.Bool
				var wg sync.WaitGroup
				started := time.Now()
				for k, op := range ops {
					tallies[k] = newTally()
					for i := range wallets {
						wg.Go(func() {
							for !stop.Load() {
								op(i, tallies[k])
							}
						})
					}
				}
				time.Sleep(time.Duration(seconds) * time.Second)
				stop.Store(true)
				wg.Wait()
				return tallies, time.Since(started)
			}
			// apart: the drop alone, then the transfers alone, as two crowds on the same server;
			// together: both crowds at once, sharing the server's CPU and pool.
			b.Run("apart", func(b *testing.B) {
				ms, me := crowd(mint)
				xs, xe := crowd(transfer)
				m, x := ms[0].report(b, "mints", me), xs[0].report(b, "transfers", xe)
				if x > 0 {
					b.ReportMetric(m/x, "mints/transfers")
				}
			})
			b.Run("together", func(b *testing.B) {
				ts, elapsed := crowd(mint, transfer)
				m, x := ts[0].report(b, "mints", elapsed), ts[1].report(b, "transfers", elapsed)
				if x > 0 {
					b.ReportMetric(m/x, "mints/transfers")
				}
			})
		})
	}
}

// tally is what the wallets of one kind of op got: the time each pair took and how many failed.
type tally struct {
	mu       sync.Mutex
	took     []time.Duration // prepare + execute
	executes []time.Duration // execute alone
	failed   map[int]int     // by status; 0 = a transport error
	lost     int             // answered 409: another wallet got there first
}

func newTally() *tally { return &tally{failed: map[int]int{}} }

// pair runs one prepare and its execute as p and tallies the outcome.
func (t *tally) pair(c *client, base string, p *party, prepare, execute string, body any) {
	start := time.Now()
	var executed time.Time
	r, err := c.try("POST", base+prepare, p.tok, body)
	if err == nil && r.status == 200 {
		h := r.str("preparedTransactionHash")
		executed = time.Now()
		r, err = c.try("POST", base+execute, p.tok, map[string]string{"preparedTransactionHash": h, "signature": p.SignHash(c.t, h)})
	}
	took := time.Since(start)
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case err != nil:
		t.failed[0]++
	case r.status == http.StatusConflict:
		t.lost++
	case r.status != 200:
		t.failed[r.status]++
	default:
		t.took, t.executes = append(t.took, took), append(t.executes, time.Since(executed))
	}
}

// report reports the tally's rate over elapsed, its failures and its latencies as unit.
func (t *tally) report(b *testing.B, unit string, elapsed time.Duration) float64 {
	slices.Sort(t.took)
	rate := float64(len(t.took)) / elapsed.Seconds()
	b.ReportMetric(rate, unit+"/s")
	failed := 0
	for _, n := range t.failed {
		failed += n
	}
	b.ReportMetric(float64(failed), "failed-"+unit)
	if t.lost > 0 {
		b.ReportMetric(float64(t.lost), "lost-"+unit)
	}
	slices.Sort(t.executes)
	if len(t.took) > 0 {
		b.ReportMetric(float64(t.took[len(t.took)/2].Microseconds())/1000, unit+"-p50-ms")
		b.ReportMetric(float64(t.took[len(t.took)*99/100].Microseconds())/1000, unit+"-p99-ms")
		b.ReportMetric(float64(t.executes[len(t.executes)*99/100].Microseconds())/1000, unit+"-execute-p99-ms")
		b.ReportMetric(float64(t.executes[len(t.executes)/2].Microseconds())/1000, unit+"-execute-p50-ms")
	}
	if failed > 0 {
		b.Logf("%s failed by status (0: transport): %v", unit, t.failed)
	}
	return rate
}

// BenchmarkBuyRace is 64 buyers racing for one collection's listings: a seller mints and
// lists MARKETD_BENCH_LISTINGS NFTs (default 3,000) at 1 CC, then 64 wallets buy, all at once
// for MARKETD_BENCH_SECONDS (default 20), against one `marketd serve` (rate limits off) on
// SQLite and PostgreSQL: three times in four a listing drawn at random from all listed, once
// a sweep of the cheapest left, which every sweeper wants at once. A buy that lost the race
// (the listing sold meanwhile) is a 409, counted as lost, not failed. It reports buys/s and
// sweeps/s, lost and failed ones, and the p50 and p99 of a prepare + execute pair.
//
//	go test ./cmd/marketd -run '^$' -bench BenchmarkBuyRace -benchtime 1x
func BenchmarkBuyRace(b *testing.B) {
	const buyers = 64
	seconds, listings := benchSetting("MARKETD_BENCH_SECONDS", 20), benchSetting("MARKETD_BENCH_LISTINGS", 3000)
	bin, err := binary()
	if err != nil {
		b.Fatal(err)
	}
	for _, st := range benchStores(b) {
		b.Run(st.name, func(b *testing.B) {
			in := startInstance(b, "MARKETD_DB="+st.dsn, "MARKETD_RATE_READ=0", "MARKETD_LOG_LEVEL=error")
			c := newClient(b)
			c.http.Transport.(*http.Transport).MaxIdleConnsPerHost = 2 * buyers
			seller := c.onboard(in.url, "seller")
			c.tap(in.url, seller, "100000")
			ps := make([]*party, buyers)
			for i := range ps {
				ps[i] = c.onboard(in.url, fmt.Sprintf("buyer%d", i))
				c.tap(in.url, ps[i], "100000")
			}
			now := time.Now().Unix()
			for _, args := range [][]string{
				{"collection", "create", "--slug", "race", "--name", "Race", "--creator", seller.ID, "--currency", "CC", "--supply", strconv.Itoa(listings)},
				{"collection", "add-phase", "--collection", "race", "--name", "public", "--price", "0.01", "--start", fmt.Sprint(now - 60), "--end", fmt.Sprint(now + 86400), "--per-party-limit", strconv.Itoa(listings)},
			} {
				cmd := exec.Command(bin, args...)
				cmd.Env = append(os.Environ(), "MARKETD_DB="+st.dsn)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("marketd %v: %v: %s", args, err, out)
				}
			}
			signed := func(path string, body any) reply {
				h := c.prepare(in.url, path, seller, body)
				return c.ok("POST", in.url+path+"/execute", seller.tok, map[string]string{"preparedTransactionHash": h, "signature": seller.SignHash(c.t, h)})
			}
			var listed []string
			for left := listings; left > 0; left -= 50 {
				r := signed("/api/nft/mint/batch/atomic", map[string]any{"collectionId": "race", "quantity": min(left, 50)})
				var items []map[string]string
				for _, cid := range r.body["contractIds"].([]any) {
					items = append(items, map[string]string{"contractId": cid.(string), "price": "1"})
				}
				r = signed("/api/nft/list/batch/atomic", map[string]any{"items": items})
				for _, cid := range r.body["cids"].([]any) {
					listed = append(listed, cid.(string))
				}
			}
			buys, sweeps := newTally(), newTally()
			var stop atomic.Bool
			var wg sync.WaitGroup
			b.ResetTimer()
			started := time.Now()
			for i, p := range ps {
				wg.Go(func() {
					rng := mrand.New(mrand.NewPCG(uint64(i), 1))
					for n := 0; !stop.Load(); n++ {
						if n%4 == 3 { // one in four sweeps the cheapest, which every sweeper wants
							sweeps.pair(c, in.url, p, "/api/nft/sweep/buy/prepare", "/api/nft/sweep/buy/execute", map[string]any{"collectionId": "race", "count": 1, "maxTotal": "10"})
							continue
						}
						buys.pair(c, in.url, p, "/api/nft/buy/atomic/prepare", "/api/nft/buy/atomic/execute", map[string]string{"cid": listed[rng.IntN(len(listed))]})
					}
				})
			}
			time.Sleep(time.Duration(seconds) * time.Second)
			stop.Store(true)
			wg.Wait()
			elapsed := time.Since(started)
			b.StopTimer()
			buys.report(b, "buys", elapsed)
			sweeps.report(b, "sweeps", elapsed)
		})
	}
}

// benchSetting is the positive whole number in the variable name, or def.
func benchSetting(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
