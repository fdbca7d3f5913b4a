package rest

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// While the database cannot be reached, a request that needs it is 503 unavailable with
// Retry-After and the request id, at once; what needs no database (JWKS, the health probe)
// keeps answering, /readyz says the store is down, and the service recovers by itself.
func TestOutage_DatabaseDownIs503WithRetryAfterAndRecovers(t *testing.T) {
	for _, b := range storetest.Backends() {
		if b.Dialect != store.Postgres {
			continue // SQLite is in process: it cannot go away
		}
		t.Run(b.Name, func(t *testing.T) {
			sc := storetest.Config(storetest.NewClock(storetest.Epoch))
			s, proxy := b.OpenProxied(t, sc)
			a := serveAPI(t, s, nil, Config{PublicURL: sc.PublicURL, Logger: slog.New(slog.DiscardHandler)})
			a.do("GET", "/.well-known/jwks.json", nil).ok(t) // its keys are loaded once
			a.do("GET", "/api/swap/pools", nil).ok(t)

			proxy.SetDown(true)
			for _, path := range []string{"/api/swap/pools", "/readyz", "/api/nft/collection/nope/nfts"} {
				start := time.Now()
				r := a.do("GET", path, nil)
				wantProblemShape(t, r, http.StatusServiceUnavailable, store.CodeUnavailable)
				if r.header.Get("Retry-After") != "1" {
					t.Errorf("GET %s: Retry-After %q, want 1", path, r.header.Get("Retry-After"))
				}
				if took := time.Since(start); took > 2*time.Second {
					t.Errorf("GET %s took %v to answer 503", path, took)
				}
			}
			a.do("GET", "/.well-known/jwks.json", nil).ok(t)
			a.do("GET", "/healthz", nil).ok(t)
			if m := a.do("GET", "/metrics", nil).ok(t); !strings.Contains(string(m.body), `marketd_database_faults_total{code="unavailable"} 3`) {
				t.Errorf("the metrics do not count the three 503s:\n%s", m.body)
			}

			proxy.SetDown(false)
			deadline := time.Now().Add(5 * time.Second)
			for a.do("GET", "/api/swap/pools", nil).status != http.StatusOK {
				if time.Now().After(deadline) {
					t.Fatal("5 s after the database came back, requests still fail")
				}
				time.Sleep(50 * time.Millisecond)
			}
			a.do("GET", "/readyz", nil).ok(t)
		})
	}
}
