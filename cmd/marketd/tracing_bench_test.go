package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"marketd/store/storetest"
)

// BenchmarkTracing prices tracing in one run: three `marketd serve` processes, each on its own
// copy of one seeded SQLite demo market (MARKETD_BENCH_NFTS NFTs, default 20,000), one with
// tracing off, one exporting every span to an OTLP/HTTP receiver on loopback (the test's own,
// decoding each export), one with the same endpoint sampling 1% of the traces requests start
// (OTEL_TRACES_SAMPLER=traceidratio, OTEL_TRACES_SAMPLER_ARG=0.01). Each serves cc-transfer
// pairs (prepare + execute, each client its own sender) and the REST NFT mix (BenchmarkNFTMix's
// pages, nftMix) from 32 keep-alive clients, one process after the other. It reports ops/s
// and p99; compare the rows of one run.
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
	pages, _ := nftMix(b, "sqlite://"+seeded, "")
	rc := newOTLPReceiver(b)
	modes := []struct {
		name string
		env  []string
	}{
		{"off", nil},
		{"sampled-1pct", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rc.URL, "OTEL_TRACES_SAMPLER=traceidratio", "OTEL_TRACES_SAMPLER_ARG=0.01"}},
		{"every-span", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rc.URL}},
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
		ps := make([]*party, 64)
		for j := range ps {
			ps[j] = c.onboard(in.url, fmt.Sprintf("t%d", j))
			c.tap(in.url, ps[j], "1000000")
		}
		runs[i] = served{in, ps}
	}
	for i, m := range modes {
		in, ps := runs[i].in, runs[i].ps
		b.Run("CCTransfer/tracing="+m.name, func(b *testing.B) {
			// A sender sends one pair at a time (a pair of its own is never stale): the free
			// ones wait in idle.
			idle := make(chan *party, len(ps))
			for _, p := range ps {
				idle <- p
			}
			var next atomic.Int64
			benchOps(b, func(client *http.Client, buf *bytes.Buffer, _ int) bool {
				me, to := <-idle, ps[int(next.Add(1))%len(ps)]
				defer func() { idle <- me }()
				if to == me {
					to = ps[(int(next.Add(1)))%len(ps)]
				}
				body := fmt.Sprintf(`{"receiver":%q,"amount":"0.01"}`, to.ID)
				req, _ := http.NewRequest("POST", in.url+"/api/wallet/cc-transfer/prepare", bytes.NewBufferString(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+me.tok)
				if !send(b, client, req, buf) {
					return false
				}
				var prep struct{ PreparedTransactionHash string }
				if err := json.Unmarshal(buf.Bytes(), &prep); err != nil {
					b.Error(err)
					return false
				}
				h := prep.PreparedTransactionHash
				body = fmt.Sprintf(`{"preparedTransactionHash":%q,"signature":%q}`, h, me.SignHash(b, h))
				req, _ = http.NewRequest("POST", in.url+"/api/wallet/cc-transfer/execute", bytes.NewBufferString(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+me.tok)
				return send(b, client, req, buf)
			})
		})
	}
	for i, m := range modes {
		in := runs[i].in
		b.Run("NFTMix/tracing="+m.name, func(b *testing.B) {
			benchOps(b, func(client *http.Client, buf *bytes.Buffer, i int) bool {
				req, _ := http.NewRequest("GET", in.url+pages[i%len(pages)], nil)
				return send(b, client, req, buf)
			})
		})
	}
	b.Logf("the receiver holds %d spans", len(rc.all()))
}
