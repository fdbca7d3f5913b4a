package main

import (
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP trace receiver on loopback: it keeps every span it is sent.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
}

func newOTLPReceiver(t testing.TB) *otlpReceiver {
	rc := new(otlpReceiver)
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		raw, err := io.ReadAll(body)
		var req collectortrace.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(raw, &req)
		}
		if err != nil || r.URL.Path != "/v1/traces" {
			http.Error(w, fmt.Sprint(r.URL.Path, err), http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				rc.spans = append(rc.spans, ss.Spans...)
			}
		}
		rc.mu.Unlock()
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(rc.Close)
	return rc
}

// all is every span received so far.
func (rc *otlpReceiver) all() []*tracepb.Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]*tracepb.Span(nil), rc.spans...)
}

// trace is the spans received of trace id (hex).
func (rc *otlpReceiver) trace(id string) []*tracepb.Span {
	var out []*tracepb.Span
	for _, s := range rc.all() {
		if hex.EncodeToString(s.TraceId) == id {
			out = append(out, s)
		}
	}
	return out
}

// tracedRequest is a request sent with a traceparent of its own.
type tracedRequest struct {
	traceID, parentID string
}

func newTracedRequest() tracedRequest {
	return tracedRequest{traceID: randomHex(16), parentID: randomHex(8)}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	b[0] |= 1 // never all zeros, which is no id
	return hex.EncodeToString(b)
}

// header is the request's traceparent, sampled or not, and a tracestate.
func (tr tracedRequest) header(sampled bool) http.Header {
	flags := "01"
	if !sampled {
		flags = "00"
	}
	return http.Header{"Traceparent": {"00-" + tr.traceID + "-" + tr.parentID + "-" + flags}, "Tracestate": {"vendor=opaque"}}
}

// sendTraced sends method url with h and tok (a bearer token), and the JSON body.
func sendTraced(t *testing.T, c *client, method, url, tok string, h http.Header, body any) reply {
	t.Helper()
	r, err := c.tryWith(method, url, tok, h, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return r
}

// attr is the string form of span's attribute key, "" when it has none.
func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			if v := kv.Value.GetStringValue(); v != "" {
				return v
			}
			return kv.Value.String()
		}
	}
	return ""
}

// checkTree checks a trace: its request span continues tr (its trace id, the sent parent), is
// named name, and each of want names a span of the trace that descends from it. It returns
// the trace's spans by name.
func checkTree(t *testing.T, rc *otlpReceiver, tr tracedRequest, name string, want ...string) map[string][]*tracepb.Span {
	t.Helper()
	var spans []*tracepb.Span
	var root *tracepb.Span
	byName := map[string][]*tracepb.Span{}
	deadline := time.Now().Add(15 * time.Second)
	for {
		spans = rc.trace(tr.traceID)
		root, byName = nil, map[string][]*tracepb.Span{}
		for _, s := range spans {
			byName[s.Name] = append(byName[s.Name], s)
			if hex.EncodeToString(s.ParentSpanId) == tr.parentID && s.Name == name {
				root = s
			}
		}
		missing := root == nil
		for _, w := range want {
			if len(byName[w]) == 0 {
				missing = true
			}
		}
		if !missing {
			break
		}
		if time.Now().After(deadline) {
			names := []string{}
			for _, s := range spans {
				names = append(names, s.Name+" "+hex.EncodeToString(s.SpanId)+" <- "+hex.EncodeToString(s.ParentSpanId))
			}
			t.Fatalf("trace %s: want a request span %q under %s with %q below it; received %q", tr.traceID, name, tr.parentID, want, names)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if root.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("%s: the request span is a %v span, want a server span", name, root.Kind)
	}
	parent := map[string]string{}
	for _, s := range spans {
		parent[hex.EncodeToString(s.SpanId)] = hex.EncodeToString(s.ParentSpanId)
	}
	rootID := hex.EncodeToString(root.SpanId)
	for _, w := range want {
		for _, s := range byName[w] {
			id := hex.EncodeToString(s.SpanId)
			for id != "" && id != rootID {
				id = parent[id]
			}
			if id != rootID {
				t.Errorf("%s: span %q is not below the request span", name, w)
			}
		}
	}
	return byName
}

// TestTracing_EveryDoorContinuesTheTraceparentWithItsStoreSQLRedisAndBatchSpans starts marketd
// serve exporting to a receiver of the test's own, sends a request with a known traceparent
// through each door (a REST tap and a mint, prepared and executed; a GraphQL query over HTTP
// and one over a websocket; a console page) and checks the tree received: the request span
// continues the trace under the parent sent, with spans below it for the store's prepare and
// execute, SQL statements, the execute batch (its size and wait), the log's append and Redis.
// The request id is the trace id; an unsampled parent yields no span; no span carries the
// token, a signature or the Authorization header.
func TestTracing_EveryDoorContinuesTheTraceparentWithItsStoreSQLRedisAndBatchSpans(t *testing.T) {
	rc := newOTLPReceiver(t)
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "m.db")
	env := []string{"MARKETD_DB=" + dsn, "OTEL_EXPORTER_OTLP_ENDPOINT=" + rc.URL, "OTEL_BSP_SCHEDULE_DELAY=100", "OTEL_SERVICE_NAME=marketd-test"}
	redisURL := os.Getenv("TEST_REDIS_URL")
	if redisURL != "" {
		env = append(env, "MARKETD_REDIS="+redisURL)
	}
	in := startInstance(t, env...)
	c := newClient(t)
	minter := c.onboard(in.url, "minter")
	createDrop(t, dsn, minter.ID)
	var secrets []string // what no span may carry
	secrets = append(secrets, minter.tok)

	// REST: a tap, prepared and executed under one trace.
	tap := newTracedRequest()
	prep := sendTraced(t, c, "POST", in.url+"/api/wallet/tap/prepare", minter.tok, tap.header(true), map[string]string{"instrument": "CC", "amount": "100"})
	h := prep.str("preparedTransactionHash")
	sig := minter.SignHash(t, h)
	secrets = append(secrets, sig, h)
	exec := sendTraced(t, c, "POST", in.url+"/api/wallet/tap/execute", minter.tok, tap.header(true), map[string]string{"preparedTransactionHash": h, "signature": sig})
	if exec.status != 200 {
		t.Fatalf("tap execute: %d %s", exec.status, exec.raw)
	}
	if got := exec.header.Get("X-Request-Id"); got != tap.traceID {
		t.Errorf("the request id is %q, want the trace id %s", got, tap.traceID)
	}
	// A mint, whose execute waits in its collection's batch.
	mint := newTracedRequest()
	prep = sendTraced(t, c, "POST", in.url+"/api/nft/mint/atomic/prepare", minter.tok, mint.header(true), map[string]string{"collectionId": "drop"})
	h = prep.str("preparedTransactionHash")
	sig = minter.SignHash(t, h)
	secrets = append(secrets, sig, h)
	if r := sendTraced(t, c, "POST", in.url+"/api/nft/mint/atomic/execute", minter.tok, mint.header(true), map[string]string{"preparedTransactionHash": h, "signature": sig}); r.status != 200 {
		t.Fatalf("mint execute: %d %s", r.status, r.raw)
	}
	// A refusal: its problem body names the trace.
	refused := newTracedRequest()
	if r := sendTraced(t, c, "GET", in.url+"/api/auth/me", "", refused.header(true), nil); r.str("requestId") != refused.traceID {
		t.Errorf("the problem body's requestId is %q, want the trace id %s: %s", r.str("requestId"), refused.traceID, r.raw)
	}
	// A read counted in the read budget (in Redis when there is one), from an address of its
	// own: its budget's first check is a round trip (later ones of an address are decided on
	// the instance's share of the window, without one).
	read := newTracedRequest()
	sendTraced(t, newClient(t), "GET", in.url+"/api/wallet/balance/"+minter.ID, minter.tok, read.header(true), nil)
	// GraphQL over HTTP.
	gql := newTracedRequest()
	q := map[string]any{"query": `query Holdings($p: ID!) { wallet(partyId: $p) { balances { instrument amount } } }`, "variables": map[string]any{"p": minter.ID}}
	if r := sendTraced(t, c, "POST", in.url+"/graphql", minter.tok, gql.header(true), q); r.status != 200 {
		t.Fatalf("graphql: %d %s", r.status, r.raw)
	}
	// GraphQL over a websocket: the operation under the upgrade's span.
	ws := newTracedRequest()
	wsGraphQL(t, in.url, minter.tok, ws.header(true), minter.ID)
	// The console.
	console := newTracedRequest()
	if r := sendTraced(t, c, "GET", in.url+"/admin/login", "", console.header(true), nil); r.status != 200 {
		t.Fatalf("console: %d", r.status)
	}
	// An unsampled parent: nothing.
	unsampled := newTracedRequest()
	sendTraced(t, c, "POST", in.url+"/api/wallet/tap/prepare", minter.tok, unsampled.header(false), map[string]string{"instrument": "CC", "amount": "1"})

	checkTree(t, rc, tap, "POST /api/wallet/tap/prepare", "store.prepare")
	spans := checkTree(t, rc, tap, "POST /api/wallet/tap/execute", "store.execute")
	sqlSeen := false
	for name, ss := range spans {
		if attr(ss[0], "db.system.name") == "sqlite" {
			sqlSeen = true
			if attr(ss[0], "db.operation.name") == "" {
				t.Errorf("SQL span %q names no operation", name)
			}
		}
	}
	if !sqlSeen {
		t.Errorf("the tap's execute has no SQL span")
	}
	spans = checkTree(t, rc, mint, "POST /api/nft/mint/atomic/execute", "store.execute", "store.execute.batch", "store.execute.batch.apply", "translog.append")
	batch := spans["store.execute.batch"][0]
	if attr(batch, "marketd.batch.size") == "" || attr(batch, "marketd.batch.wait_ms") == "" {
		t.Errorf("the batch span has no size or wait: %v", batch.Attributes)
	}
	checkTree(t, rc, refused, "GET /api/auth/me")
	if redisURL != "" {
		spans = checkTree(t, rc, read, "GET /api/wallet/balance/{partyId}")
		redis := false
		for _, ss := range spans {
			redis = redis || attr(ss[0], "db.system.name") == "redis" || attr(ss[0], "db.system") == "redis"
		}
		if !redis {
			t.Errorf("the read's budget check made no Redis span")
		}
	}
	checkTree(t, rc, gql, "POST /graphql", "query Holdings")
	checkTree(t, rc, ws, "GET /graphql", "query Holdings")
	checkTree(t, rc, console, "GET /admin/login")
	time.Sleep(500 * time.Millisecond) // a span of the unsampled request would be in by now
	if got := rc.trace(unsampled.traceID); len(got) > 0 {
		t.Errorf("an unsampled parent yielded %d spans, first %q", len(got), got[0].Name)
	}

	for _, s := range rc.all() {
		for _, kv := range s.Attributes {
			v := fmt.Sprint(kv.Value)
			if strings.EqualFold(kv.Key, "http.request.header.authorization") || strings.Contains(v, "Bearer") {
				t.Errorf("span %q carries the Authorization header: %s", s.Name, kv.Key)
			}
			for _, secret := range secrets {
				if secret != "" && strings.Contains(v, secret) {
					t.Errorf("span %q attribute %s carries a token, signature or prepared hash", s.Name, kv.Key)
				}
			}
		}
	}
}

// wsGraphQL runs a named query over a GraphQL websocket opened with h and tok, and closes it.
func wsGraphQL(t *testing.T, base, tok string, h http.Header, partyID string) {
	t.Helper()
	h = h.Clone()
	h.Set("Authorization", "Bearer "+tok)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, send := graphQLSocket(ctx, t, base, h)
	send(map[string]any{"type": "connection_init"})
	send(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{
		"query": `query Holdings($p: ID!) { wallet(partyId: $p) { balances { instrument amount } } }`, "variables": map[string]any{"p": partyID}}})
	for {
		_, raw, err := conn.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal(raw, &m)
		if m["id"] == "1" && m["type"] == "complete" {
			break
		}
	}
	conn.Close(websocket.StatusNormalClosure, "")
}

// TestTracing_NoEndpointExportsNothing starts marketd serve with a receiver running but no
// OTEL_EXPORTER_OTLP_ENDPOINT: requests with a sampled traceparent export no span, and the
// request id is not taken from the trace.
func TestTracing_NoEndpointExportsNothing(t *testing.T) {
	rc := newOTLPReceiver(t)
	in := startInstance(t, "MARKETD_DB=sqlite://"+filepath.Join(t.TempDir(), "m.db"), "OTEL_BSP_SCHEDULE_DELAY=100", "OTEL_SERVICE_NAME=marketd-test")
	c := newClient(t)
	tr := newTracedRequest()
	r := sendTraced(t, c, "GET", in.url+"/api/auth/me", "", tr.header(true), nil)
	if r.str("requestId") == tr.traceID {
		t.Errorf("the request id is the trace id with tracing off")
	}
	sendTraced(t, c, "GET", in.url+"/admin/login", "", tr.header(true), nil)
	time.Sleep(500 * time.Millisecond)
	if got := rc.all(); len(got) > 0 {
		t.Fatalf("%d spans exported with no endpoint set", len(got))
	}
}
