package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Three clients flood far past their read budget (2,000 requests a second each against 25),
// each from a loopback address of its own with 8 connections, while a well-behaved client reads 20 times a second within its budget.
// The flood is aimed in turn at a real marketd process and at a bare net/http handler that
// refuses at no cost, the calm client reading marketd both times, so the flood's own CPU (its
// clients share the machine) is in both measurements and only what marketd spends refusing
// differs.

const (
	floodClients = 3 // from 127.0.0.2, 127.0.0.3, 127.0.0.4
	floodConns   = 8 // concurrent keep-alive connections each
	// floodEvery paces each connection (250 a second, 6,000 for the flood), so the flood is the
	// same whichever server answers it: unpaced, a bare handler answers so fast that the
	// flood's clients take the CPU the calm client's server needs.
	floodEvery   = 4 * time.Millisecond
	calmEvery    = 50 * time.Millisecond
	overloadRead = 1500 // the read budget a minute: the calm client's 1,200 fit in it
)

// floodRound is what one round measured.
type floodRound struct {
	calm    []time.Duration // the calm client's latencies
	errors  int             // its answers that were not 200, and transport errors
	refused int64           // the flood's requests answered 429
	sent    int64           // all the flood's requests
	took    time.Duration   // how long the flood ran
}

// refusalRate is the flood's refusals a second.
func (r floodRound) refusalRate() float64 { return float64(r.refused) / r.took.Seconds() }

func (r floodRound) p(q float64) time.Duration {
	if len(r.calm) == 0 {
		return 0
	}
	s := slices.Clone(r.calm)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*q)]
}

// loopbackClient is an HTTP client whose connections come from ip.
func loopbackClient(ip string, conns int) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}, Timeout: 10 * time.Second}
}

// flood runs the flood against floodURL and the calm client against calmURL for d, after the
// flood has run alone for warm (long enough to spend its budgets).
func flood(floodURL, calmURL string, warm, d time.Duration) floodRound {
	var out floodRound
	var refused, sent atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	began := time.Now()
	for i := range floodClients {
		c := loopbackClient(fmt.Sprintf("127.0.0.%d", 2+i), floodConns)
		for range floodConns {
			wg.Go(func() {
				tick := time.NewTicker(floodEvery)
				defer tick.Stop()
				for ; !stop.Load(); <-tick.C {
					res, err := c.Get(floodURL)
					if err != nil {
						continue
					}
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
					sent.Add(1)
					if res.StatusCode == http.StatusTooManyRequests {
						refused.Add(1)
					}
				}
			})
		}
	}
	time.Sleep(warm)
	calm := loopbackClient("127.0.0.5", 1)
	for tick := time.NewTicker(calmEvery); ; <-tick.C {
		if time.Duration(len(out.calm)+out.errors)*calmEvery >= d {
			tick.Stop()
			break
		}
		start := time.Now()
		res, err := calm.Get(calmURL)
		if err != nil {
			out.errors++
			continue
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			out.errors++
			continue
		}
		out.calm = append(out.calm, time.Since(start))
	}
	stop.Store(true)
	wg.Wait()
	out.refused, out.sent, out.took = refused.Load(), sent.Load(), time.Since(began)
	return out
}

// bareRefusal is a net/http handler that refuses every request with a fixed 429: the least
// a server can spend on one.
func bareRefusal() *httptest.Server {
	body := []byte(`{"type":"urn:marketd:problem:rate_limited","status":429,"code":"rate_limited"}` + "\n")
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write(body)
	}))
}

// overloadRounds alternates the flood between the bare handler and marketd, rounds times,
// after a flood that spends the flooders' budgets, and pools each side's rounds.
func overloadRounds(t testing.TB, rounds int, d time.Duration) (bare, market floodRound) {
	in := startInstance(t, "MARKETD_DB=sqlite://"+filepath.Join(t.TempDir(), "m.db"), fmt.Sprintf("MARKETD_RATE_READ=%d", overloadRead))
	b := bareRefusal()
	defer b.Close()
	page := in.url + "/api/nft/collections?limit=20"
	flood(page, page, 2*time.Second, 0)
	add := func(to *floodRound, r floodRound) {
		to.calm = append(to.calm, r.calm...)
		to.errors += r.errors
		to.refused += r.refused
		to.sent += r.sent
		to.took += r.took
	}
	for i := range rounds {
		rb, rm := flood(b.URL, page, 200*time.Millisecond, d), flood(page, page, 200*time.Millisecond, d)
		t.Logf("round %d: calm p99 %v with the flood on the bare handler, %v on marketd", i, rb.p(0.99), rm.p(0.99))
		add(&bare, rb)
		add(&market, rm)
	}
	return bare, market
}

// The calm client's p99 under a flood of refusals aimed at marketd stays within 1.5 times its
// p99 under the same flood aimed at the bare handler (rounds alternated and pooled, as the
// machine is shared), and it sees no error.
func TestOverload_AFloodOfRefusalsLeavesAClientWithinItsLimitItsLatency(t *testing.T) {
	if testing.Short() {
		t.Skip("floods the machine for about half a minute")
	}
	bare, market := overloadRounds(t, 6, 2*time.Second)
	ratio := float64(market.p(0.99)) / float64(bare.p(0.99))
	t.Logf("calm client, %d reads each side: p50/p99 %v/%v with the flood on the bare handler, %v/%v on marketd (%.2fx); marketd refused %d of %d (%.0f/s)",
		len(market.calm), bare.p(0.5), bare.p(0.99), market.p(0.5), market.p(0.99), ratio, market.refused, market.sent, market.refusalRate())
	if market.errors+bare.errors > 0 {
		t.Errorf("the calm client got %d errors", market.errors+bare.errors)
	}
	if market.refused != market.sent {
		t.Errorf("marketd refused %d of the flood's %d requests, want all once its budgets are spent", market.refused, market.sent)
	}
	if ratio > 1.5 {
		t.Errorf("the calm client's p99 under the flood on marketd was %.2fx that with the bare handler, want at most 1.5x", ratio)
	}
}

// BenchmarkOverload reports the calm client's p50 and p99 under the flood on the bare handler
// and on marketd, and how many refusals a second marketd answered meanwhile.
func BenchmarkOverload(b *testing.B) {
	for range b.N {
		bare, market := overloadRounds(b, 6, 2*time.Second)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(ms(bare.p(0.5)), "bare-p50-ms")
		b.ReportMetric(ms(bare.p(0.99)), "bare-p99-ms")
		b.ReportMetric(ms(market.p(0.5)), "marketd-p50-ms")
		b.ReportMetric(ms(market.p(0.99)), "marketd-p99-ms")
		b.ReportMetric(float64(market.p(0.99))/float64(bare.p(0.99)), "p99-ratio")
		b.ReportMetric(market.refusalRate(), "refusals/s")
	}
}
