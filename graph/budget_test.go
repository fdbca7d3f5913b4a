package graph

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/metrics"
	"marketd/store/ratelimit"
	"marketd/store/storetest"
)

// budgetGraph is the GraphQL endpoint over a demo market whose operations are charged to a
// read budget per client address, as marketd serve charges them (there through REST's
// ChargeRead, the budget REST's reads spend).
type budgetGraph struct {
	*testGraph
	limiter *ratelimit.Memory
	limit   int
	metrics *metrics.Metrics
	fast    *atomic.Int64
}

func newBudgetGraph(t *testing.T, b storetest.Backend, perMinute int, opts Options) *budgetGraph {
	t.Helper()
	s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
	if _, err := s.SeedDemo(context.Background(), store.DemoOptions{NFTs: 120, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	g := &budgetGraph{testGraph: &testGraph{t: t, store: s}, limiter: ratelimit.NewMemory(time.Minute, s.Now), limit: perMinute, fast: new(atomic.Int64)}
	g.metrics = metrics.New(s, g.limiter)
	s.AddQueryHook(g.testGraph)
	opts.Logger = slog.New(slog.DiscardHandler)
	opts.Metrics = g.metrics
	opts.fastAnswers = g.fast
	opts.ChargeRead = func(r *http.Request, n int) (ratelimit.Decision, error) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		d := g.limiter.AllowN("read:"+host, n, perMinute)
		if !d.Allowed {
			return d, store.Errorf(store.CodeRateLimited, "over the limit of %d reads a minute", perMinute)
		}
		return d, nil
	}
	g.http = httptest.NewServer(NewHandler(s, opts))
	t.Cleanup(g.http.Close)
	return g
}

// remaining is what is left of 127.0.0.1's budget, as the limiter's state tells.
func (g *budgetGraph) remaining() int {
	for _, st := range g.limiter.State() {
		if st.Key == "read:127.0.0.1" {
			return st.Remaining
		}
	}
	return g.limit // no window opened
}

// post sends q and returns the answer's status, headers and body.
func (g *budgetGraph) post(q string, vars map[string]any) (*http.Response, gqlResponse) {
	g.t.Helper()
	body, _ := json.Marshal(map[string]any{"query": q, "variables": vars})
	res, err := http.Post(g.http.URL+"/graphql", "application/json", bytes.NewReader(body))
	if err != nil {
		g.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out gqlResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		g.t.Fatalf("%d %s: %v", res.StatusCode, raw, err)
	}
	return res, out
}

// overBudget costs 5 + 100 × (3 + 10 × 3) = 3,305, 551 reads: over a budget of 300 a minute,
// however full, and under the cost and alias limits.
const overBudget = `{ collections(first: 100) { edges { node { nfts(first: 10) { edges { node { collection { name } } } } } } } }`

// aliasedLookups is n aliased nft(contractId:) lookups in one query.
func aliasedLookups(n int) string {
	var q strings.Builder
	q.WriteString("{")
	for i := range n {
		fmt.Fprintf(&q, ` a%d: nft(contractId: "00%d") { serial }`, i, i)
	}
	q.WriteString(" }")
	return q.String()
}

// wantRateLimited fails unless res is the 429 of a refused operation: Retry-After and the
// RateLimit headers, and one error with code rate_limited carrying the problem fields.
func wantRateLimited(t *testing.T, res *http.Response, out gqlResponse) {
	t.Helper()
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" || res.Header.Get("RateLimit-Limit") == "" ||
		res.Header.Get("RateLimit-Remaining") == "" || res.Header.Get("RateLimit-Reset") == "" {
		t.Fatalf("status %d, headers %v", res.StatusCode, res.Header)
	}
	if len(out.Errors) != 1 {
		t.Fatalf("errors %+v", out.Errors)
	}
	ext := out.Errors[0].Extensions
	if ext["code"] != string(store.CodeRateLimited) || ext["type"] != store.CodeRateLimited.ProblemType() || ext["status"] != float64(429) ||
		ext["title"] != "Too Many Requests" || ext["detail"] == "" || ext["retryAfter"] == nil {
		t.Fatalf("extensions %v", ext)
	}
}

func TestGraphQLBudget_AQueryOverTheBudgetIsRefusedBeforeAnyStatement(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		g := newBudgetGraph(t, b, 300, Options{})
		start, before := time.Now(), g.queries.Load()
		res, out := g.post(overBudget, nil)
		if n := g.queries.Load() - before; n != 0 {
			t.Fatalf("the refused query ran %d statements", n)
		}
		wantRateLimited(t, res, out)
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("refusing took %v", took)
		}
		// The request counts as one read, as any does; the rest of its cost is refused.
		if got := g.remaining(); got != 299 {
			t.Fatalf("the refusal spent %d reads", 300-got)
		}
		// 9,000 lookups are past the parser's token bound: invalid_request, before any statement.
		start, before = time.Now(), g.queries.Load()
		res, out = g.post(aliasedLookups(9000), nil)
		if n := g.queries.Load() - before; n != 0 || len(out.Errors) != 1 || out.Errors[0].Extensions["code"] != string(store.CodeInvalidRequest) {
			t.Fatalf("9,000 lookups: %d statements, %d %+v", n, res.StatusCode, out.Errors)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("refusing took %v", took)
		}
		// So does one that does not parse.
		if res, _ := g.post(aliasedLookups(9000), nil); res.Header.Get("RateLimit-Remaining") != "297" {
			t.Fatalf("9,000 lookups left %q reads", res.Header.Get("RateLimit-Remaining"))
		}
		// 50 lookups cost 150, 25 reads: charged as such, by POST and by GET.
		if res, out := g.post(aliasedLookups(50), nil); res.StatusCode != http.StatusOK || len(out.Errors) > 0 || res.Header.Get("RateLimit-Remaining") != "272" {
			t.Fatalf("50 lookups: %d %+v remaining %q", res.StatusCode, out.Errors, res.Header.Get("RateLimit-Remaining"))
		}
		res, err := http.Get(g.http.URL + "/graphql?query=" + url.QueryEscape(aliasedLookups(50)))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Header.Get("RateLimit-Remaining") != "247" {
			t.Fatalf("50 lookups by GET: %d remaining %q", res.StatusCode, res.Header.Get("RateLimit-Remaining"))
		}
		// Over the budget by GET: 429 before any statement.
		before = g.queries.Load()
		res, err = http.Get(g.http.URL + "/graphql?query=" + url.QueryEscape(overBudget))
		if err != nil {
			t.Fatal(err)
		}
		out = gqlResponse{}
		json.NewDecoder(res.Body).Decode(&out)
		res.Body.Close()
		if n := g.queries.Load() - before; n != 0 {
			t.Fatalf("the refused GET ran %d statements", n)
		}
		wantRateLimited(t, res, out)
	})
}

// A kept answer and the NFT page fast path's answer are charged what the executor's answer
// to the same query is charged.
func TestGraphQLBudget_KeptAndFastAnswersCostWhatTheExecutorsCost(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		g := newBudgetGraph(t, b, 10_000, Options{})
		exec := newBudgetGraph(t, b, 10_000, Options{NoFastPath: true, RunEveryQuery: true})
		id := g.collectionID("ledger-apes")
		vars := map[string]any{"id": id}
		charged := func(g *budgetGraph, q string, vars map[string]any) int {
			t.Helper()
			res, out := g.post(q, vars)
			if res.StatusCode != http.StatusOK || len(out.Errors) > 0 {
				t.Fatalf("%d %+v", res.StatusCode, out.Errors)
			}
			left, _ := strconv.Atoi(res.Header.Get("RateLimit-Remaining"))
			return 10_000 - left
		}
		const reused = "marketd_graphql_reused_answers_total"
		// 5 + 5 × (3 + 10 × 3) = 170: 29 reads, answered from the store, then kept.
		kept := `{ collections(first: 5) { edges { node { name nfts(first: 10) { edges { node { collection { name } } } } } } } }`
		want := charged(exec, kept, nil)
		if want != 29 {
			t.Fatalf("the executor's answer was charged %d reads, want 29", want)
		}
		// The first answers read the database and fill the page caches; then one is kept and
		// served again. Every one costs the same.
		spent, wasReused := 0, false
		for i := 0; i < 6 && !wasReused; i++ {
			r0 := scrape(t, g.metrics)[reused]
			got := charged(g, kept, nil) - spent
			spent += got
			wasReused = scrape(t, g.metrics)[reused] == r0+1
			if got != want {
				t.Fatalf("answer %d (reused %v) charged %d reads, the executor's %d", i, wasReused, got, want)
			}
		}
		if !wasReused {
			t.Fatal("the answer was never served again")
		}
		// The fast path answers a page of a collection's NFTs: 6, one read.
		page := `query($id: ID!) { collection(id: $id) { name nfts(first: 20, sort: PRICE_ASC) { edges { node { serial traits { type value } listing { price } } } } } }`
		before, fast := charged(g, "{ __typename }", nil), g.fast.Load()
		got := charged(g, page, vars) - before
		if g.fast.Load() != fast+1 {
			t.Fatal("the fast path did not answer the page")
		}
		execBefore := charged(exec, "{ __typename }", nil)
		if want := charged(exec, page, vars) - execBefore; got != want || got != 1 {
			t.Fatalf("the fast path's answer charged %d, the executor's %d", got, want)
		}
	})
}

func TestGraphQLBudget_ABodyOverTheCapIs413BeforeItIsRead(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		g := newBudgetGraph(t, b, 300, Options{})
		addr := strings.TrimPrefix(g.http.URL, "http://")
		// Content-Length says 50 MB; the few bytes sent are all there is. The answer comes at
		// once: the service does not wait for (or read) the rest.
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(conn, "POST /graphql HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"query\":", addr, 50<<20)
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer before the body: %v", err)
		}
		var out gqlResponse
		json.NewDecoder(res.Body).Decode(&out)
		res.Body.Close()
		wantTooLarge(t, res.StatusCode, out)

		// A chunked body (no Content-Length) is cut off at the cap: of 50 MB offered, the
		// service reads little more than 1 MiB.
		body := &countingReader{left: 50 << 20}
		req, _ := http.NewRequest("POST", g.http.URL+"/graphql", body)
		req.Header.Set("Content-Type", "application/json")
		res, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out = gqlResponse{}
		json.NewDecoder(res.Body).Decode(&out)
		res.Body.Close()
		wantTooLarge(t, res.StatusCode, out)
		if n := body.read.Load(); n > 8<<20 {
			t.Fatalf("%d bytes of the chunked body were sent", n)
		}
		if got := g.remaining(); got != 300 {
			t.Fatalf("a refused body spent the budget: %d left", got)
		}
	})
}

func wantTooLarge(t *testing.T, status int, out gqlResponse) {
	t.Helper()
	if status != http.StatusRequestEntityTooLarge || len(out.Errors) != 1 || out.Errors[0].Extensions["code"] != string(store.CodePayloadTooLarge) ||
		out.Errors[0].Extensions["status"] != float64(413) {
		t.Fatalf("%d %+v", status, out.Errors)
	}
}

// countingReader offers left bytes of a JSON string and counts what is read of them.
type countingReader struct {
	left int
	read atomic.Int64
	head bool
}

func (r *countingReader) Read(p []byte) (int, error) {
	if r.left <= 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.left)
	for i := range n {
		p[i] = 'a'
	}
	if !r.head {
		r.head = true
		n = copy(p, `{"query":"`)
	}
	r.left -= n
	r.read.Add(int64(n))
	return n, nil
}

// TestGraphQL_AnAnswerOverTheLimitIsRefused: an answer larger than MaxAnswerBytes is replaced
// by one error with code payload_too_large; a smaller one is sent.
func TestGraphQL_AnAnswerOverTheLimitIsRefused(t *testing.T) {
	g := newBudgetGraph(t, storetest.Backends()[0], 10_000, Options{MaxAnswerBytes: 10_000})
	_, out := g.post(introspectionQuery, nil)
	if len(out.Data) > 4 || len(out.Errors) != 1 || out.Errors[0].Extensions["code"] != string(store.CodePayloadTooLarge) {
		t.Fatalf("a full introspection over 10,000 bytes: data %d bytes, errors %+v", len(out.Data), out.Errors)
	}
	if _, out := g.post(`{ __schema { queryType { name } } }`, nil); len(out.Errors) > 0 {
		t.Fatalf("a small answer: %+v", out.Errors)
	}
}
