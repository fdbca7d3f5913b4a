package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"marketd/store/storetest"
)

// BenchmarkTracing prices tracing in one run: three `marketd serve` processes, each on its own
// copy of one seeded SQLite demo market (MARKETD_BENCH_NFTS NFTs, default 20,000), one with
// tracing off, one exporting every span to an OTLP/HTTP receiver on loopback, one with the
// same endpoint sampling 1% of the traces requests start (OTEL_TRACES_SAMPLER=traceidratio,
// OTEL_TRACES_SAMPLER_ARG=0.01). The receiver reads each export and answers it without
// decoding it (a collector's work is not the service's), counting the bytes. Each process
// serves cc-transfer pairs (prepare + execute, each client its own sender) and the REST NFT
// mix (BenchmarkNFTMix's pages, nftMix) to 32 keep-alive clients, in turns: every round runs
// a turn of each mode, in the order off, 1%, every, every, 1%, off, so a drift of the host
// falls on all three alike; b.N is the number of rounds. It reports each mode's rate over its
// turns, p99, and the ratios to off (`1pct/off`, `every/off`).
func BenchmarkTracing(b *testing.B) {
	bin, err := binary()
	if err != nil {
		b.Fatal(err)
	}
	nfts := 20_000
	if os.Getenv("MARKETD_BENCH_NFTS") != "" {
		nfts = storetest.BenchNFTs(b)
	}
	dir := b.TempDir()
	seeded := filepath.Join(dir, "seeded.db")
	seed := exec.Command(bin, "seed", "--demo", "--nfts", strconv.Itoa(nfts))
	seed.Env = append(os.Environ(), "MARKETD_DB=sqlite://"+seeded)
	if out, err := seed.CombinedOutput(); err != nil {
		b.Fatalf("seed: %v: %s", err, out)
	}
	pages, _ := nftMix(b, "sqlite://"+seeded, nil, "", 20_000)
	var exported atomic.Int64
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		exported.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK) // an empty ExportTraceServiceResponse is zero bytes
	}))
	defer rc.Close()
	modes := []struct {
		name string
		env  []string
	}{
		{"off", nil},
		{"1pct", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rc.URL, "OTEL_TRACES_SAMPLER=traceidratio", "OTEL_TRACES_SAMPLER_ARG=0.01"}},
		{"every", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rc.URL}},
	}
	type served struct {
		in *instance
		ps []*party
	}
	runs := make([]served, len(modes))
	c := newClient(b)
	for i, m := range modes {
		raw, err := os.ReadFile(seeded)
		if err != nil {
			b.Fatal(err)
		}
		file := filepath.Join(dir, m.name+".db")
		if err := os.WriteFile(file, raw, 0o600); err != nil {
			b.Fatal(err)
		}
		in := startInstance(b, append([]string{"MARKETD_DB=sqlite://" + file, "MARKETD_RATE_READ=0", "MARKETD_LOG_LEVEL=error"}, m.env...)...)
		ps := make([]*party, 32)
		for j := range ps {
			ps[j] = c.onboard(in.url, fmt.Sprintf("t%d", j))
			c.tap(in.url, ps[j], "1000000")
		}
		runs[i] = served{in, ps}
	}
	workloads := []struct {
		name string
		ops  int // a turn's operations
		op   func(b *testing.B, s served, client *http.Client, buf *bytes.Buffer, client32, i int) bool
	}{
		{"CCTransfer", 600, func(b *testing.B, s served, client *http.Client, buf *bytes.Buffer, me, i int) bool {
			// Each of the 32 clients sends from a party of its own (a pair of one sender is
			// never stale) to the next one.
			from, to := s.ps[me], s.ps[(me+1+i)%len(s.ps)]
			if to == from {
				to = s.ps[(me+1)%len(s.ps)]
			}
			body := fmt.Sprintf(`{"receiver":%q,"amount":"0.01"}`, to.ID)
			req, _ := http.NewRequest("POST", s.in.url+"/api/wallet/cc-transfer/prepare", bytes.NewBufferString(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+from.tok)
			if !send(b, client, req, buf) {
				return false
			}
			var prep struct{ PreparedTransactionHash string }
			if err := json.Unmarshal(buf.Bytes(), &prep); err != nil {
				b.Error(err)
				return false
			}
			h := prep.PreparedTransactionHash
			body = fmt.Sprintf(`{"preparedTransactionHash":%q,"signature":%q}`, h, from.SignHash(b, h))
			req, _ = http.NewRequest("POST", s.in.url+"/api/wallet/cc-transfer/execute", bytes.NewBufferString(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+from.tok)
			return send(b, client, req, buf)
		}},
		{"NFTMix", 6000, func(b *testing.B, s served, client *http.Client, buf *bytes.Buffer, _, i int) bool {
			req, _ := http.NewRequest("GET", s.in.url+pages[i%len(pages)], nil)
			return send(b, client, req, buf)
		}},
	}
	order := []int{0, 1, 2, 2, 1, 0}
	for _, w := range workloads {
		b.Run(w.name, func(b *testing.B) {
			took := make([]time.Duration, len(modes))
			lat := make([][]time.Duration, len(modes))
			done := make([]int, len(modes))
			for range b.N {
				for _, m := range order {
					start := done[m]
					d, l := turn(w.ops, func(client *http.Client, buf *bytes.Buffer, me, i int) bool {
						return w.op(b, runs[m], client, buf, me, start+i)
					})
					took[m] += d
					lat[m] = append(lat[m], l...)
					done[m] += w.ops
				}
			}
			rate := make([]float64, len(modes))
			for m, mode := range modes {
				rate[m] = float64(done[m]) / took[m].Seconds()
				b.ReportMetric(rate[m], mode.name+"-ops/s")
				if len(lat[m]) > 0 {
					slices.Sort(lat[m])
					b.ReportMetric(float64(lat[m][len(lat[m])*99/100].Microseconds())/1000, mode.name+"-p99-ms")
				}
			}
			b.ReportMetric(rate[1]/rate[0], "1pct/off")
			b.ReportMetric(rate[2]/rate[0], "every/off")
		})
	}
	b.Logf("the receiver took %d bytes of spans", exported.Load())
}

// turn runs ops operations of op from 32 keep-alive clients (me is the client's number, i the
// operation's) and returns how long they took and each one's latency.
func turn(ops int, op func(client *http.Client, buf *bytes.Buffer, me, i int) bool) (time.Duration, []time.Duration) {
	const clients = 32
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	var next atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	start := time.Now()
	for me := range clients {
		wg.Go(func() {
			var buf bytes.Buffer
			var mine []time.Duration
			for {
				i := int(next.Add(1) - 1)
				if i >= ops {
					break
				}
				t := time.Now()
				if !op(client, &buf, me, i) {
					break
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return time.Since(start), lat
}
