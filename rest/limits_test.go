package rest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/admin"
	"marketd/store/storetest"
)

// wantRateHeaders fails unless r carries the RateLimit headers with these values.
func wantRateHeaders(t testing.TB, h http.Header, limit, remaining, reset int) {
	t.Helper()
	got := [3]string{h.Get("RateLimit-Limit"), h.Get("RateLimit-Remaining"), h.Get("RateLimit-Reset")}
	want := [3]string{strconv.Itoa(limit), strconv.Itoa(remaining), strconv.Itoa(reset)}
	if got != want {
		t.Fatalf("RateLimit-Limit/Remaining/Reset = %q, want %q", got, want)
	}
}

func wantNoRateHeaders(t testing.TB, h http.Header) {
	t.Helper()
	for _, name := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After"} {
		if v := h.Get(name); v != "" {
			t.Fatalf("%s = %q on an unlimited response", name, v)
		}
	}
}

// wantRateLimited fails unless r is 429 rate_limited with Retry-After of retryAfter seconds.
func wantRateLimited(t testing.TB, r *testResponse, retryAfter int) {
	t.Helper()
	r.wantProblem(t, http.StatusTooManyRequests, store.CodeRateLimited)
	if got := headerInt(t, r.header, "Retry-After"); got != retryAfter || got < 1 {
		t.Fatalf("Retry-After = %d, want %d (whole seconds, at least 1)", got, retryAfter)
	}
}

func TestReadLimit_EveryAPIGetCountsPerOriginUntilTheWindowEnds(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b, withRates(3, 0))
		alice := a.onboard("alice")
		tok := a.token(alice) // POSTs are not reads: the budget is untouched

		// Three reads 15 s apart; the 401 counts like the others.
		steps := []struct {
			opts   []reqOption
			status int
		}{
			{[]reqOption{bearer(tok)}, http.StatusOK},
			{nil, http.StatusUnauthorized},
			{[]reqOption{bearer(tok)}, http.StatusOK},
		}
		for i, s := range steps {
			if i > 0 {
				a.clock.Advance(15 * time.Second)
			}
			r := a.do("GET", "/api/auth/me", nil, s.opts...)
			if r.status != s.status {
				t.Fatalf("read %d: status %d, want %d: %s", i+1, r.status, s.status, r.body)
			}
			wantRateHeaders(t, r.header, 3, 2-i, 60-15*i)
		}

		a.clock.Advance(15 * time.Second) // 45 s into the window
		r := a.do("GET", "/api/auth/me", nil, bearer(tok))
		wantRateLimited(t, r, 15)
		wantRateHeaders(t, r.header, 3, 0, 15)

		// Half a second before the end, Retry-After rounds up to a whole second.
		a.clock.Advance(14*time.Second + 500*time.Millisecond)
		wantRateLimited(t, a.do("GET", "/api/auth/me", nil, bearer(tok)), 1)

		// POSTs are not reads: signing in still works with the read budget spent.
		tok2 := a.token(alice)

		a.clock.Advance(500 * time.Millisecond) // exactly the end of the window
		r = a.do("GET", "/api/auth/me", nil, bearer(tok2)).ok(t)
		wantRateHeaders(t, r.header, 3, 2, 60)
	})
}

// Reads are counted per client address, so each address has its own budget; loopback
// addresses stand for hosts.
func TestReadLimit_EachClientAddressHasItsOwnBudget(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b, withRates(2, 0))
		for range 2 {
			a.do("GET", "/api/auth/me", nil)
		}
		wantRateLimited(t, a.do("GET", "/api/auth/me", nil), 60)

		other := fromPeer("127.0.0.2")
		r := a.do("GET", "/api/auth/me", nil, other)
		r.wantProblem(t, http.StatusUnauthorized, store.CodeUnauthenticated)
		wantRateHeaders(t, r.header, 2, 1, 60)
		a.do("GET", "/api/auth/me", nil, other)
		wantRateLimited(t, a.do("GET", "/api/auth/me", nil, other), 60)

		third := fromPeer("127.0.0.3")
		wantRateHeaders(t, a.do("GET", "/api/auth/me", nil, third).header, 2, 1, 60)
	})
}

// Every 429 is counted for the admin console's chart, by scope, fleet-wide in the store once
// flushed; allowed requests are not.
func TestLimits_RefusalsAreCountedByScopeInTheStore(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b, withRates(2, 1))
		for range 5 { // 2 allowed, 3 refused
			a.do("GET", "/api/auth/me", nil)
		}
		k := newTestKey()
		for range 3 { // 1 allowed, 2 refused
			a.do("POST", "/api/parties/onboard/prepare", k.onboardBody("alice"))
		}
		if err := a.store.FlushRefusals(context.Background()); err != nil {
			t.Fatal(err)
		}
		c, err := admin.New(a.store).RefusalsPerMinute(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := [2]int64{c.Count["read"][0], c.Count["prepare"][0]}; got != [2]int64{3, 2} || len(c.Count) != 2 {
			t.Fatalf("refusals this minute: %v, want read 3, prepare 2", c.Count)
		}
	})
}

func TestReadLimit_HeadCountsAsARead(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b, withRates(2, 0))
		for i := range 2 {
			r := a.do("HEAD", "/api/auth/me", nil)
			if r.status != http.StatusUnauthorized {
				t.Fatalf("HEAD %d: status %d, want 401", i+1, r.status)
			}
			wantRateHeaders(t, r.header, 2, 1-i, 60)
		}
		r := a.do("GET", "/api/auth/me", nil)
		if r.status != http.StatusTooManyRequests {
			t.Fatalf("GET after two HEADs: status %d, want 429", r.status)
		}
	})
}

func TestReadLimit_InfrastructureEndpointsAreNeverLimited(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b, withRates(1, 1))
		a.do("GET", "/api/auth/me", nil)
		wantRateLimited(t, a.do("GET", "/api/auth/me", nil), 60)
		for _, path := range []string{"/healthz", "/readyz", "/openapi.yaml", "/.well-known/jwks.json"} {
			for i := range 5 {
				r := a.do("GET", path, nil).ok(t)
				if i == 4 {
					wantNoRateHeaders(t, r.header)
				}
			}
		}
	})
}

func TestPrepareLimit_AnonymousPreparesCountPerOrigin(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b, withRates(0, 2))
		k := newTestKey()
		prep := func(opts ...reqOption) *testResponse {
			return a.do("POST", "/api/parties/onboard/prepare", k.onboardBody("alice"), opts...)
		}
		first := prep().ok(t)
		wantRateHeaders(t, first.header, 2, 1, 60)
		a.clock.Advance(10 * time.Second)
		wantRateHeaders(t, prep().ok(t).header, 2, 0, 50)
		wantRateLimited(t, prep(), 50)

		// Another client address has a budget of its own.
		other := fromPeer("127.0.0.2")
		wantRateHeaders(t, prep(other).ok(t).header, 2, 1, 60)

		// Execute is not a prepare, and neither are sign-in calls nor reads (unlimited here).
		hash := first.str(t, "preparedTransactionHash")
		r := a.executeOnboarding(hash, k.signHash(t, hash)).ok(t)
		wantNoRateHeaders(t, r.header)
		wantNoRateHeaders(t, a.do("GET", "/api/auth/me", nil).header)

		a.clock.Advance(50 * time.Second) // the end of the first origin's window
		wantRateHeaders(t, prep().ok(t).header, 2, 1, 60)
	})
}

func TestPrepareLimit_AuthenticatedPreparesCountPerParty(t *testing.T) {
	// No prepare endpoint needs a token yet; a route built like the future ones exercises
	// the same middleware, so the per-party key is pinned now.
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b, withRates(0, 2))
		alice, bob := a.onboard("alice"), a.onboard("bob")
		aliceTok1, aliceTok2, bobTok := a.token(alice), a.token(alice), a.token(bob)
		h := a.srv.wrap(route{method: "POST", path: "/api/test/prepare", access: token, prepare: true,
			handle: func(w http.ResponseWriter, r *http.Request) error {
				writeJSON(w, http.StatusOK, map[string]string{"party": authOf(r.Context()).PartyID})
				return nil
			}})
		call := func(tok, origin string) *httptest.ResponseRecorder {
			req := httptest.NewRequest("POST", "/api/test/prepare", strings.NewReader("{}"))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("Origin", origin)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec
		}
		// Alice's two sessions from two origins share one budget.
		if rec := call(aliceTok1, "https://one.example"); rec.Code != 200 || rec.Header().Get("RateLimit-Remaining") != "1" {
			t.Fatalf("alice 1: %d %v %s", rec.Code, rec.Header(), rec.Body)
		}
		if rec := call(aliceTok2, "https://two.example"); rec.Code != 200 || rec.Header().Get("RateLimit-Remaining") != "0" {
			t.Fatalf("alice 2: %d %v %s", rec.Code, rec.Header(), rec.Body)
		}
		rec := call(aliceTok1, "https://three.example")
		r := &testResponse{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
		wantRateLimited(t, r, 60)
		// Bob, from the same origin as alice, has his own.
		if rec := call(bobTok, "https://one.example"); rec.Code != 200 || rec.Header().Get("RateLimit-Remaining") != "1" {
			t.Fatalf("bob: %d %v %s", rec.Code, rec.Header(), rec.Body)
		}
		// The anonymous budget of their address (httptest's 192.0.2.1) is untouched by the
		// parties' prepares.
		k := newTestKey()
		body, _ := json.Marshal(k.onboardBody("carol"))
		req := httptest.NewRequest("POST", "/api/parties/onboard/prepare", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		anon := httptest.NewRecorder()
		a.srv.ServeHTTP(anon, req)
		if anon.Code != 200 {
			t.Fatalf("anonymous prepare: %d %s", anon.Code, anon.Body)
		}
		wantRateHeaders(t, anon.Header(), 2, 1, 60)
	})
}

func TestLimits_ZeroMeansUnlimited(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b, withRates(0, 0))
		k := newTestKey()
		for i := range 25 {
			r := a.do("POST", "/api/parties/onboard/prepare", k.onboardBody("alice")).ok(t)
			wantNoRateHeaders(t, r.header)
			r = a.do("GET", "/api/auth/me", nil)
			if r.status != http.StatusUnauthorized {
				t.Fatalf("read %d: status %d, want 401", i+1, r.status)
			}
			wantNoRateHeaders(t, r.header)
		}
	})
}

func TestBody_LargerThanOneMiBIs413(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		// {"publicKey":"...","hint":"xxx...x"} padded to an exact size.
		body := func(size int) []byte {
			head := `{"publicKey":"` + newTestKey().onboardBody("")["publicKey"] + `","hint":"`
			return []byte(head + strings.Repeat("x", size-len(head)-2) + `"}`)
		}
		r := a.do("POST", "/api/parties/onboard/prepare", body(maxBody+1))
		r.wantProblem(t, http.StatusRequestEntityTooLarge, store.CodePayloadTooLarge)

		// Exactly 1 MiB is read and judged on its content (the hint is too long).
		r = a.do("POST", "/api/parties/onboard/prepare", body(maxBody))
		r.wantProblem(t, http.StatusBadRequest, store.CodeInvalidRequest)
		wantDetailMentions(t, r, "hint")
	})
}

func TestBody_IsDecodedStrictly(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice := a.onboard("alice")
		valid := `{"partyId":"` + alice.ID + `"}`
		a.do("POST", "/api/auth/nonce", valid).ok(t)
		a.do("POST", "/api/auth/nonce", valid+"\n \t").ok(t) // trailing white space is no data

		cases := []struct {
			name    string
			body    string
			mention []string
		}{
			{"unknown field", `{"partyId":"` + alice.ID + `","extra":1}`, []string{`"extra"`}},
			{"trailing object", valid + `{}`, nil},
			{"trailing garbage", valid + `x`, nil},
			{"two objects", valid + valid, nil},
			{"array", `[` + valid + `]`, []string{"object"}},
			{"number", `42`, []string{"object"}},
			{"string", `"` + alice.ID + `"`, []string{"object"}},
			{"partyId as number", `{"partyId":12}`, []string{`"partyId"`, "string"}},
			{"partyId as object", `{"partyId":{}}`, []string{`"partyId"`}},
			{"malformed", `{"partyId":`, nil},
			{"not JSON", `partyId=x`, nil},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := a.do("POST", "/api/auth/nonce", c.body)
				r.wantProblem(t, http.StatusBadRequest, store.CodeInvalidRequest)
				wantDetailMentions(t, r, c.mention...)
			})
		}
	})
}

func TestBody_NotJSONContentTypeIs415(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		k := newTestKey()
		body, _ := json.Marshal(k.onboardBody("alice"))
		for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "garbage;;"} {
			r := a.do("POST", "/api/parties/onboard/prepare", body, withHeader("Content-Type", ct))
			r.wantProblem(t, http.StatusUnsupportedMediaType, "unsupported_media_type")
		}
		// application/json with parameters is JSON.
		a.do("POST", "/api/parties/onboard/prepare", body, withHeader("Content-Type", "application/json; charset=utf-8")).ok(t)
	})
}
