package rest

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// A verify too malformed to attempt still spends the nonce it names: a nonce is single-use,
// and the first verify that names it consumes it, whatever that attempt's outcome.
func TestVerify_MalformedAttemptStillSpendsTheNonce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice := a.onboard("alice")
		cases := []struct {
			name string
			body func(nonce string) map[string]string
			code store.Code
		}{
			{"signature not base64", func(n string) map[string]string {
				return map[string]string{"partyId": alice.ID, "nonce": n, "signature": "not a signature"}
			}, store.CodeInvalidRequest},
			{"signature missing", func(n string) map[string]string {
				return map[string]string{"partyId": alice.ID, "nonce": n}
			}, store.CodeInvalidRequest},
			{"partyId malformed", func(n string) map[string]string {
				return map[string]string{"partyId": "alice", "nonce": n, "signature": alice.SignBase64([]byte("x"))}
			}, store.CodeInvalidRequest},
			{"partyId missing", func(n string) map[string]string {
				return map[string]string{"nonce": n, "signature": alice.SignBase64([]byte("x"))}
			}, store.CodeInvalidRequest},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				msg, nonce := a.challenge(alice)
				a.do("POST", "/api/auth/verify", c.body(nonce)).wantProblem(t, http.StatusBadRequest, c.code)
				a.do("POST", "/api/auth/verify", map[string]string{"partyId": alice.ID, "nonce": nonce, "signature": alice.SignBase64([]byte(msg))}).
					wantProblem(t, http.StatusUnauthorized, store.CodeNonceInvalid)
			})
		}
	})
}

// An Authorization header that is present is the credential, even when it is empty: no
// fall-back to the cookie.
func TestAuth_EmptyAuthorizationHeaderIs401EvenWithACookie(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		cookie := a.signIn(a.onboard("alice")).sessionCookie()
		a.do("GET", "/api/auth/me", nil, withCookie(cookie)).ok(t)
		a.do("GET", "/api/auth/me", nil, withCookie(cookie), withHeader("Authorization", "")).
			wantProblem(t, http.StatusUnauthorized, store.CodeInvalidToken)
	})
}

// Every GET under /api/ is a read, one that matches no route too.
func TestLimits_UnroutedReadsCount(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b, withRates(2, 0))
		for want := 1; want >= 0; want-- {
			r := a.do("GET", "/api/no/such/thing", nil)
			r.wantProblem(t, http.StatusNotFound, store.CodeNotFound)
			if got := r.header.Get("RateLimit-Remaining"); got != strconv.Itoa(want) {
				t.Fatalf("RateLimit-Remaining %q, want %d", got, want)
			}
		}
		a.do("GET", "/api/no/such/thing", nil).wantProblem(t, http.StatusTooManyRequests, store.CodeRateLimited)
		a.do("GET", "/api/auth/me", nil).wantProblem(t, http.StatusTooManyRequests, store.CodeRateLimited)
	})
}

// A body naming another party is refused before any work: the cookie is not rotated and the
// prepare is not counted.
func TestAuth_BodyNamingAnotherPartyIs403BeforeRotationAndLimits(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b, withRates(0, 2))
		alice, bob := a.onboard("alice"), a.onboard("bob")
		cookie := a.signIn(alice).sessionCookie()
		ran := 0
		h := a.srv.wrap(route{method: "POST", path: "/api/test/prepare", access: token, prepare: true,
			handle: func(w http.ResponseWriter, r *http.Request) error {
				var req struct {
					PartyID string `json:"partyId"`
				}
				if err := decode(w, r, &req); err != nil {
					return err
				}
				ran++
				w.WriteHeader(http.StatusNoContent)
				return nil
			}})
		a.srv.mux.Handle("POST /api/test/prepare", h)
		a.clock.Advance(31 * time.Minute) // the cookie's token is due for rotation

		r := a.do("POST", "/api/test/prepare", map[string]string{"partyId": bob.ID}, withCookie(cookie))
		r.wantProblem(t, http.StatusForbidden, store.CodePartyMismatch)
		if r.sessionCookie() != nil || r.header.Get("X-Auth-Token") != "" {
			t.Fatalf("a refused request rotated the cookie: %v", r.header)
		}
		if r.header.Get("RateLimit-Remaining") != "" || ran != 0 {
			t.Fatalf("a refused request was counted (%q) or handled (%d)", r.header.Get("RateLimit-Remaining"), ran)
		}
		// The refused request used none of the party's two prepares, and this one rotates.
		r = a.do("POST", "/api/test/prepare", map[string]string{"partyId": alice.ID}, withCookie(cookie))
		if r.status != http.StatusNoContent || r.sessionCookie() == nil || ran != 1 || r.header.Get("RateLimit-Remaining") != "1" {
			t.Fatalf("status %d, cookie %v, ran %d, remaining %q: %s", r.status, r.sessionCookie(), ran, r.header.Get("RateLimit-Remaining"), r.body)
		}
	})
}
