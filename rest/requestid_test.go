package rest

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"marketd/store"
	"marketd/store/storetest"
)

// A well-formed X-Request-Id is kept, anything else replaced by a made one; either way the id
// is in the response header, the problem body and every log line the request wrote.
func TestRequestID_InHeaderProblemBodyAndEveryLogLine(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		var logs lockedBuffer
		a := newTestAPI(t, b, func(sc *store.Config, rc *Config) {
			rc.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		})
		cases := []struct{ sent, want string }{
			{"client-id.42:a_b", "client-id.42:a_b"},
			{"has spaces", ""},
			{strings.Repeat("x", 129), ""},
			{"", ""},
		}
		seen := map[string]bool{}
		for _, c := range cases {
			var opts []reqOption
			if c.sent != "" {
				opts = append(opts, withHeader("X-Request-Id", c.sent))
			}
			r := a.do("GET", "/api/auth/me", nil, opts...)
			wantProblemShape(t, r, http.StatusUnauthorized, store.CodeUnauthenticated)
			id := r.header.Get("X-Request-Id")
			if c.want != "" && id != c.want {
				t.Fatalf("sent %q, got id %q, want it kept", c.sent, id)
			}
			if c.want == "" && (id == c.sent || !requestIDPattern.MatchString(id) || seen[id]) {
				t.Fatalf("sent %q, got id %q, want a fresh well-formed one", c.sent, id)
			}
			seen[id] = true
		}
		// A request that logs more than its access line: a store that does not answer.
		a.store.Close()
		r := a.do("GET", "/readyz", nil, withHeader("X-Request-Id", "ready-1"))
		wantProblemShape(t, r, http.StatusServiceUnavailable, store.CodeUnavailable)

		lines, perID := 0, map[string]int{}
		sc := bufio.NewScanner(strings.NewReader(logs.String()))
		for sc.Scan() {
			var rec map[string]any
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatalf("log line is not JSON: %s", sc.Text())
			}
			id, _ := rec["request_id"].(string)
			if !seen[id] && id != "ready-1" {
				t.Fatalf("log line without the request's id: %s", sc.Text())
			}
			lines++
			perID[id]++
		}
		if lines != len(cases)+2 || perID["ready-1"] != 2 {
			t.Fatalf("%d log lines (%v), want one per request and two for the failed readiness", lines, perID)
		}
	})
}

// Readiness reports the limiter backend, and fails first once shutdown begins, while every
// other request is still served.
func TestReadyz_ReportsLimiterAndFailsOnceDraining(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		m := a.do("GET", "/readyz", nil).ok(t).obj(t)
		lim, _ := m["limiter"].(map[string]any)
		if m["status"] != "ready" || m["migrations"] != "current" || lim["backend"] != "memory" || lim["fallback"] != false {
			t.Fatalf("readyz %v", m)
		}
		a.srv.Drain()
		wantProblemShape(t, a.do("GET", "/readyz", nil), http.StatusServiceUnavailable, store.CodeUnavailable)
		a.do("GET", "/healthz", nil).ok(t)
		a.do("GET", "/api/auth/me", nil).wantProblem(t, http.StatusUnauthorized, store.CodeUnauthenticated)
	})
}

// An instance is not ready until its NFT index is built: /readyz says so, and answers 200 once
// the index serves.
func TestReadyz_FailsUntilTheNFTIndexIsBuilt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		s, err := store.Open(context.Background(), a.store.Config()) // a second instance, not started
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		srv, err := New(s, Config{PublicURL: s.Config().PublicURL, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv)
		t.Cleanup(hs.Close)
		other := &testAPI{t: t, clock: a.clock, store: s, srv: srv, http: hs}
		r := other.do("GET", "/readyz", nil)
		wantProblemShape(t, r, http.StatusServiceUnavailable, store.CodeUnavailable)
		if !strings.Contains(string(r.body), "NFT index") {
			t.Fatalf("readyz before the index is built: %s", r.body)
		}
		s.StartNFTIndex()
		if err := s.AwaitNFTIndex(context.Background()); err != nil {
			t.Fatal(err)
		}
		if m := other.do("GET", "/readyz", nil).ok(t).obj(t); m["nftIndex"] != "ready" {
			t.Fatalf("readyz %v", m)
		}
	})
}
