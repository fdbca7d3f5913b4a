package graph

import (
	"bufio"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/metrics"
	"marketd/store/ratelimit"
	"marketd/store/storetest"
)

// scrape reads the registry's samples as "name{labels}" -> value.
func scrape(t testing.TB, m *metrics.Metrics) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	out := map[string]float64{}
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

func TestMetrics_GraphQLOperationsCountedByTypeAndOutcome(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
		if _, err := s.SeedDemo(context.Background(), store.DemoOptions{NFTs: 40, Seed: 4}); err != nil {
			t.Fatal(err)
		}
		m := metrics.New(s, ratelimit.NewMemory(time.Minute, s.Now))
		g := &testGraph{t: t, store: s}
		g.http = httptest.NewServer(NewHandler(s, Options{Logger: slog.New(slog.DiscardHandler), Metrics: m}))
		t.Cleanup(g.http.Close)

		const timed = `marketd_graphql_operation_duration_seconds_count{type="query"}`
		for _, c := range []struct {
			name, query string
			sample      string // the counter that must move by one
			timed       bool   // whether the query latency histogram counts it
		}{
			{"a query", `{ collections(first: 2) { edges { node { slug } } } }`,
				`marketd_graphql_operations_total{outcome="ok",type="query"}`, true},
			{"a query a resolver refuses", `{ collections(last: 101) { edges { cursor } } }`,
				`marketd_graphql_operations_total{outcome="invalid_request",type="query"}`, true},
			{"a query over the depth limit", `{ collections { edges { node { nfts { edges { node { collection { nfts { edges { node { collection { nfts { edges { node { serial } } } } } } } } } } } } } } }`,
				`marketd_graphql_operations_total{outcome="invalid_request",type="query"}`, true},
			{"a query that does not parse", `{ collections { edges `,
				`marketd_graphql_operations_total{outcome="invalid_request",type="invalid"}`, false},
		} {
			before := scrape(t, m)
			g.query(c.query, nil)
			after := scrape(t, m)
			if d := after[c.sample] - before[c.sample]; d != 1 {
				t.Errorf("%s: %s moved by %v, want 1", c.name, c.sample, d)
			}
			if d := after[timed] - before[timed]; c.timed && d != 1 || !c.timed && d != 0 {
				t.Errorf("%s: %s moved by %v", c.name, timed, d)
			}
		}

		// A subscription counts once, however many events it delivers.
		pools, err := s.Pools(context.Background())
		if err != nil || len(pools) == 0 {
			t.Fatalf("the demo has no pool: %v", err)
		}
		const subscribed = `marketd_graphql_operations_total{outcome="ok",type="subscription"}`
		before := scrape(t, m)[subscribed]
		c := dialGraphQL(t, g.http.URL)
		c.subscribe("1", outcomesQuery, map[string]any{"p": pools[0].PoolID})
		time.Sleep(300 * time.Millisecond)
		taker := newMinter(t, s, "taker")
		for range 2 {
			taker.swap(pools[0].PoolID, "1")
		}
		for range 2 {
			if c.next(10*time.Second) == nil {
				t.Fatal("no outcome delivered")
			}
		}
		if d := scrape(t, m)[subscribed] - before; d != 1 {
			t.Fatalf("a subscription with two events counted %v times", d)
		}
	})
}
