package rest

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// The service's default lifetimes and public URL, which the harness's configuration keeps.
const (
	siChallengeTTL = 10 * time.Minute
	siTokenTTL     = 4 * time.Hour
	siRotateAfter  = 30 * time.Minute
	siRotateGrace  = 5 * time.Minute
	siPublicURL    = "http://localhost:8080"
)

func TestVerify_ReplayedNonceIs401(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice := a.onboard("alice")
		msg, nonce := a.challenge(alice)
		sig := alice.SignBase64([]byte(msg))

		siVerify(a, alice.ID, nonce, sig).ok(t)
		siVerify(a, alice.ID, nonce, sig).wantProblem(t, http.StatusUnauthorized, store.CodeNonceInvalid)
		siVerify(a, alice.ID, nonce, sig).wantProblem(t, http.StatusUnauthorized, store.CodeNonceInvalid)
	})
}

func TestVerify_ExpiredChallengeIs401AtItsExpirationTime(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice := a.onboard("alice")

		// At exactly the Expiration Time the challenge is dead.
		msg, nonce := a.challenge(alice)
		a.clock.Advance(siChallengeTTL)
		siVerify(a, alice.ID, nonce, alice.SignBase64([]byte(msg))).wantProblem(t, http.StatusUnauthorized, store.CodeNonceInvalid)

		// One nanosecond before it, a fresh one still signs in.
		msg, nonce = a.challenge(alice)
		a.clock.Advance(siChallengeTTL - time.Nanosecond)
		siVerify(a, alice.ID, nonce, alice.SignBase64([]byte(msg))).ok(t)

		// The lifetime runs from the Issued At the text states, even when the challenge was
		// requested part-way through a second: the service refuses at the Expiration Time it wrote.
		a.clock.Advance(time.Nanosecond + 500*time.Millisecond)
		msg, nonce = a.challenge(alice)
		exp := siChallengeField(t, msg, "Expiration Time: ")
		at, err := time.Parse(time.RFC3339, exp)
		if err != nil {
			t.Fatalf("Expiration Time %q: %v", exp, err)
		}
		a.clock.Set(at)
		siVerify(a, alice.ID, nonce, alice.SignBase64([]byte(msg))).wantProblem(t, http.StatusUnauthorized, store.CodeNonceInvalid)
	})
}

func TestVerify_NonceOfAnotherPartyIs401AndConsumed(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice, bob := a.onboard("alice"), a.onboard("bob")
		msg, nonce := a.challenge(alice)

		// Bob answers Alice's challenge, signing it himself.
		siVerify(a, bob.ID, nonce, bob.SignBase64([]byte(msg))).wantProblem(t, http.StatusUnauthorized, store.CodeNonceInvalid)
		// That attempt spent the nonce: Alice can no longer use it.
		siVerify(a, alice.ID, nonce, alice.SignBase64([]byte(msg))).wantProblem(t, http.StatusUnauthorized, store.CodeNonceInvalid)
		// Alice herself is not locked out.
		a.signIn(alice)
	})
}

func TestVerify_SignatureByAnotherKeyIs401AndConsumesNonce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice := a.onboard("alice")
		stranger := storetest.NewKey()
		msg, nonce := a.challenge(alice)

		forged := stranger.SignBase64([]byte(msg))
		siVerify(a, alice.ID, nonce, forged).wantProblem(t, http.StatusUnauthorized, store.CodeInvalidSignature)
		siVerify(a, alice.ID, nonce, alice.SignBase64([]byte(msg))).wantProblem(t, http.StatusUnauthorized, store.CodeNonceInvalid)

		// A signature over other bytes than the exact text is just as wrong.
		msg, nonce = a.challenge(alice)
		siVerify(a, alice.ID, nonce, alice.SignBase64([]byte(msg+"\n"))).wantProblem(t, http.StatusUnauthorized, store.CodeInvalidSignature)
	})
}

func TestNonce_UnknownPartyIs404AndMalformedIs400(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		stranger := storetest.NewParty("stranger").ID

		a.do("POST", "/api/auth/nonce", map[string]string{"partyId": stranger}).
			wantProblem(t, http.StatusNotFound, store.CodePartyNotFound)

		for _, id := range []string{"alice", "alice::", "alice::1220", "alice::" + strings.Repeat("ab", 34), "al ice::1220" + strings.Repeat("0", 64), "alice::1220" + strings.Repeat("A", 64)} {
			a.do("POST", "/api/auth/nonce", map[string]string{"partyId": id}).
				wantProblem(t, http.StatusBadRequest, store.CodeInvalidRequest)
		}
		a.do("POST", "/api/auth/nonce", map[string]string{}).wantProblem(t, http.StatusBadRequest, store.CodeInvalidRequest)
		a.do("POST", "/api/auth/nonce", map[string]any{"partyId": 7}).wantProblem(t, http.StatusBadRequest, store.CodeInvalidRequest)
	})
}

func TestToken_TamperedIs401(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice, bob := a.onboard("alice"), a.onboard("bob")
		tok := a.token(alice)
		a.do("GET", "/api/auth/me", nil, bearer(tok)).ok(t) // the untouched token works, and is now cached as verified

		parts := strings.Split(tok, ".")
		j := siDecodeJWT(t, tok)
		j.claims["sub"] = bob.ID
		asBob := parts[0] + "." + siSegment(t, j.claims) + "." + parts[2]
		cases := map[string]string{
			"payload char flipped":   parts[0] + "." + siFlip(parts[1], len(parts[1])/2) + "." + parts[2],
			"signature char flipped": parts[0] + "." + parts[1] + "." + siFlip(parts[2], len(parts[2])/2),
			"header char flipped":    siFlip(parts[0], len(parts[0])/2) + "." + parts[1] + "." + parts[2],
			"sub re-encoded":         asBob,
			"signature dropped":      parts[0] + "." + parts[1] + ".",
			"not a jwt":              "not-a-token",
		}
		for name, bad := range cases {
			t.Run(name, func(t *testing.T) {
				a.do("GET", "/api/auth/me", nil, bearer(bad)).wantProblem(t, http.StatusUnauthorized, store.CodeInvalidToken)
				a.do("GET", "/api/auth/me", nil, withCookie(&http.Cookie{Name: cookieName, Value: bad})).wantProblem(t, http.StatusUnauthorized, store.CodeInvalidToken)
			})
		}
	})
}

func TestToken_AlgNoneIs401(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice := a.onboard("alice")
		tok := a.token(alice)
		j := siDecodeJWT(t, tok)

		none := siSegment(t, map[string]any{"alg": "none", "typ": "JWT"}) + "." + siSegment(t, j.claims) + "."
		a.do("GET", "/api/auth/me", nil, bearer(none)).wantProblem(t, http.StatusUnauthorized, store.CodeInvalidToken)

		noneWithKid := siSegment(t, map[string]any{"alg": "none", "typ": "JWT", "kid": j.header["kid"]}) + "." + siSegment(t, j.claims) + "."
		a.do("GET", "/api/auth/me", nil, bearer(noneWithKid)).wantProblem(t, http.StatusUnauthorized, store.CodeInvalidToken)

		// Key confusion: HS256 keyed with the service's public key, as a naive verifier would accept.
		jwks := siJWKS(t, a)
		var pub []byte
		for _, k := range jwks {
			if k.KID == j.header["kid"] {
				pub, _ = base64.RawURLEncoding.DecodeString(k.X)
			}
		}
		input := siSegment(t, map[string]any{"alg": "HS256", "typ": "JWT", "kid": j.header["kid"]}) + "." + siSegment(t, j.claims)
		mac := hmac.New(sha256.New, pub)
		mac.Write([]byte(input))
		hs := input + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
		a.do("GET", "/api/auth/me", nil, bearer(hs)).wantProblem(t, http.StatusUnauthorized, store.CodeInvalidToken)
	})
}

func TestToken_UnknownKidOrWrongKeyIs401(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice := a.onboard("alice")
		tok := a.token(alice)
		j := siDecodeJWT(t, tok)
		_, other, _ := ed25519.GenerateKey(rand.Reader)

		// Same claims (its session exists and is current), signed by a key the service never had.
		unknown := siSignJWT(t, map[string]any{"alg": "EdDSA", "typ": "JWT", "kid": "unknown"}, j.claims, other)
		a.do("GET", "/api/auth/me", nil, bearer(unknown)).wantProblem(t, http.StatusUnauthorized, store.CodeInvalidToken)

		wrongKey := siSignJWT(t, map[string]any{"alg": "EdDSA", "typ": "JWT", "kid": j.header["kid"]}, j.claims, other)
		a.do("GET", "/api/auth/me", nil, bearer(wrongKey)).wantProblem(t, http.StatusUnauthorized, store.CodeInvalidToken)

		noKid := siSignJWT(t, map[string]any{"alg": "EdDSA", "typ": "JWT"}, j.claims, other)
		a.do("GET", "/api/auth/me", nil, bearer(noKid)).wantProblem(t, http.StatusUnauthorized, store.CodeInvalidToken)

		// The real token, with the same claims, is accepted: the refusals above are the key's.
		a.do("GET", "/api/auth/me", nil, bearer(tok)).ok(t)
	})
}

func TestToken_ExpiredAtExpiresAtIs401(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice := a.onboard("alice")
		v := a.signIn(alice)
		tok := v.str(t, "token")
		exp := siInt(t, v, "expiresAt")
		if want := storetest.Epoch.Add(siTokenTTL).Unix(); exp != want {
			t.Fatalf("expiresAt %d, want %d (sign-in + 4h)", exp, want)
		}

		a.clock.Advance(siTokenTTL - time.Nanosecond)
		me := a.do("GET", "/api/auth/me", nil, bearer(tok)).ok(t)
		siWantNoRotation(t, me)
		if got := siInt(t, me, "expiresAt"); got != exp {
			t.Fatalf("/me expiresAt %d, want %d", got, exp)
		}

		a.clock.Advance(time.Nanosecond)
		a.do("GET", "/api/auth/me", nil, bearer(tok)).wantProblem(t, http.StatusUnauthorized, store.CodeInvalidToken)
		a.do("GET", "/api/auth/me", nil, withCookie(v.sessionCookie())).wantProblem(t, http.StatusUnauthorized, store.CodeInvalidToken)
	})
}

func TestVerify_SetsSessionCookie(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		for _, dev := range []bool{true, false} {
			t.Run("dev="+strconv.FormatBool(dev), func(t *testing.T) {
				a := newTestAPI(t, b, func(sc *store.Config, rc *Config) { rc.Dev = dev })
				alice := a.onboard("alice")
				v := a.signIn(alice)
				c := siWantSessionCookie(t, v, !dev)
				if tok := v.str(t, "token"); c.Value != tok {
					t.Fatalf("cookie holds %q, body token %q", c.Value, tok)
				}

				// The rotated cookie carries the same attributes.
				a.clock.Advance(siRotateAfter + time.Second)
				me := a.do("GET", "/api/auth/me", nil, withCookie(c)).ok(t)
				siWantSessionCookie(t, me, !dev)
			})
		}
	})
}

func TestRotation_CookieOlderThan30mGetsNewTokenAndHeaders(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice := a.onboard("alice")
		v := a.signIn(alice)
		old := v.sessionCookie()
		if old == nil {
			t.Fatal("verify set no ledger_session cookie")
		}

		// Exactly 30 minutes old is not older than 30 minutes.
		a.clock.Advance(siRotateAfter)
		siWantNoRotation(t, a.do("GET", "/api/auth/me", nil, withCookie(old)).ok(t))

		a.clock.Advance(time.Second)
		me := a.do("GET", "/api/auth/me", nil, withCookie(old)).ok(t)
		fresh := siWantSessionCookie(t, me, false)
		if fresh.Value == old.Value {
			t.Fatal("the rotated cookie holds the old token")
		}
		if got := me.header.Get("X-Auth-Token"); got != fresh.Value {
			t.Fatalf("X-Auth-Token %q, want the new cookie's value %q", got, fresh.Value)
		}
		iat := storetest.Epoch.Add(siRotateAfter + time.Second)
		wantExp := iat.Add(siTokenTTL).Unix()
		if got := me.header.Get("X-Auth-Expires-At"); got != strconv.FormatInt(wantExp, 10) {
			t.Fatalf("X-Auth-Expires-At %q, want %d (new iat + 4h)", got, wantExp)
		}
		if got := siInt(t, me, "expiresAt"); got != wantExp {
			t.Fatalf("/me expiresAt %d, want the new token's %d", got, wantExp)
		}
		if got := me.str(t, "partyId"); got != alice.ID {
			t.Fatalf("/me partyId %s, want %s", got, alice.ID)
		}

		nj, oj := siDecodeJWT(t, fresh.Value), siDecodeJWT(t, old.Value)
		if siClaimInt(t, nj, "iat") != iat.Unix() || siClaimInt(t, nj, "exp") != wantExp {
			t.Fatalf("new token iat/exp %v/%v, want %d/%d", nj.claims["iat"], nj.claims["exp"], iat.Unix(), wantExp)
		}
		if nj.claims["sid"] != oj.claims["sid"] || nj.claims["sub"] != alice.ID || nj.claims["jti"] == oj.claims["jti"] {
			t.Fatalf("new token claims %v: want the same session and party with a new jti (old %v)", nj.claims, oj.claims)
		}

		// The new token works by either carrier, and being fresh it does not rotate again.
		siWantNoRotation(t, a.do("GET", "/api/auth/me", nil, bearer(fresh.Value)).ok(t))
		siWantNoRotation(t, a.do("GET", "/api/auth/me", nil, withCookie(fresh)).ok(t))
	})
}

func TestRotation_SupersededTokenAcceptedInsideGraceRefusedAfter(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice := a.onboard("alice")
		v := a.signIn(alice)
		old := v.sessionCookie()
		oldExp := siInt(t, v, "expiresAt")

		a.clock.Advance(siRotateAfter + time.Second)
		fresh := siWantSessionCookie(t, a.do("GET", "/api/auth/me", nil, withCookie(old)).ok(t), false)

		a.clock.Advance(siRotateGrace - time.Nanosecond)
		for name, opt := range map[string]reqOption{"cookie": withCookie(old), "bearer": bearer(old.Value)} {
			me := a.do("GET", "/api/auth/me", nil, opt).ok(t)
			siWantNoRotation(t, me) // a superseded token never rotates again
			if got := siInt(t, me, "expiresAt"); got != oldExp {
				t.Fatalf("%s: /me expiresAt %d, want the old token's own %d", name, got, oldExp)
			}
		}

		siWantNoRotation(t, a.do("GET", "/api/auth/me", nil, withCookie(fresh)).ok(t))
		a.clock.Advance(time.Nanosecond)
		a.do("GET", "/api/auth/me", nil, withCookie(old)).wantProblem(t, http.StatusUnauthorized, store.CodeTokenRotated)
		// That reuse ended the session (TestRotation_SupersededTokenAfterGraceEndsTheSession).
		a.do("GET", "/api/auth/me", nil, bearer(fresh.Value)).wantProblem(t, http.StatusUnauthorized, store.CodeTokenRevoked)
	})
}

// A superseded token presented after its grace is the sign of a stolen copy: it is
// token_rotated, and its whole session ends as a logout would end it, by either carrier.
func TestRotation_SupersededTokenAfterGraceEndsTheSession(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		for _, carrier := range []string{"cookie", "bearer"} {
			t.Run(carrier, func(t *testing.T) {
				a := newTestAPI(t, b)
				alice := a.onboard("alice")
				old := a.signIn(alice).sessionCookie()
				other := a.token(alice) // another session of the same party

				a.clock.Advance(siRotateAfter + time.Second)
				fresh := siWantSessionCookie(t, a.do("GET", "/api/auth/me", nil, withCookie(old)).ok(t), false)
				a.clock.Advance(siRotateGrace)
				stolen := bearer(old.Value)
				if carrier == "cookie" {
					stolen = withCookie(old)
				}
				a.do("GET", "/api/auth/me", nil, stolen).wantProblem(t, http.StatusUnauthorized, store.CodeTokenRotated)

				// The owner's current token, by either carrier, and the stolen one are refused
				// from now on as after a logout.
				for _, opt := range []reqOption{bearer(fresh.Value), withCookie(fresh), bearer(old.Value), withCookie(old)} {
					a.do("GET", "/api/auth/me", nil, opt).wantProblem(t, http.StatusUnauthorized, store.CodeTokenRevoked)
				}
				a.do("POST", "/api/auth/logout", nil, bearer(fresh.Value)).wantProblem(t, http.StatusUnauthorized, store.CodeTokenRevoked)
				// Other sessions of the party are not touched.
				a.do("GET", "/api/auth/me", nil, bearer(other)).ok(t)
			})
		}
	})
}

func TestRotation_BearerOnlyTokenNeverRotated(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice := a.onboard("alice")
		tok := a.token(alice)

		for _, at := range []time.Duration{siRotateAfter + time.Second, siRotateAfter + siRotateGrace + time.Minute, siTokenTTL - time.Nanosecond} {
			a.clock.Set(storetest.Epoch.Add(at))
			me := a.do("GET", "/api/auth/me", nil, bearer(tok)).ok(t)
			siWantNoRotation(t, me)
			if got, want := siInt(t, me, "expiresAt"), storetest.Epoch.Add(siTokenTTL).Unix(); got != want {
				t.Fatalf("at +%s: /me expiresAt %d, want %d", at, got, want)
			}
		}
		a.clock.Set(storetest.Epoch.Add(siTokenTTL))
		a.do("GET", "/api/auth/me", nil, bearer(tok)).wantProblem(t, http.StatusUnauthorized, store.CodeInvalidToken)
	})
}

func TestLogout_RefusesEveryTokenOfTheSession(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		cases := []struct {
			name   string
			with   string // which token logs out: "current" or "superseded"
			cookie bool   // carried by the cookie rather than Bearer
		}{
			{"current by bearer", "current", false},
			{"current by cookie", "current", true},
			{"superseded by bearer", "superseded", false},
			{"superseded by cookie", "superseded", true},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				a := newTestAPI(t, b)
				alice := a.onboard("alice")
				old := a.signIn(alice).sessionCookie()
				other := a.token(alice) // another session of the same party

				a.clock.Advance(siRotateAfter + time.Second)
				cur := siWantSessionCookie(t, a.do("GET", "/api/auth/me", nil, withCookie(old)).ok(t), false)
				a.clock.Advance(time.Minute) // the old token is inside its grace
				a.do("GET", "/api/auth/me", nil, bearer(old.Value)).ok(t)

				by := cur
				if tc.with == "superseded" {
					by = old
				}
				opt := bearer(by.Value)
				if tc.cookie {
					opt = withCookie(by)
				}
				res := a.do("POST", "/api/auth/logout", nil, opt)
				if res.status != http.StatusNoContent {
					t.Fatalf("logout: status %d, want 204: %s", res.status, res.body)
				}
				siWantClearedCookie(t, res)

				for _, c := range []*http.Cookie{old, cur} {
					a.do("GET", "/api/auth/me", nil, bearer(c.Value)).wantProblem(t, http.StatusUnauthorized, store.CodeTokenRevoked)
					a.do("GET", "/api/auth/me", nil, withCookie(c)).wantProblem(t, http.StatusUnauthorized, store.CodeTokenRevoked)
					a.do("POST", "/api/auth/logout", nil, bearer(c.Value)).wantProblem(t, http.StatusUnauthorized, store.CodeTokenRevoked)
				}
				// Revocation outlives the grace: it is not a rotation.
				a.clock.Advance(siRotateGrace)
				a.do("GET", "/api/auth/me", nil, bearer(cur.Value)).wantProblem(t, http.StatusUnauthorized, store.CodeTokenRevoked)

				if got := a.do("GET", "/api/auth/me", nil, bearer(other)).ok(t).str(t, "partyId"); got != alice.ID {
					t.Fatalf("the other session's /me = %s, want %s", got, alice.ID)
				}
			})
		}
	})
}

func TestAuth_QueryOrBodyNamingAnotherPartyIs403(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice, bob := a.onboard("alice"), a.onboard("bob")
		v := a.signIn(alice)
		tok, cookie := v.str(t, "token"), v.sessionCookie()

		for _, path := range []string{
			"/api/auth/me?taker=" + bob.ID,
			"/api/auth/me?lp=" + bob.ID,
			"/api/auth/me?taker=" + alice.ID + "&taker=" + bob.ID,
			"/api/auth/me?lp=" + alice.ID + "&taker=" + bob.ID,
			"/api/auth/sessions?taker=" + bob.ID,
			"/api/auth/sessions?lp=" + bob.ID,
		} {
			a.do("GET", path, nil, bearer(tok)).wantProblem(t, http.StatusForbidden, store.CodePartyMismatch)
		}
		a.do("GET", "/api/auth/me?taker="+alice.ID+"&lp="+alice.ID, nil, bearer(tok)).ok(t)

		// Refused before any work: a due cookie is not rotated by a refused request.
		a.clock.Advance(siRotateAfter + time.Second)
		res := a.do("GET", "/api/auth/me?taker="+bob.ID, nil, withCookie(cookie))
		res.wantProblem(t, http.StatusForbidden, store.CodePartyMismatch)
		siWantNoRotation(t, res)

		for _, field := range []string{"partyId", "sender", "owner", "taker", "lp"} {
			a.do("POST", "/api/auth/logout", map[string]string{field: bob.ID}, bearer(tok)).
				wantProblem(t, http.StatusForbidden, store.CodePartyMismatch)
			a.do("GET", "/api/auth/me", nil, bearer(tok)).ok(t) // the logout did not happen
		}
		if res := a.do("POST", "/api/auth/logout", nil, bearer(tok)); res.status != http.StatusNoContent {
			t.Fatalf("logout: status %d, want 204: %s", res.status, res.body)
		}
		a.do("GET", "/api/auth/me", nil, bearer(tok)).wantProblem(t, http.StatusUnauthorized, store.CodeTokenRevoked)
	})
}

// The path check, tested here on [checkNamedParties] itself (the function every route runs)
// with an identity the store authenticated; the routes with a party in their path, such as
// /api/wallet/balance/{partyId}, are tested over HTTP by
// [TestWallet_ReadsNamingAnotherPartyAre403PartyMismatch].
func TestAuth_PathNamingAnotherPartyIs403(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice, bob := a.onboard("alice"), a.onboard("bob")
		auth, err := a.store.Authenticate(context.Background(), a.token(alice))
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			party string
			want  store.Code
		}{{bob.ID, store.CodePartyMismatch}, {alice.ID, ""}} {
			r := httptest.NewRequest("GET", "/api/holdings/"+tc.party, nil)
			r.SetPathValue("partyId", tc.party)
			err := checkNamedParties(r, auth)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("path naming the token's own party: %v", err)
			case tc.want != "" && (store.ErrorCode(err) != tc.want || statusOf(store.ErrorCode(err)) != http.StatusForbidden):
				t.Fatalf("path naming another party: %v, want 403 %s", err, tc.want)
			}
		}
	})
}

func TestAuth_CrossOriginCookieWriteIs403(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b, func(sc *store.Config, rc *Config) {
			rc.AllowedOrigins = []string{"https://shop.example", "https://proxy.example:8443"}
		})
		alice := a.onboard("alice")

		refused := []struct {
			name string
			opts []reqOption
		}{
			{"foreign Origin", []reqOption{withHeader("Origin", "https://evil.example")}},
			{"public URL on another port", []reqOption{withHeader("Origin", "http://localhost:9090")}},
			{"public URL over https", []reqOption{withHeader("Origin", "https://localhost:8080")}},
			{"opaque Origin", []reqOption{withHeader("Origin", "null")}},
			{"foreign Origin claiming same-origin", []reqOption{withHeader("Origin", "https://evil.example"), withHeader("Sec-Fetch-Site", "same-origin")}},
			{"cross-site without Origin", []reqOption{withHeader("Sec-Fetch-Site", "cross-site")}},
		}
		for _, tc := range refused {
			t.Run("refused/"+tc.name, func(t *testing.T) {
				c := a.signIn(alice).sessionCookie()
				a.do("POST", "/api/auth/logout", nil, append(tc.opts, withCookie(c))...).
					wantProblem(t, http.StatusForbidden, store.CodeCrossOrigin)
				a.do("GET", "/api/auth/me", nil, withCookie(c)).ok(t) // the logout did not happen
			})
		}

		passed := []struct {
			name   string
			bearer bool
			opts   []reqOption
		}{
			{"public URL's origin", false, []reqOption{withHeader("Origin", siPublicURL)}},
			{"public URL's origin in capitals", false, []reqOption{withHeader("Origin", "HTTP://LOCALHOST:8080")}},
			{"allowed origin", false, []reqOption{withHeader("Origin", "https://shop.example")}},
			{"allowed origin with port", false, []reqOption{withHeader("Origin", "https://proxy.example:8443")}},
			{"same-site fetch without Origin", false, []reqOption{withHeader("Sec-Fetch-Site", "same-origin")}},
			{"neither header", false, nil},
			{"bearer with foreign Origin", true, []reqOption{withHeader("Origin", "https://evil.example"), withHeader("Sec-Fetch-Site", "cross-site")}},
		}
		for _, tc := range passed {
			t.Run("passed/"+tc.name, func(t *testing.T) {
				v := a.signIn(alice)
				c := v.sessionCookie()
				auth := withCookie(c)
				if tc.bearer {
					auth = bearer(v.str(t, "token"))
				}
				res := a.do("POST", "/api/auth/logout", nil, append(tc.opts, auth)...)
				if res.status != http.StatusNoContent {
					t.Fatalf("logout: status %d, want 204: %s", res.status, res.body)
				}
				a.do("GET", "/api/auth/me", nil, withCookie(c)).wantProblem(t, http.StatusUnauthorized, store.CodeTokenRevoked)
			})
		}

		// Reads are not writes: a cookie GET from another site is answered.
		c := a.signIn(alice).sessionCookie()
		a.do("GET", "/api/auth/me", nil, withCookie(c), withHeader("Origin", "https://evil.example"), withHeader("Sec-Fetch-Site", "cross-site")).ok(t)
	})
}

func TestAuth_InvalidBearerDoesNotFallBackToCookie(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice, bob := a.onboard("alice"), a.onboard("bob")
		v := a.signIn(alice)
		c, tok := v.sessionCookie(), v.str(t, "token")
		parts := strings.Split(tok, ".")

		for name, header := range map[string]string{
			"garbage":                    "Bearer garbage",
			"tampered":                   "Bearer " + parts[0] + "." + parts[1] + "." + siFlip(parts[2], 10),
			"empty":                      "Bearer ",
			"other scheme":               "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:secret")),
			"no scheme":                  tok,
			"token under another scheme": "Token " + tok,
		} {
			t.Run(name, func(t *testing.T) {
				res := a.do("GET", "/api/auth/me", nil, withCookie(c), withHeader("Authorization", header))
				if res.status != http.StatusUnauthorized {
					t.Fatalf("status %d, want 401 (no fall-back to the cookie): %s", res.status, res.body)
				}
				res.wantProblem(t, http.StatusUnauthorized, store.CodeInvalidToken)
				siWantBearerChallenge(t, res)
			})
		}

		// A valid Bearer wins over a valid cookie of another party.
		if got := a.do("GET", "/api/auth/me", nil, withCookie(c), bearer(a.token(bob))).ok(t).str(t, "partyId"); got != bob.ID {
			t.Fatalf("/me = %s, want the Bearer's party %s", got, bob.ID)
		}
	})
}

func TestAuth_NoTokenIs401WithWWWAuthenticate(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		for _, tc := range []struct {
			method, path string
			opts         []reqOption
		}{
			{"GET", "/api/auth/me", nil},
			{"GET", "/api/auth/sessions", nil},
			{"POST", "/api/auth/logout", nil},
			{"GET", "/api/auth/me", []reqOption{withCookie(&http.Cookie{Name: cookieName, Value: ""})}},
			{"GET", "/api/auth/me", []reqOption{withCookie(&http.Cookie{Name: "other_cookie", Value: "x"})}},
		} {
			res := a.do(tc.method, tc.path, nil, tc.opts...)
			res.wantProblem(t, http.StatusUnauthorized, store.CodeUnauthenticated)
			siWantBearerChallenge(t, res)
		}
	})
}

func TestNonce_ChallengeTextIsTheDocumentedLayout(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		for _, statement := range []string{"", "Sign in to the market"} {
			t.Run("statement="+strconv.Quote(statement), func(t *testing.T) {
				a := newTestAPI(t, b, func(sc *store.Config, rc *Config) { sc.Statement = statement })
				alice := a.onboard("alice")
				a.clock.Advance(90 * time.Second)
				msg, nonce := a.challenge(alice)

				if strings.HasSuffix(msg, "\n") || strings.Contains(msg, "\r") {
					t.Fatalf("message has a trailing newline or a CR: %q", msg)
				}
				if !regexp.MustCompile(`^[A-Za-z0-9]{32}$`).MatchString(nonce) {
					t.Fatalf("nonce %q is not 32 of [A-Za-z0-9]", nonce)
				}
				issued := storetest.Epoch.Add(90 * time.Second)
				want := []string{
					"localhost:8080 wants you to sign in with your ledger party:",
					alice.ID,
					"",
				}
				if statement != "" {
					want = append(want, statement, "")
				}
				want = append(want,
					"URI: "+siPublicURL,
					"Version: 1",
					"Network: devnet",
					"Nonce: "+nonce,
					"Issued At: "+issued.Format(time.RFC3339),
					"Expiration Time: "+issued.Add(siChallengeTTL).Format(time.RFC3339),
				)
				got := strings.Split(msg, "\n")
				if len(got) != len(want) {
					t.Fatalf("message has %d lines, want %d:\n%s", len(got), len(want), msg)
				}
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("line %d = %q, want %q\nmessage:\n%s", i+1, got[i], want[i], msg)
					}
				}
				// The times are RFC 3339 UTC with a Z, 10 minutes apart.
				iat, err1 := time.Parse(time.RFC3339, siChallengeField(t, msg, "Issued At: "))
				exp, err2 := time.Parse(time.RFC3339, siChallengeField(t, msg, "Expiration Time: "))
				if err1 != nil || err2 != nil || exp.Sub(iat) != siChallengeTTL || !strings.HasSuffix(got[len(got)-1], "Z") {
					t.Fatalf("challenge times %v %v %v", iat, exp, siFirstErr(err1, err2))
				}

				_, again := a.challenge(alice)
				if again == nonce {
					t.Fatal("two challenges share a nonce")
				}
				siVerify(a, alice.ID, nonce, alice.SignBase64([]byte(msg))).ok(t)
			})
		}
	})
}

func TestJWKS_ListsTheKeyThatVerifiesTokens(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice := a.onboard("alice")
		v := a.signIn(alice)
		tok := v.str(t, "token")
		j := siDecodeJWT(t, tok)

		if j.header["alg"] != "EdDSA" {
			t.Fatalf("token alg %v, want EdDSA", j.header["alg"])
		}
		kid, _ := j.header["kid"].(string)
		if kid == "" {
			t.Fatalf("token header %v has no kid", j.header)
		}
		var found bool
		for _, k := range siJWKS(t, a) {
			if k.KID != kid {
				continue
			}
			found = true
			if k.KTY != "OKP" || k.CRV != "Ed25519" {
				t.Fatalf("key %s is %s/%s, want OKP/Ed25519", kid, k.KTY, k.CRV)
			}
			pub, err := base64.RawURLEncoding.DecodeString(k.X)
			if err != nil || len(pub) != ed25519.PublicKeySize {
				t.Fatalf("key %s x = %q: %v", kid, k.X, err)
			}
			if !ed25519.Verify(pub, []byte(j.signingInput), j.sig) {
				t.Fatal("the token's signature does not verify with the JWKS key of its kid")
			}
		}
		if !found {
			t.Fatalf("JWKS has no key %s", kid)
		}

		iat, exp := siClaimInt(t, j, "iat"), siClaimInt(t, j, "exp")
		switch {
		case j.claims["iss"] != siPublicURL:
			t.Fatalf("iss %v, want %s", j.claims["iss"], siPublicURL)
		case j.claims["sub"] != alice.ID:
			t.Fatalf("sub %v, want %s", j.claims["sub"], alice.ID)
		case iat != storetest.Epoch.Unix() || exp != iat+int64(siTokenTTL/time.Second):
			t.Fatalf("iat %d exp %d, want %d and +4h", iat, exp, storetest.Epoch.Unix())
		case exp != siInt(t, v, "expiresAt"):
			t.Fatalf("exp %d, verify's expiresAt %d", exp, siInt(t, v, "expiresAt"))
		}
		for _, c := range []string{"jti", "sid"} {
			if s, _ := j.claims[c].(string); s == "" {
				t.Fatalf("claim %s missing or empty in %v", c, j.claims)
			}
		}
		if other := siDecodeJWT(t, a.token(alice)); other.claims["sid"] == j.claims["sid"] || other.claims["jti"] == j.claims["jti"] {
			t.Fatalf("two sign-ins share a session or token id: %v %v", j.claims, other.claims)
		}
	})
}

func TestToken_SurvivesRestart(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		dsn := b.DSN(t)
		clock := storetest.NewClock(storetest.Epoch)
		first, stop := siOpenAPI(t, dsn, clock)
		alice := first.onboard("alice")
		tok := first.token(alice)
		v := first.signIn(alice)
		old := v.sessionCookie()
		revoked := first.token(alice)
		first.do("POST", "/api/auth/logout", nil, bearer(revoked)).ok(t)
		kid := siDecodeJWT(t, tok).header["kid"]
		clock.Advance(siRotateAfter + time.Second)
		fresh := siWantSessionCookie(t, first.do("GET", "/api/auth/me", nil, withCookie(old)).ok(t), false)
		stop()

		second, _ := siOpenAPI(t, dsn, clock)
		if got := second.do("GET", "/api/auth/me", nil, bearer(tok)).ok(t).str(t, "partyId"); got != alice.ID {
			t.Fatalf("after restart /me = %s, want %s", got, alice.ID)
		}
		second.do("GET", "/api/auth/me", nil, bearer(revoked)).wantProblem(t, http.StatusUnauthorized, store.CodeTokenRevoked)
		second.do("GET", "/api/auth/me", nil, bearer(fresh.Value)).ok(t)
		second.do("GET", "/api/auth/me", nil, bearer(old.Value)).ok(t) // still inside its grace
		clock.Advance(siRotateGrace)
		second.do("GET", "/api/auth/me", nil, bearer(old.Value)).wantProblem(t, http.StatusUnauthorized, store.CodeTokenRotated)

		// The signing key was kept, not made anew.
		if got := siDecodeJWT(t, second.token(alice)).header["kid"]; got != kid {
			t.Fatalf("after restart tokens carry kid %v, before %v", got, kid)
		}
		keys := siJWKS(t, second)
		if len(keys) != 1 || keys[0].KID != kid {
			t.Fatalf("after restart JWKS = %+v, want the one key %v", keys, kid)
		}
	})
}

// --- helpers ---

func siVerify(a *testAPI, partyID, nonce, sig string) *testResponse {
	a.t.Helper()
	return a.do("POST", "/api/auth/verify", map[string]string{"partyId": partyID, "nonce": nonce, "signature": sig})
}

// siChallengeField returns the value of the challenge line that starts with prefix.
func siChallengeField(t testing.TB, msg, prefix string) string {
	t.Helper()
	for line := range strings.SplitSeq(msg, "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			return v
		}
	}
	t.Fatalf("no %q line in challenge:\n%s", prefix, msg)
	return ""
}

func siInt(t testing.TB, r *testResponse, field string) int64 {
	t.Helper()
	f, ok := r.obj(t)[field].(float64)
	if !ok || f != float64(int64(f)) {
		t.Fatalf("no integer %q in %s", field, r.body)
	}
	return int64(f)
}

// siJWT is a token taken apart.
type siJWT struct {
	header, claims map[string]any
	signingInput   string
	sig            []byte
}

func siDecodeJWT(t testing.TB, tok string) siJWT {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q is not three segments", tok)
	}
	j := siJWT{signingInput: parts[0] + "." + parts[1]}
	for i, dst := range []*map[string]any{&j.header, &j.claims} {
		raw, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatalf("token segment %d: %v", i, err)
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			t.Fatalf("token segment %d: %v: %s", i, err, raw)
		}
	}
	var err error
	if j.sig, err = base64.RawURLEncoding.DecodeString(parts[2]); err != nil {
		t.Fatalf("token signature: %v", err)
	}
	return j
}

func siClaimInt(t testing.TB, j siJWT, name string) int64 {
	t.Helper()
	f, ok := j.claims[name].(float64)
	if !ok {
		t.Fatalf("claim %s missing or not a number in %v", name, j.claims)
	}
	return int64(f)
}

func siSegment(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func siSignJWT(t testing.TB, header, claims map[string]any, key ed25519.PrivateKey) string {
	t.Helper()
	input := siSegment(t, header) + "." + siSegment(t, claims)
	return input + "." + base64.RawURLEncoding.EncodeToString(ed25519.Sign(key, []byte(input)))
}

// siFlip replaces the base64url character at i with another one. A character in the middle
// of a segment carries only significant bits, so the decoded bytes change.
func siFlip(s string, i int) string {
	c := byte('A')
	if s[i] == 'A' {
		c = 'B'
	}
	return s[:i] + string(c) + s[i+1:]
}

func siJWKS(t testing.TB, a *testAPI) []store.JWK {
	t.Helper()
	res := a.do("GET", "/.well-known/jwks.json", nil).ok(t)
	var doc struct {
		Keys []store.JWK `json:"keys"`
	}
	if err := json.Unmarshal(res.body, &doc); err != nil {
		t.Fatalf("jwks: %v: %s", err, res.body)
	}
	return doc.Keys
}

// siWantSessionCookie returns the ledger_session cookie r set, checking its attributes.
func siWantSessionCookie(t testing.TB, r *testResponse, secure bool) *http.Cookie {
	t.Helper()
	var c *http.Cookie
	for _, x := range r.cookie {
		if x.Name == cookieName {
			if c != nil {
				t.Fatalf("two ledger_session cookies set: %v", r.header.Values("Set-Cookie"))
			}
			c = x
		}
	}
	switch {
	case c == nil:
		t.Fatalf("no ledger_session cookie set (Set-Cookie: %v)", r.header.Values("Set-Cookie"))
	case c.Value == "":
		t.Fatal("ledger_session cookie is empty")
	case !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure != secure:
		t.Fatalf("ledger_session cookie %q: want HttpOnly, SameSite=Lax, Path=/, Secure=%v", c.Raw, secure)
	case c.MaxAge < 0 || (!c.Expires.IsZero() && !c.Expires.After(storetest.Epoch)):
		t.Fatalf("ledger_session cookie %q is already expired", c.Raw)
	}
	return c
}

// siWantClearedCookie checks that r deleted the ledger_session cookie.
func siWantClearedCookie(t testing.TB, r *testResponse) {
	t.Helper()
	c := r.sessionCookie()
	if c == nil {
		t.Fatalf("the session cookie was not cleared (Set-Cookie: %v)", r.header.Values("Set-Cookie"))
	}
	expired := c.MaxAge < 0 || (!c.Expires.IsZero() && c.Expires.Before(time.Now()))
	if !expired || c.Value != "" || c.Path != "/" {
		t.Fatalf("ledger_session cookie %q: want an empty value, Path=/ and Max-Age<=0 or a past Expires", c.Raw)
	}
}

// siWantNoRotation checks that r carries no new token.
func siWantNoRotation(t testing.TB, r *testResponse) {
	t.Helper()
	if c := r.sessionCookie(); c != nil {
		t.Fatalf("unexpected Set-Cookie %q", c.Raw)
	}
	for _, h := range []string{"X-Auth-Token", "X-Auth-Expires-At"} {
		if v := r.header.Get(h); v != "" {
			t.Fatalf("unexpected %s: %s", h, v)
		}
	}
}

func siWantBearerChallenge(t testing.TB, r *testResponse) {
	t.Helper()
	if h := r.header.Get("WWW-Authenticate"); h != "Bearer" && !strings.HasPrefix(h, "Bearer ") {
		t.Fatalf("WWW-Authenticate %q, want a Bearer challenge", h)
	}
}

func siFirstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// siOpenAPI serves the API over the store at dsn, as newTestAPI does, so two servers can
// share one database in turn. stop shuts it down; it also runs when the test ends.
func siOpenAPI(t *testing.T, dsn string, clock *storetest.Clock) (*testAPI, func()) {
	t.Helper()
	sc := storetest.Config(clock)
	sc.DB = dsn
	s, err := store.Open(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var hs *httptest.Server
	stop := func() {
		once.Do(func() {
			if hs != nil {
				hs.Close()
			}
			s.Close()
		})
	}
	t.Cleanup(stop)
	if _, err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv, err := New(s, Config{PublicURL: sc.PublicURL, Dev: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	hs = httptest.NewServer(srv)
	return &testAPI{t: t, clock: clock, store: s, srv: srv, http: hs}, stop
}
