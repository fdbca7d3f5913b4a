package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"marketd/graph"
	"marketd/rest"
	"marketd/store"
	"marketd/store/storetest"
)

// BenchmarkFrontDoors compares, in one run on the 100,000-NFT demo market, 32 concurrent
// clients reading the top collections through GraphQL (its answer served again while current,
// and run by the executor each time), the equivalent REST call, and a bare net/http handler
// answering a fixed body: requests per second and p99 latency. It runs on
// PostgreSQL (TEST_DATABASE_URL), where seeding takes about half a minute.
func BenchmarkFrontDoors(b *testing.B) {
	var be *storetest.Backend
	for _, x := range storetest.Backends() {
		if x.Dialect == store.Postgres {
			be = &x
		}
	}
	if be == nil {
		b.Skip("set TEST_DATABASE_URL: this benchmark runs on PostgreSQL")
	}
	if os.Getenv("GOGC") == "" { // the collector's target of marketd serve (gc.go)
		defer debug.SetGCPercent(debug.SetGCPercent(serveGOGC))
	}
	cfg := storetest.Config(nil)
	cfg.MaxConns = 32
	s := be.Open(b, cfg)
	if _, err := s.SeedDemo(context.Background(), store.DemoOptions{NFTs: 100_000, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	api, err := rest.New(s, rest.Config{PublicURL: "http://127.0.0.1", Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(frontDoors(api, graph.NewHandler(s, graph.Options{Logger: quiet}), nil))
	defer hs.Close()
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"data":{"collections":{"edges":[]}}}` + "\n"))
	}))
	defer bare.Close()

	query := []byte(`{"query":"{ collections(first: 20) { edges { node { id slug name floorPrice volume } } } }"}`)
	b.Run("graphql-collections", func(b *testing.B) { benchRequests(b, "POST", hs.URL+"/graphql", query) })
	// The same query run by gqlgen every time (from the cached page), not answered again.
	executed := httptest.NewServer(frontDoors(api, graph.NewHandler(s, graph.Options{Logger: quiet, RunEveryQuery: true}), nil))
	defer executed.Close()
	b.Run("graphql-collections-executed", func(b *testing.B) { benchRequests(b, "POST", executed.URL+"/graphql", query) })
	// A dashboard's view of one collection: its stats and its cheapest 20 NFTs.
	one := []byte(`{"query":"{ collection(slug: \"ledger-apes\") { floorPrice volume listedCount nfts(first: 20, sort: PRICE_ASC) { edges { node { serial name owner listing { price expiresAt } } } } } }"}`)
	b.Run("graphql-collection-nfts", func(b *testing.B) { benchRequests(b, "POST", hs.URL+"/graphql", one) })
	b.Run("graphql-collection-nfts-executed", func(b *testing.B) { benchRequests(b, "POST", executed.URL+"/graphql", one) })
	b.Run("rest-collection+nfts", func(b *testing.B) { // two REST calls for the same data
		benchRequests(b, "GET", hs.URL+"/api/nft/slug/ledger-apes", nil, hs.URL+"/api/nft/collection/ledger-apes/nfts?sort=price_asc&limit=20")
	})
	b.Run("rest-collections", func(b *testing.B) { benchRequests(b, "GET", hs.URL+"/api/nft/collections?limit=20", nil) })
	b.Run("bare", func(b *testing.B) { benchRequests(b, "POST", bare.URL, query) })

	pools, err := s.Pools(context.Background())
	if err != nil || len(pools) == 0 {
		b.Fatalf("the demo has no pool: %v", err)
	}
	id := pools[0].PoolID
	poolQuery := []byte(`{"query":"{ pool(id: \"` + id + `\") { aggregates { tvl lpCount accruedFees { instrument amount } depthWeightedSpreadBps } outcomes(first: 20) { edges { node { intentCid taker sold { instrument amount } received { instrument amount } fee at } } } } }"}`)
	b.Run("graphql-pool", func(b *testing.B) { benchRequests(b, "POST", hs.URL+"/graphql", poolQuery) })
	// REST needs two calls for the same data: one op is both.
	b.Run("rest-pool-aggregates+outcomes", func(b *testing.B) {
		benchRequests(b, "GET", hs.URL+"/api/swap/pool/"+id+"/aggregates", nil, hs.URL+"/api/swap/pool/"+id+"/outcomes?limit=20")
	})
}

// benchRequests sends the request (then a GET of each of more, as one op) from 32 clients
// and reports ops/s and the p99.
func benchRequests(b *testing.B, method, url string, body []byte, more ...string) {
	benchOps(b, func(client *http.Client, buf *bytes.Buffer, _ int) bool {
		req, _ := http.NewRequest(method, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if !send(b, client, req, buf) {
			return false
		}
		for _, u := range more {
			req, _ := http.NewRequest("GET", u, nil)
			if !send(b, client, req, buf) {
				return false
			}
		}
		return true
	})
}

// benchOps runs op from 32 clients, each op numbered in the order it starts, and reports
// ops/s and the p99 of an op's time.
func benchOps(b *testing.B, op func(client *http.Client, buf *bytes.Buffer, i int) bool) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64}}
	var mu sync.Mutex
	var lat []time.Duration
	var next atomic.Int64
	b.SetParallelism(16) // 16 x GOMAXPROCS(2) = 32 clients
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		var buf bytes.Buffer // each client reads its answers into one buffer, as a load generator does
		for pb.Next() {
			start := time.Now()
			if !op(client, &buf, int(next.Add(1)-1)) {
				return
			}
			mine = append(mine, time.Since(start))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	if len(lat) > 0 {
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
}

func send(b *testing.B, client *http.Client, req *http.Request, buf *bytes.Buffer) bool {
	res, err := client.Do(req)
	if err != nil {
		b.Error(err)
		return false
	}
	buf.Reset()
	buf.ReadFrom(res.Body)
	res.Body.Close()
	body := buf.Bytes()
	if res.StatusCode != http.StatusOK || bytes.Contains(body, []byte(`"errors":`)) {
		b.Errorf("%s %s: %d %.300s", req.Method, req.URL, res.StatusCode, body)
		return false
	}
	return true
}
