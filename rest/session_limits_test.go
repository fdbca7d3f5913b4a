package rest

import (
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx": the test reads the store's tables itself

	"marketd/store"
	"marketd/store/storetest"
)

// rawDB is a connection of the test's own to the API's database, to read what the store's
// operations do not show.
func rawDB(t *testing.T, s *store.Store) *sql.DB {
	t.Helper()
	driver, dsn := "pgx", s.Config().DB
	if s.Dialect() == store.SQLite {
		driver, dsn = "sqlite", "file:"+strings.TrimPrefix(dsn, "sqlite://")+"?_pragma=query_only(1)&_pragma=busy_timeout(5000)"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func countRows(t *testing.T, db *sql.DB, table string) int {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// randomNonce is 32 characters of [A-Za-z0-9]: a nonce's shape, which this service never issued.
func randomNonce(t *testing.T) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 32)
	for i := range b {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			t.Fatal(err)
		}
		b[i] = alphabet[n.Int64()]
	}
	return string(b)
}

func withSignInExecuteRates(signin, execute int) apiOption {
	return func(_ *store.Config, rc *Config) { rc.RateSignIn, rc.RateExecute = signin, execute }
}

// A cookie session renews its token every half hour, but the session itself ends 24 hours
// (MARKETD_SESSION_MAX's default) after its sign-in: no rotated token's exp passes that end,
// and at it every token of the session is refused.
func TestSession_EndsAtSessionMaxDespiteRotations(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice := a.onboard("alice")
		cookie := a.signIn(alice).sessionCookie()
		end := storetest.Epoch.Add(24 * time.Hour)
		rotations := 0
		for {
			a.clock.Advance(siRotateAfter + time.Second)
			if !a.clock.Now().Before(end) {
				break
			}
			me := a.do("GET", "/api/auth/me", nil, withCookie(cookie)).ok(t)
			if fresh := me.sessionCookie(); fresh != nil {
				rotations++
				cookie = fresh
				exp, err := strconv.ParseInt(me.header.Get("X-Auth-Expires-At"), 10, 64)
				if err != nil || exp > end.Unix() {
					t.Fatalf("rotation %d at %s: X-Auth-Expires-At %q passes the session's end %d", rotations, a.clock.Now(), me.header.Get("X-Auth-Expires-At"), end.Unix())
				}
				if got := siClaimInt(t, siDecodeJWT(t, cookie.Value), "exp"); got != exp {
					t.Fatalf("token exp %d, X-Auth-Expires-At %d", got, exp)
				}
			}
		}
		if rotations < 40 {
			t.Fatalf("only %d rotations in a day", rotations)
		}
		a.clock.Set(end.Add(-time.Nanosecond))
		a.do("GET", "/api/auth/me", nil, bearer(cookie.Value)).ok(t)
		a.clock.Set(end)
		a.do("GET", "/api/auth/me", nil, withCookie(cookie)).wantProblem(t, http.StatusUnauthorized, store.CodeInvalidToken)
		a.do("GET", "/api/auth/me", nil, bearer(cookie.Value)).wantProblem(t, http.StatusUnauthorized, store.CodeInvalidToken)
		// A new sign-in opens a new session with a new day.
		a.do("GET", "/api/auth/me", nil, bearer(a.token(alice))).ok(t)
	})
}

// A shorter MARKETD_SESSION_MAX cuts the first token's lifetime too.
func TestSession_ShortSessionMaxBoundsTheFirstToken(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b, func(sc *store.Config, _ *Config) { sc.SessionMax = time.Hour })
		alice := a.onboard("alice")
		v := a.signIn(alice)
		if got, want := siInt(t, v, "expiresAt"), storetest.Epoch.Add(time.Hour).Unix(); got != want {
			t.Fatalf("expiresAt %d, want the session's end %d", got, want)
		}
		a.clock.Advance(siRotateAfter + time.Second)
		me := a.do("GET", "/api/auth/me", nil, withCookie(v.sessionCookie())).ok(t)
		if got, want := me.header.Get("X-Auth-Expires-At"), strconv.FormatInt(storetest.Epoch.Add(time.Hour).Unix(), 10); got != want {
			t.Fatalf("rotated X-Auth-Expires-At %s, want the session's end %s", got, want)
		}
	})
}

// serviceSigningKey reads the service's token signing key out of its store, so the test can
// sign tokens the service would otherwise accept.
func serviceSigningKey(t *testing.T, s *store.Store) (string, ed25519.PrivateKey) {
	t.Helper()
	var kid string
	var seed []byte
	if err := rawDB(t, s).QueryRow("SELECT kid, secret FROM service_keys WHERE purpose = 'jwt-ed25519'").Scan(&kid, &seed); err != nil {
		t.Fatal(err)
	}
	seed, err := store.OpenSecret(s.Config().KEK, kid, "jwt-ed25519", seed) // sealed at rest
	if err != nil {
		t.Fatal(err)
	}
	return kid, ed25519.NewKeyFromSeed(seed)
}

// Tokens name their audience, the public URL's origin; a token signed with the service's own
// key for another audience, or for none, is 401 invalid_token.
func TestToken_WrongOrMissingAudienceIs401(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice := a.onboard("alice")
		tok := a.token(alice)
		j := siDecodeJWT(t, tok)
		if aud, _ := j.claims["aud"].([]any); len(aud) != 1 || aud[0] != siPublicURL {
			t.Fatalf("aud %v, want [%s] (the public URL's origin)", j.claims["aud"], siPublicURL)
		}
		kid, key := serviceSigningKey(t, a.store)
		if kid != j.header["kid"] {
			t.Fatalf("the stored key is %s, the token's %v", kid, j.header["kid"])
		}
		header := map[string]any{"alg": "EdDSA", "typ": "JWT", "kid": kid}
		with := func(aud any) string {
			claims := map[string]any{}
			for k, v := range j.claims {
				claims[k] = v
			}
			if aud == nil {
				delete(claims, "aud")
			} else {
				claims["aud"] = aud
			}
			return siSignJWT(t, header, claims, key)
		}
		// The same claims signed again are accepted: the refusals below are the audience's.
		a.do("GET", "/api/auth/me", nil, bearer(with(j.claims["aud"]))).ok(t)
		a.do("GET", "/api/auth/me", nil, bearer(with(siPublicURL))).ok(t)
		for name, aud := range map[string]any{
			"missing":       nil,
			"another":       "https://elsewhere.example",
			"another array": []string{"https://elsewhere.example"},
			"empty":         "",
			"with a path":   siPublicURL + "/api",
		} {
			t.Run(name, func(t *testing.T) {
				bad := with(aud)
				a.do("GET", "/api/auth/me", nil, bearer(bad)).wantProblem(t, http.StatusUnauthorized, store.CodeInvalidToken)
				a.do("GET", "/api/auth/me", nil, withCookie(&http.Cookie{Name: cookieName, Value: bad})).wantProblem(t, http.StatusUnauthorized, store.CodeInvalidToken)
			})
		}
	})
}

// 400 verifies from one address naming nonces the service never issued, with a bad signature:
// each is 401 nonce_invalid until the sign-in limit, then 429 with Retry-After and the
// RateLimit headers; not one writes a spent-nonce row.
func TestVerify_ForgedNonceFloodIsLimitedAndWritesNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b, withSignInExecuteRates(DefaultRateSignIn, 0))
		alice := a.onboard("alice") // from 127.0.0.1: its sign-in budget is not the flood's
		db := rawDB(t, a.store)
		flood := fromPeer("127.0.0.2")
		sig := base64.StdEncoding.EncodeToString(make([]byte, ed25519.SignatureSize))
		limited := 0
		for i := range 400 {
			r := a.do("POST", "/api/auth/verify", map[string]string{"partyId": alice.ID, "nonce": randomNonce(t), "signature": sig}, flood)
			if i < DefaultRateSignIn {
				r.wantProblem(t, http.StatusUnauthorized, store.CodeNonceInvalid)
				wantRateHeaders(t, r.header, DefaultRateSignIn, DefaultRateSignIn-1-i, 60)
				continue
			}
			wantRateLimited(t, r, 60)
			wantRateHeaders(t, r.header, DefaultRateSignIn, 0, 60)
			limited++
		}
		if limited != 400-DefaultRateSignIn {
			t.Fatalf("%d of 400 refused 429, want %d", limited, 400-DefaultRateSignIn)
		}
		if n := countRows(t, db, "spent_nonces"); n != 0 {
			t.Fatalf("the forged verifies wrote %d spent-nonce rows, want 0", n)
		}
		// A malformed signature with a forged nonce writes nothing either.
		r := a.do("POST", "/api/auth/verify", map[string]string{"partyId": alice.ID, "nonce": randomNonce(t), "signature": "not base64!"})
		r.wantProblem(t, http.StatusUnauthorized, store.CodeNonceInvalid)
		if n := countRows(t, db, "spent_nonces"); n != 0 {
			t.Fatalf("%d spent-nonce rows after a forged nonce with a malformed signature, want 0", n)
		}
		// The flooded address's budget is its own: alice still signs in from hers.
		a.signIn(alice)
	})
}

// A real nonce whose challenge expired is refused without a write; a live one is spent by the
// first verify that names it, whatever its outcome.
func TestVerify_ExpiredNonceWritesNothingAndALiveOneIsSpentOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice := a.onboard("alice")
		db := rawDB(t, a.store)

		msg, nonce := a.challenge(alice)
		a.clock.Advance(siChallengeTTL)
		siVerify(a, alice.ID, nonce, alice.SignBase64([]byte(msg))).wantProblem(t, http.StatusUnauthorized, store.CodeNonceInvalid)
		siVerify(a, alice.ID, nonce, "not base64!").wantProblem(t, http.StatusUnauthorized, store.CodeNonceInvalid)
		if n := countRows(t, db, "spent_nonces"); n != 0 {
			t.Fatalf("an expired nonce wrote %d spent-nonce rows, want 0", n)
		}

		msg, nonce = a.challenge(alice)
		siVerify(a, alice.ID, nonce, "not base64!").wantProblem(t, http.StatusBadRequest, store.CodeInvalidRequest)
		siVerify(a, alice.ID, nonce, alice.SignBase64([]byte(msg))).wantProblem(t, http.StatusUnauthorized, store.CodeNonceInvalid)
		if n := countRows(t, db, "spent_nonces"); n != 1 {
			t.Fatalf("%d spent-nonce rows after a live nonce was used, want 1", n)
		}
	})
}

// Of concurrent verifies of one live nonce, exactly one signs in.
func TestVerify_ConcurrentVerifiesOfOneNonceSignInOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice := a.onboard("alice")
		db := rawDB(t, a.store)
		for round := range 3 {
			msg, nonce := a.challenge(alice)
			sig := alice.SignBase64([]byte(msg))
			const n = 8
			statuses := make([]int, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					statuses[i] = siVerifyRaw(a, alice.ID, nonce, sig)
				}()
			}
			wg.Wait()
			ok := 0
			for _, s := range statuses {
				switch s {
				case http.StatusOK:
					ok++
				case http.StatusUnauthorized:
				default:
					t.Fatalf("round %d: a verify answered %d", round, s)
				}
			}
			if ok != 1 {
				t.Fatalf("round %d: %d of %d concurrent verifies signed in, want exactly 1 (%v)", round, ok, n, statuses)
			}
			if got := countRows(t, db, "signin_sessions"); got != round+1 {
				t.Fatalf("round %d: %d sessions, want %d", round, got, round+1)
			}
		}
	})
}

// siVerifyRaw is siVerify for another goroutine: it reports the status rather than failing.
func siVerifyRaw(a *testAPI, partyID, nonce, sig string) int {
	body := `{"partyId":"` + partyID + `","nonce":"` + nonce + `","signature":"` + sig + `"}`
	res, err := a.http.Client().Post(a.http.URL+"/api/auth/verify", "application/json", strings.NewReader(body))
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// Executes count per client address: the N+1th in a minute is 429, whichever execute it is
// (intent submits included, before their token or body is looked at); another address has
// its own budget.
func TestExecuteLimit_TheNPlusFirstExecuteOfAMinuteIs429(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		const n = 3
		a := newTestAPI(t, b, withSignInExecuteRates(0, n))
		alice := a.onboard("alice") // from 127.0.0.1; the executes below come from 127.0.0.2
		tok := a.token(alice)
		limited, other := fromPeer("127.0.0.2"), fromPeer("127.0.0.3")
		tap := func(from reqOption) *testResponse {
			prep := a.do("POST", "/api/wallet/tap/prepare", map[string]string{"instrument": "CC", "amount": "1"}, from, bearer(tok)).ok(t)
			hash := prep.str(t, "preparedTransactionHash")
			raw, _ := base64.StdEncoding.DecodeString(hash)
			return a.do("POST", "/api/wallet/tap/execute", map[string]string{"preparedTransactionHash": hash, "signature": alice.SignBase64(raw)}, from, bearer(tok))
		}
		for i := range n {
			wantRateHeaders(t, tap(limited).ok(t).header, n, n-1-i, 60)
		}
		a.clock.Advance(15 * time.Second)
		wantRateLimited(t, tap(limited), 45)
		wantRateLimited(t, a.do("POST", "/api/swap/intent/submit", map[string]string{}, limited), 45)
		wantRateLimited(t, a.do("POST", "/api/parties/onboard/execute", map[string]string{}, limited), 45)

		wantRateHeaders(t, tap(other).ok(t).header, n, n-1, 60)
		a.do("POST", "/api/swap/intent/submit", map[string]string{}, other).wantProblem(t, http.StatusUnauthorized, store.CodeUnauthenticated)

		a.clock.Advance(45 * time.Second) // the first address's window ends
		tap(limited).ok(t)
	})
}

// Onboarding is sign-in: its prepare and execute spend the address's sign-in budget with
// nonce and verify.
func TestSignInLimit_OnboardingCountsUnderSignIn(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b, withSignInExecuteRates(4, 0))
		k := newTestKey()
		prep := a.do("POST", "/api/parties/onboard/prepare", k.onboardBody("alice")).ok(t)
		wantRateHeaders(t, prep.header, 4, 3, 60)
		hash := prep.str(t, "preparedTransactionHash")
		exec := a.executeOnboarding(hash, k.signHash(t, hash)).ok(t)
		wantRateHeaders(t, exec.header, 4, 2, 60)
		alice := &storetest.Party{ID: exec.str(t, "partyId"), Key: k.Key}
		msg, nonce := a.challenge(alice)
		v := siVerify(a, alice.ID, nonce, alice.SignBase64([]byte(msg))).ok(t)
		wantRateHeaders(t, v.header, 4, 0, 60)
		wantRateLimited(t, a.do("POST", "/api/auth/nonce", map[string]string{"partyId": alice.ID}), 60)
		wantRateLimited(t, a.do("POST", "/api/parties/onboard/prepare", newTestKey().onboardBody("bob")), 60)
		// Reads and the signed-in party's own calls are not sign-in.
		a.do("GET", "/api/auth/me", nil, bearer(v.str(t, "token"))).ok(t)
	})
}

// Under the service's default limits, honest wallets never meet them: ten wallets behind one
// address (a NAT) each onboard and sign in within the same minute, then each makes a burst of
// taps, and one of them signs in again from a second tab and makes a longer burst.
func TestLimits_HonestWalletsBehindOneAddressStayUnderTheDefaults(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b, withRates(300, 60), withSignInExecuteRates(DefaultRateSignIn, DefaultRateExecute))
		check := func(r *testResponse) *testResponse {
			t.Helper()
			r.ok(t)
			if rem := r.header.Get("RateLimit-Remaining"); rem != "" {
				if n, err := strconv.Atoi(rem); err != nil || n < 1 {
					t.Fatalf("RateLimit-Remaining %q: an honest wallet is at its limit", rem)
				}
			}
			return r
		}
		tapBurst := func(p *storetest.Party, tok string, n int) {
			for range n {
				prep := check(a.do("POST", "/api/wallet/tap/prepare", map[string]string{"instrument": "CC", "amount": "1"}, bearer(tok)))
				hash := prep.str(t, "preparedTransactionHash")
				raw, _ := base64.StdEncoding.DecodeString(hash)
				check(a.do("POST", "/api/wallet/tap/execute", map[string]string{"preparedTransactionHash": hash, "signature": p.SignBase64(raw)}, bearer(tok)))
			}
		}
		type wallet struct {
			p   *storetest.Party
			tok string
		}
		var wallets []wallet
		for i := range 10 {
			k := newTestKey()
			prep := check(a.do("POST", "/api/parties/onboard/prepare", k.onboardBody("w"+strconv.Itoa(i))))
			hash := prep.str(t, "preparedTransactionHash")
			p := &storetest.Party{ID: check(a.executeOnboarding(hash, k.signHash(t, hash))).str(t, "partyId"), Key: k.Key}
			msg, nonce := a.challenge(p)
			v := check(siVerify(a, p.ID, nonce, p.SignBase64([]byte(msg))))
			wallets = append(wallets, wallet{p, v.str(t, "token")})
			a.clock.Advance(time.Second)
		}
		for _, w := range wallets {
			tapBurst(w.p, w.tok, 10)
			check(a.do("GET", "/api/wallet/balance/"+w.p.ID, nil, bearer(w.tok)))
		}
		a.clock.Advance(time.Minute)
		first := wallets[0]
		msg, nonce := a.challenge(first.p)
		tab := check(siVerify(a, first.p.ID, nonce, first.p.SignBase64([]byte(msg)))).str(t, "token")
		tapBurst(first.p, tab, 50)
	})
}
