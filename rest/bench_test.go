package rest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// Benchmarks of the service as a client sees it: a real listener on loopback, keep-alive
// HTTP clients running in parallel, the full middleware stack with JSON access logs (written
// to io.Discard) and rate limiting on (at a limit never reached). Run:
//
//	TEST_DATABASE_URL=postgres://... go test -run '^$' -bench . -benchtime 5s ./rest/
//
// Each reports its throughput as a custom metric (signins/s, requests/s, pairs/s).

// benchAPI is the service under load, on real time.
type benchAPI struct {
	url    string
	client *http.Client
	store  *store.Store
}

func newBenchAPI(b *testing.B, be storetest.Backend) *benchAPI {
	b.Helper()
	sc := store.DefaultConfig()
	sc.Logger = slog.New(slog.DiscardHandler)
	return benchAPIOn(b, be.Open(b, sc))
}

// benchAPIOn serves s the way newBenchAPI does.
func benchAPIOn(b *testing.B, s *store.Store) *benchAPI {
	b.Helper()
	serveGC(b)
	srv, err := New(s, Config{
		PublicURL: s.Config().PublicURL, Dev: true, RateRead: 1 << 30, RatePrepare: 1 << 30, RateSignIn: 1 << 30, RateExecute: 1 << 30,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	b.Cleanup(hs.Close)
	return &benchAPI{url: hs.URL, client: benchClient(), store: s}
}

func benchClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}}
}

// call posts or gets JSON and decodes a 2xx answer into out.
func (a *benchAPI) call(b *testing.B, method, path, tok string, body, out any) {
	var rd io.Reader
	if body != nil {
		j, _ := json.Marshal(body)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, a.url+path, rd)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	res, err := a.client.Do(req)
	if err != nil {
		b.Error(err)
		return
	}
	defer res.Body.Close()
	if res.StatusCode/100 == 2 && out == nil {
		io.Copy(io.Discard, res.Body) // read whole, as a load generator does: not kept
		return
	}
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		b.Errorf("%s %s: %d %s", method, path, res.StatusCode, raw)
		return
	}
	if err := json.Unmarshal(raw, out); err != nil {
		b.Error(err)
	}
}

// onboard makes a party with storetest and onboards it through the API.
func (a *benchAPI) onboard(b *testing.B, hint string) *storetest.Party {
	p := storetest.NewParty(hint)
	a.prepareExecute(b, "/api/parties/onboard", "", map[string]string{"publicKey": p.PublicBase64(), "hint": hint}, p)
	return p
}

func (a *benchAPI) prepareExecute(b *testing.B, base, tok string, body any, p *storetest.Party) {
	var prep struct {
		Hash string `json:"preparedTransactionHash"`
	}
	a.call(b, "POST", base+"/prepare", tok, body, &prep)
	raw, _ := base64.StdEncoding.DecodeString(prep.Hash)
	a.call(b, "POST", base+"/execute", tok, map[string]string{"preparedTransactionHash": prep.Hash, "signature": p.SignBase64(raw)}, nil)
}

func (a *benchAPI) signIn(b *testing.B, p *storetest.Party) string {
	var nr struct{ Message, Nonce string }
	a.call(b, "POST", "/api/auth/nonce", "", map[string]string{"partyId": p.ID}, &nr)
	var tr struct{ Token string }
	a.call(b, "POST", "/api/auth/verify", "", map[string]string{"partyId": p.ID, "nonce": nr.Nonce, "signature": p.SignBase64([]byte(nr.Message))}, &tr)
	return tr.Token
}

// eachBackend runs a benchmark on SQLite and, with TEST_DATABASE_URL, PostgreSQL.
func eachBackend(b *testing.B, fn func(b *testing.B, be storetest.Backend)) {
	for _, be := range storetest.Backends() {
		b.Run(be.Name, func(b *testing.B) { fn(b, be) })
	}
}

// perSecond reports b.N operations over the benchmark's time as a rate.
func perSecond(b *testing.B, unit string) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), unit)
}

const benchClients = 32 // concurrent clients: RunParallel goroutines across both cores

// BenchmarkSignIn is a full sign-in per op: nonce, the wallet's signature, verify.
func BenchmarkSignIn(b *testing.B) {
	eachBackend(b, func(b *testing.B, be storetest.Backend) {
		a := newBenchAPI(b, be)
		parties := make([]*storetest.Party, benchClients)
		for i := range parties {
			parties[i] = a.onboard(b, fmt.Sprintf("p%d", i))
		}
		var next atomic.Int64
		b.SetParallelism(benchClients / 2)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			p := parties[next.Add(1)%int64(len(parties))]
			for pb.Next() {
				a.signIn(b, p)
			}
		})
		perSecond(b, "signins/s")
	})
}

// BenchmarkMe is an authenticated GET /api/auth/me per op.
func BenchmarkMe(b *testing.B) {
	eachBackend(b, func(b *testing.B, be storetest.Backend) {
		a := newBenchAPI(b, be)
		toks := make([]string, benchClients)
		for i := range toks {
			toks[i] = a.signIn(b, a.onboard(b, fmt.Sprintf("p%d", i)))
		}
		var next atomic.Int64
		b.SetParallelism(benchClients / 2)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			tok := toks[next.Add(1)%int64(len(toks))]
			for pb.Next() {
				a.call(b, "GET", "/api/auth/me", tok, nil, nil)
			}
		})
		perSecond(b, "requests/s")
	})
}

// BenchmarkBareHandler is the yardstick for BenchmarkMe: a plain net/http handler answering
// a small JSON body on the same machine, with the same clients.
func BenchmarkBareHandler(b *testing.B) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"partyId":"p::1220","expiresAt":1}` + "\n"))
	}))
	defer hs.Close()
	a := &benchAPI{url: hs.URL, client: benchClient()}
	b.SetParallelism(benchClients / 2)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			a.call(b, "GET", "/api/auth/me", "tok", nil, nil)
		}
	})
	perSecond(b, "requests/s")
}

// BenchmarkCCTransfer is a cc-transfer prepare+execute pair per op, between independent
// pairs of parties (each client sends from its own wallet).
func BenchmarkCCTransfer(b *testing.B) {
	eachBackend(b, func(b *testing.B, be storetest.Backend) {
		a := newBenchAPI(b, be)
		type pair struct {
			from    *storetest.Party
			tok, to string
		}
		pairs := make([]pair, benchClients)
		for i := range pairs {
			from, to := a.onboard(b, fmt.Sprintf("s%d", i)), a.onboard(b, fmt.Sprintf("r%d", i))
			tok := a.signIn(b, from)
			a.prepareExecute(b, "/api/wallet/tap", tok, map[string]string{"instrument": "CC", "amount": "1000000"}, from)
			pairs[i] = pair{from: from, tok: tok, to: to.ID}
		}
		var next atomic.Int64
		b.SetParallelism(benchClients / 2)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			p := pairs[next.Add(1)%int64(len(pairs))]
			for pb.Next() {
				a.prepareExecute(b, "/api/wallet/cc-transfer", p.tok, map[string]string{"receiver": p.to, "amount": "0.01"}, p.from)
			}
		})
		perSecond(b, "pairs/s")
	})
}

// serveGC runs the benchmark under the garbage collector's target of `marketd serve`
// (cmd/marketd/gc.go: 400, unless GOGC is set), which the bare handler of the same run shares.
func serveGC(b *testing.B) {
	if os.Getenv("GOGC") != "" {
		return
	}
	old := debug.SetGCPercent(400)
	b.Cleanup(func() { debug.SetGCPercent(old) })
}
