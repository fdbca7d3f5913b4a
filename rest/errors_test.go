package rest

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
	"marketd/store/wallet"
)

// wantProblemShape fails unless r is problem+json whose members are exactly type, title,
// status, detail, code and requestId (the response's X-Request-Id), with status and code as
// given and nothing internal in it.
func wantProblemShape(t testing.TB, r *testResponse, status int, code store.Code) {
	t.Helper()
	r.wantProblem(t, status, code)
	m := problemOf(t, r)
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if got := strings.Join(keys, ","); got != "code,detail,requestId,status,title,type" {
		t.Fatalf("problem members %s, want code,detail,requestId,status,title,type", got)
	}
	if id := r.header.Get("X-Request-Id"); id == "" || m["requestId"] != id {
		t.Fatalf("problem requestId %v, response X-Request-Id %q: want the same id", m["requestId"], id)
	}
	for _, k := range []string{"type", "title", "detail", "code"} {
		if _, ok := m[k].(string); !ok {
			t.Fatalf("problem %s is not a string: %s", k, r.body)
		}
	}
	if m["title"] != http.StatusText(status) {
		t.Fatalf("title %q, want %q", m["title"], http.StatusText(status))
	}
	for _, leak := range []string{"goroutine ", "runtime/", ".go:", "panic", "SELECT ", "INSERT ", "UPDATE ", "sql:", "pq:", "SQLSTATE"} {
		if bytes.Contains(r.body, []byte(leak)) {
			t.Fatalf("problem leaks %q: %s", leak, r.body)
		}
	}
}

// errorFixture is what the error cases share: an API with two onboarded parties, alice
// signed in by bearer and by cookie.
type errorFixture struct {
	a          *testAPI
	alice, bob *storetest.Party
	tok        string
	cookie     *http.Cookie
}

func newErrorFixture(t *testing.T, b storetest.Backend, opts ...apiOption) *errorFixture {
	a := newTestAPI(t, b, opts...)
	f := &errorFixture{a: a, alice: a.onboard("alice"), bob: a.onboard("bob")}
	v := a.signIn(f.alice)
	f.tok, f.cookie = v.str(t, "token"), v.sessionCookie()
	if f.cookie == nil {
		t.Fatal("verify set no session cookie")
	}
	return f
}

func TestErrors_EveryErrorIsProblemJSONWithItsCode(t *testing.T) {
	unknownHash := sha256.Sum256([]byte("never prepared"))
	execBody := func(hash []byte) map[string]string {
		return map[string]string{"preparedTransactionHash": base64.StdEncoding.EncodeToString(hash), "signature": base64.StdEncoding.EncodeToString(make([]byte, 64))}
	}
	cases := []struct {
		name   string
		opts   []apiOption
		status int
		code   store.Code
		header map[string]string // header -> a substring its value must contain
		call   func(t *testing.T, f *errorFixture) *testResponse
	}{
		{"malformed party id", nil, 400, store.CodeInvalidRequest, nil, func(t *testing.T, f *errorFixture) *testResponse {
			return f.a.do("POST", "/api/auth/nonce", map[string]string{"partyId": "not-a-party"})
		}},
		{"malformed JSON", nil, 400, store.CodeInvalidRequest, nil, func(t *testing.T, f *errorFixture) *testResponse {
			return f.a.do("POST", "/api/auth/nonce", `{"partyId":`)
		}},
		{"bad limit", nil, 400, store.CodeInvalidRequest, nil, func(t *testing.T, f *errorFixture) *testResponse {
			return f.a.do("GET", "/api/auth/sessions?limit=0", nil, bearer(f.tok))
		}},
		{"bad cursor", nil, 400, store.CodeInvalidCursor, nil, func(t *testing.T, f *errorFixture) *testResponse {
			return f.a.do("GET", "/api/auth/sessions?cursor=garbage", nil, bearer(f.tok))
		}},
		{"no token", nil, 401, store.CodeUnauthenticated, map[string]string{"WWW-Authenticate": "Bearer"}, func(t *testing.T, f *errorFixture) *testResponse {
			return f.a.do("GET", "/api/auth/me", nil)
		}},
		{"garbage token", nil, 401, store.CodeInvalidToken, map[string]string{"WWW-Authenticate": "Bearer"}, func(t *testing.T, f *errorFixture) *testResponse {
			return f.a.do("GET", "/api/auth/me", nil, bearer("not.a.jwt"))
		}},
		{"expired token", nil, 401, store.CodeInvalidToken, map[string]string{"WWW-Authenticate": "Bearer"}, func(t *testing.T, f *errorFixture) *testResponse {
			f.a.clock.Advance(4 * time.Hour)
			return f.a.do("GET", "/api/auth/me", nil, bearer(f.tok))
		}},
		{"logged-out token", nil, 401, store.CodeTokenRevoked, map[string]string{"WWW-Authenticate": "Bearer"}, func(t *testing.T, f *errorFixture) *testResponse {
			f.a.do("POST", "/api/auth/logout", nil, bearer(f.tok)).ok(t)
			return f.a.do("GET", "/api/auth/me", nil, bearer(f.tok))
		}},
		{"rotated token after its grace", nil, 401, store.CodeTokenRotated, map[string]string{"WWW-Authenticate": "Bearer"}, func(t *testing.T, f *errorFixture) *testResponse {
			f.a.clock.Advance(31 * time.Minute)
			if r := f.a.do("GET", "/api/auth/me", nil, withCookie(f.cookie)).ok(t); r.header.Get("X-Auth-Token") == "" {
				t.Fatal("the cookie's token was not rotated")
			}
			f.a.clock.Advance(5 * time.Minute)
			return f.a.do("GET", "/api/auth/me", nil, bearer(f.cookie.Value))
		}},
		{"unknown nonce", nil, 401, store.CodeNonceInvalid, map[string]string{"WWW-Authenticate": "Bearer"}, func(t *testing.T, f *errorFixture) *testResponse {
			return f.a.do("POST", "/api/auth/verify", map[string]string{"partyId": f.alice.ID, "nonce": strings.Repeat("A", 32), "signature": f.alice.SignBase64([]byte("x"))})
		}},
		{"challenge signed by another key", nil, 401, store.CodeInvalidSignature, nil, func(t *testing.T, f *errorFixture) *testResponse {
			msg, nonce := f.a.challenge(f.alice)
			return f.a.do("POST", "/api/auth/verify", map[string]string{"partyId": f.alice.ID, "nonce": nonce, "signature": f.bob.SignBase64([]byte(msg))})
		}},
		{"another party in the query", nil, 403, store.CodePartyMismatch, nil, func(t *testing.T, f *errorFixture) *testResponse {
			return f.a.do("GET", "/api/auth/me?taker="+f.bob.ID, nil, bearer(f.tok))
		}},
		{"cookie write from another site", nil, 403, store.CodeCrossOrigin, nil, func(t *testing.T, f *errorFixture) *testResponse {
			return f.a.do("POST", "/api/auth/logout", nil, withCookie(f.cookie), withHeader("Origin", "https://evil.example"))
		}},
		{"unknown path", nil, 404, store.CodeNotFound, nil, func(t *testing.T, f *errorFixture) *testResponse {
			return f.a.do("GET", "/api/no/such/endpoint", nil)
		}},
		{"unknown path outside the API", nil, 404, store.CodeNotFound, nil, func(t *testing.T, f *errorFixture) *testResponse {
			return f.a.do("POST", "/nothing-here", "{}")
		}},
		{"party not onboarded", nil, 404, store.CodePartyNotFound, nil, func(t *testing.T, f *errorFixture) *testResponse {
			return f.a.do("POST", "/api/auth/nonce", map[string]string{"partyId": wallet.PartyIDFor("ghost", newTestKey().Public())})
		}},
		{"unknown prepared hash", nil, 404, store.CodePreparedNotFound, nil, func(t *testing.T, f *errorFixture) *testResponse {
			return f.a.do("POST", "/api/parties/onboard/execute", execBody(unknownHash[:]))
		}},
		{"wrong method", nil, 405, store.CodeMethodNotAllowed, map[string]string{"Allow": "GET"}, func(t *testing.T, f *errorFixture) *testResponse {
			return f.a.do("DELETE", "/api/auth/me", nil, bearer(f.tok))
		}},
		{"GET on a POST endpoint", nil, 405, store.CodeMethodNotAllowed, map[string]string{"Allow": "POST"}, func(t *testing.T, f *errorFixture) *testResponse {
			return f.a.do("GET", "/api/auth/nonce", nil)
		}},
		{"expired prepared transaction", nil, 410, store.CodePreparedExpired, nil, func(t *testing.T, f *errorFixture) *testResponse {
			k := newTestKey()
			p := f.a.prepareOnboarding(k, "carol")
			f.a.clock.Advance(10 * time.Minute)
			return f.a.executeOnboarding(p.PreparedTransactionHash, k.signHash(t, p.PreparedTransactionHash))
		}},
		{"body over 1 MiB", nil, 413, store.CodePayloadTooLarge, nil, func(t *testing.T, f *errorFixture) *testResponse {
			return f.a.do("POST", "/api/auth/nonce", `{"partyId":"`+strings.Repeat("a", maxBody)+`"}`)
		}},
		{"text/plain body", nil, 415, store.CodeUnsupportedMediaType, nil, func(t *testing.T, f *errorFixture) *testResponse {
			return f.a.do("POST", "/api/auth/nonce", `{"partyId":"`+f.alice.ID+`"}`, withHeader("Content-Type", "text/plain"))
		}},
		{"too many reads", []apiOption{withRates(1, 0)}, 429, store.CodeRateLimited, map[string]string{"Retry-After": "60"}, func(t *testing.T, f *errorFixture) *testResponse {
			f.a.do("GET", "/api/auth/me", nil, bearer(f.tok)).ok(t)
			return f.a.do("GET", "/api/auth/me", nil, bearer(f.tok))
		}},
		{"too many prepares", []apiOption{withRates(0, 2)}, 429, store.CodeRateLimited, map[string]string{"Retry-After": "60"}, func(t *testing.T, f *errorFixture) *testResponse {
			// The fixture's two onboardings spent the budget of this origin.
			return f.a.do("POST", "/api/parties/onboard/prepare", newTestKey().onboardBody("carol"))
		}},
		{"store gone, readiness", nil, 503, store.CodeUnavailable, nil, func(t *testing.T, f *errorFixture) *testResponse {
			f.a.store.Close()
			return f.a.do("GET", "/readyz", nil)
		}},
		{"store gone, a request that needs it", nil, 500, store.CodeInternal, nil, func(t *testing.T, f *errorFixture) *testResponse {
			// A sign-in writes its session: with the store closed it cannot, and says so as a 500.
			msg, nonce := f.a.challenge(f.alice)
			f.a.store.Close()
			return f.a.do("POST", "/api/auth/verify", map[string]string{"partyId": f.alice.ID, "nonce": nonce, "signature": f.alice.SignBase64([]byte(msg))})
		}},
	}
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				f := newErrorFixture(t, b, c.opts...)
				r := c.call(t, f)
				wantProblemShape(t, r, c.status, c.code)
				for h, want := range c.header {
					if got := r.header.Get(h); !strings.Contains(got, want) {
						t.Fatalf("%s = %q, want it to contain %q", h, got, want)
					}
				}
			})
		}
	})
}

// lockedBuffer collects log output written from the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestErrors_PanicIs500ProblemWithoutPanicTextOrStack(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		var logs lockedBuffer
		a := newTestAPI(t, b, func(sc *store.Config, rc *Config) {
			rc.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		})
		const secret = "boom: password=hunter2 at SELECT * FROM parties"
		h := a.srv.withRequestLog(a.srv.withRecover(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			panic(secret)
		})))
		req := httptest.NewRequest("GET", "/api/anything", nil)
		req.Header.Set("X-Request-Id", "req-fault-1")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)

		r := &testResponse{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
		wantProblemShape(t, r, http.StatusInternalServerError, store.CodeInternal)
		for _, leak := range []string{"hunter2", "boom", "SELECT", "goroutine", "debug.Stack"} {
			if bytes.Contains(r.body, []byte(leak)) {
				t.Fatalf("the 500 leaks %q: %s", leak, r.body)
			}
		}
		if got := r.header.Get("X-Request-Id"); got != "req-fault-1" {
			t.Fatalf("X-Request-Id = %q", got)
		}
		// The operator still learns what happened: the panic and its stack are logged with the request id.
		log := logs.String()
		for _, want := range []string{"hunter2", "goroutine", "req-fault-1"} {
			if !strings.Contains(log, want) {
				t.Fatalf("the log does not mention %q:\n%s", want, log)
			}
		}
	})
}

func TestVerify_UserAgentThatIsNotUTF8SignsIn(t *testing.T) {
	// The user agent is kept with the session; a header's bytes need not be UTF-8, and a
	// long one is cut, possibly inside a character.
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice := a.onboard("alice")
		for name, ua := range map[string]string{
			"invalid UTF-8":       "agent/\xff\xfe\x80",
			"cut inside a letter": "x" + strings.Repeat("é", 300),
		} {
			t.Run(name, func(t *testing.T) {
				a.clock.Advance(time.Second) // the newest session is this one
				msg, nonce := a.challenge(alice)
				r := a.do("POST", "/api/auth/verify", map[string]string{"partyId": alice.ID, "nonce": nonce, "signature": alice.SignBase64([]byte(msg))},
					withHeader("User-Agent", ua))
				if r.status != http.StatusOK {
					t.Fatalf("verify: status %d: %s", r.status, r.body)
				}
				tok := r.str(t, "token")
				list := a.sessionPage(tok, "limit=1")
				if len(list.Items) != 1 || !list.Items[0].Current || list.Items[0].UserAgent == "" {
					t.Fatalf("session list %+v", list.Items)
				}
			})
		}
	})
}
