package graph

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// BenchmarkNFTPages is the GraphQL half of cmd/marketd's BenchmarkNFTMix without the network:
// the same distinct pages of the demo market's NFTs (storetest.NFTPageMix), each once, asked
// as each of storetest.NFTPageShapes (the mix's own query and the ways dashboards write it), straight to the handler (httptest), from one client and from 32, on each store. Every page
// is new, so every request runs the executor, through the kept-answer cache's miss path as a
// served request does. cpu-ns/op is what one executed query costs the process's cores, its
// goroutines and garbage collection included: on a shared machine it moves far less than
// ns/op, which counts the time others take the cores. MARKETD_BENCH_NFTS sets the
// market's size (default 100,000); keep -benchtime at or under 20000x, past which pages repeat
// and are answered from the kept answers.
func BenchmarkNFTPages(b *testing.B) {
	nfts := storetest.BenchNFTs(b)
	ctx := context.Background()
	for _, be := range storetest.Backends() {
		// Seeded once per store: the sub-benchmark runs more than once as b.N grows.
		s := be.Open(b, storetest.Config(nil))
		start := time.Now()
		if _, err := s.SeedDemo(ctx, store.DemoOptions{NFTs: nfts, Seed: 1}); err != nil {
			b.Fatal(err)
		}
		if err := s.AwaitNFTIndex(ctx); err != nil {
			b.Fatal(err)
		}
		b.Logf("%s: seeded %d NFTs in %v", be.Name, nfts, time.Since(start).Round(time.Millisecond))
		mix, err := storetest.NFTPageMix(ctx, s, 20_000, 1)
		if err != nil {
			b.Fatal(err)
		}
		for _, shape := range storetest.NFTPageShapes {
			bodies := make([][]byte, len(mix))
			for i, r := range mix {
				bodies[i] = r.GraphQLBodyAs(shape)
			}
			benchmarkNFTPageBodies(b, s, be.Name+"/"+shape.Name, bodies)
		}
	}
}

// benchmarkNFTPageBodies asks each body once from one client, then from 32 at once as
// BenchmarkNFTMix sends them: the executor's goroutines (one per item of every list) then
// share the cores with 31 other queries' own. Each is asked of the handler as served (fast)
// and of one that sends every query to gqlgen's executor (executor), in the same run, so
// that the two meet the same load on a shared machine.
func benchmarkNFTPageBodies(b *testing.B, s *store.Store, name string, bodies [][]byte) {
	for _, run := range []struct {
		path       string
		noFastPath bool
	}{{"fast", false}, {"executor", true}} {
		for _, clients := range []int{1, 32} {
			benchmarkNFTPageRun(b, s, fmt.Sprintf("%s/%s/clients=%d", name, run.path, clients), Options{NoFastPath: run.noFastPath}, clients, bodies)
		}
	}
}

// benchmarkNFTPageRun asks each body once of a new handler with opts from that many clients.
func benchmarkNFTPageRun(b *testing.B, s *store.Store, name string, opts Options, clients int, bodies [][]byte) {
	b.Run(name, func(b *testing.B) {
		// A handler per run: its kept answers start empty, so no page is served twice.
		opts.Logger = slog.New(slog.DiscardHandler)
		h := NewHandler(s, opts)
		var next, bytesOut atomic.Int64
		b.ReportAllocs()
		b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		cpu := processCPU()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := int(next.Add(1) - 1)
				req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(bodies[i%len(bodies)]))
				req.Header.Set("Content-Type", "application/json")
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != http.StatusOK || bytes.Contains(w.Body.Bytes(), []byte(`"errors"`)) {
					b.Errorf("%d %s", w.Code, w.Body.Bytes())
					return
				}
				bytesOut.Add(int64(w.Body.Len()))
			}
		})
		b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		b.ReportMetric(float64(bytesOut.Load())/float64(b.N), "B/answer")
	})
}

// processCPU is the CPU time the process has used, user and system, in nanoseconds.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
