package web_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"marketd/rest"
	"marketd/store"
	"marketd/store/admin"
	"marketd/store/storetest"
	"marketd/web"
)

func TestConsole_EveryPageWithoutSessionRedirectsToLogin(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		e := newConsoleEnv(t, b)
		c := e.client()
		for _, path := range []string{"/admin/", "/admin/sessions", "/admin/listings", "/admin/ratelimits", "/admin/ledger", "/admin/audit", "/admin/users", "/admin/parties/x", "/admin/nothing"} {
			if p := c.get(path); !toLogin(p) {
				t.Errorf("GET %s without a session: %d %q, want a redirect to the login page", path, p.status, p.location)
			}
		}
		if p := c.get("/admin/sessions?party=a"); p.location != "/admin/login?next=%2Fadmin%2Fsessions%3Fparty%3Da" {
			t.Errorf("the login redirect does not remember the page: %q", p.location)
		}
		if p := c.get("/admin/login"); p.status != http.StatusOK || !strings.Contains(p.body, `name="username"`) || !strings.Contains(p.body, `name="password"`) {
			t.Errorf("login page: %d", p.status)
		}
	})
}

func TestLogin_WrongPasswordIsRefusedAndOpensNoSession(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		e := newConsoleEnv(t, b)
		e.user("ops", admin.RoleOperator)
		c := e.client()
		for _, tc := range []struct{ name, user, pw string }{
			{"wrong password", "ops", "not the password at all"},
			{"unknown user", "nobody", testPassword},
			{"case of the password", "ops", strings.ToUpper(testPassword)},
		} {
			p := c.login(tc.user, tc.pw)
			if p.status != http.StatusUnauthorized || !strings.Contains(p.body, "Wrong user name or password") {
				t.Errorf("%s: %d, want 401 with a message", tc.name, p.status)
			}
			if p := c.get("/admin/sessions"); !toLogin(p) {
				t.Errorf("%s: a failed login opened a session", tc.name)
			}
		}
		if p := c.login("", ""); p.status != http.StatusBadRequest {
			t.Errorf("empty form: %d, want 400", p.status)
		}
		c.mustLogin("ops")
	})
}

func TestLogin_ThrottledPerUserAndPerAddress(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		e := newConsoleEnv(t, b, func(_ *rest.Config, wc *web.Config) { wc.LoginPerUser, wc.LoginPerAddr = 3, 6 })
		e.user("ops", admin.RoleOperator)
		e.user("other", admin.RoleViewer)
		c := e.client()
		for i := range 3 {
			if p := c.login("ops", "wrong password "+string(rune('a'+i))); p.status != http.StatusUnauthorized {
				t.Fatalf("attempt %d: %d", i+1, p.status)
			}
		}
		// The user is throttled: even the right password is refused for now.
		if p := c.login("ops", testPassword); p.status != http.StatusTooManyRequests || !strings.Contains(p.body, "Too many sign-in attempts") {
			t.Fatalf("4th attempt for ops: %d, want 429", p.status)
		}
		// Another user from the same address still may, until the address's budget is spent.
		c.mustLogin("other")
		c.post("/admin/logout", nil)
		if p := c.login("other", "wrong password x"); p.status != http.StatusUnauthorized {
			t.Fatalf("other, wrong: %d", p.status)
		}
		if p := c.login("other", testPassword); p.status != http.StatusTooManyRequests {
			t.Fatalf("7th attempt from the address: %d, want 429", p.status)
		}
		// The window passes: both may try again, and the right password works.
		e.clock.Advance(16 * time.Minute)
		c.mustLogin("ops")
	})
}

func TestSession_IdleTimeoutSignsOut(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		e := newConsoleEnv(t, b, func(_ *rest.Config, wc *web.Config) { wc.IdleTimeout = 30 * time.Minute })
		e.user("ops", admin.RoleOperator)
		c := e.client()
		c.mustLogin("ops")
		e.clock.Advance(29 * time.Minute)
		if p := c.get("/admin/ledger"); p.status != http.StatusOK {
			t.Fatalf("after 29 idle minutes: %d, want 200", p.status)
		}
		e.clock.Advance(29 * time.Minute) // 58 minutes since sign-in, 29 since the last request
		if p := c.get("/admin/ledger"); p.status != http.StatusOK {
			t.Fatalf("each request restarts the idle timer: %d, want 200", p.status)
		}
		e.clock.Advance(30 * time.Minute)
		if p := c.get("/admin/ledger"); !toLogin(p) {
			t.Fatalf("after 30 idle minutes: %d, want a redirect to login", p.status)
		}
		if p := c.get("/admin/login"); !strings.Contains(p.body, "idle too long") {
			t.Errorf("the login page does not say why")
		}
		if p := c.get("/admin/ledger"); !toLogin(p) {
			t.Fatalf("the timed-out session came back: %d", p.status)
		}
	})
}

func TestSession_AbsoluteTimeoutSignsOut(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		e := newConsoleEnv(t, b, func(_ *rest.Config, wc *web.Config) { wc.IdleTimeout, wc.Lifetime = 30*time.Minute, 2*time.Hour })
		e.user("ops", admin.RoleOperator)
		c := e.client()
		c.mustLogin("ops")
		for i := range 5 { // busy every 20 minutes: 100 minutes in
			e.clock.Advance(20 * time.Minute)
			if p := c.get("/admin/sessions"); p.status != http.StatusOK {
				t.Fatalf("request %d: %d", i, p.status)
			}
		}
		e.clock.Advance(20 * time.Minute) // 2 hours since sign-in
		if p := c.get("/admin/sessions"); !toLogin(p) {
			t.Fatalf("2 hours after sign-in: %d, want a redirect to login", p.status)
		}
		c.mustLogin("ops") // a new sign-in starts a new session
	})
}

func TestLogin_FreshSessionTokenAndLogout(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		e := newConsoleEnv(t, b)
		e.user("ops", admin.RoleOperator)
		c := e.client()
		c.get("/admin/sessions") // leaves a flash: an anonymous session exists
		u, _ := url.Parse(e.url + "/admin/")
		before := c.c.Jar.Cookies(u)
		c.mustLogin("ops")
		after := c.c.Jar.Cookies(u)
		if len(after) != 1 || (len(before) == 1 && before[0].Value == after[0].Value) {
			t.Fatalf("login kept the session token: before %v after %v", before, after)
		}
		// The pre-login token is worth nothing now.
		stale := e.client()
		stale.c.Jar.SetCookies(u, before)
		if p := stale.get("/admin/sessions"); !toLogin(p) {
			t.Errorf("the pre-login token opens the console: %d", p.status)
		}
		if p := c.post("/admin/logout", nil); !toLogin(p) {
			t.Fatalf("logout: %d %q", p.status, p.location)
		}
		replay := e.client()
		replay.c.Jar.SetCookies(u, after)
		if p := replay.get("/admin/sessions"); !toLogin(p) {
			t.Errorf("the logged-out token still opens the console: %d", p.status)
		}
	})
}

func TestLogin_CookieFlags(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		e := newConsoleEnv(t, b, func(_ *rest.Config, wc *web.Config) { wc.Dev = false })
		e.user("ops", admin.RoleOperator)
		form := url.Values{"username": {"ops"}, "password": {testPassword}}
		req, _ := http.NewRequest("POST", e.url+"/admin/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		res, err := (&http.Transport{}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		cookies := res.Cookies()
		if len(cookies) != 1 {
			t.Fatalf("cookies: %v", cookies)
		}
		ck := cookies[0]
		if !ck.Secure || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/admin" {
			t.Errorf("session cookie %+v: want Secure, HttpOnly, SameSite=Strict, Path=/admin", ck)
		}
	})
}

func TestLogin_DisabledUserIsRefusedAndSignedOut(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		e := newConsoleEnv(t, b)
		e.user("ops", admin.RoleOperator)
		e.user("gone", admin.RoleOperator)
		open := e.client()
		open.mustLogin("ops")
		if err := admin.New(e.store).DisableUser(ctx, "ops", cli); err != nil {
			t.Fatal(err)
		}
		if p := open.get("/admin/sessions"); !toLogin(p) {
			t.Fatalf("a disabled user's open session still works: %d", p.status)
		}
		if p := e.client().login("ops", testPassword); p.status != http.StatusUnauthorized {
			t.Fatalf("a disabled user's login: %d, want 401", p.status)
		}
		if err := admin.New(e.store).DisableUser(ctx, "ops", cli); store.ErrorCode(err) != store.CodeConflict {
			t.Errorf("disable twice: %v, want conflict", err)
		}
		// A reset enables the user again with the new password, and ends older sessions.
		other := e.client()
		other.mustLogin("gone")
		e.clock.Advance(time.Second)
		if err := admin.New(e.store).ResetPassword(ctx, "gone", "a brand new password", cli); err != nil {
			t.Fatal(err)
		}
		if p := other.get("/admin/sessions"); !toLogin(p) {
			t.Errorf("a session from before the password reset still works: %d", p.status)
		}
		if p := e.client().login("gone", testPassword); p.status != http.StatusUnauthorized {
			t.Errorf("the old password after reset: %d", p.status)
		}
		if p := e.client().login("gone", "a brand new password"); p.status != http.StatusSeeOther {
			t.Errorf("the new password: %d", p.status)
		}
	})
}

func TestRevoke_RefusesEveryTokenOfTheSessionAndIsAudited(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		e := newConsoleEnv(t, b)
		e.user("ops", admin.RoleOperator)
		alice := e.signInParty("alice")
		bob := e.signInParty("bob")
		c := e.client()
		c.mustLogin("ops")
		p := c.get("/admin/sessions?party=alice")
		if !strings.Contains(p.body, alice.ID) || strings.Contains(p.body, bob.ID) {
			t.Fatalf("search by hint: alice's session missing or bob's shown")
		}
		ss, _ := admin.New(e.store).SearchSessions(context.Background(), admin.SessionQuery{Party: alice.ID})
		if len(ss) != 1 {
			t.Fatalf("alice has %d sessions", len(ss))
		}
		sid := ss[0].SID
		if !strings.Contains(p.body, "/admin/sessions/"+sid+"/revoke") {
			t.Fatalf("an operator sees no revoke button")
		}
		if p := c.post("/admin/sessions/"+sid+"/revoke", url.Values{"party": {"alice"}}); p.status != http.StatusSeeOther {
			t.Fatalf("revoke: %d %s", p.status, p.body)
		}
		if status, body := e.restStatus("GET", "/api/auth/me", alice.token, nil); status != http.StatusUnauthorized || problemCode(body) != "token_revoked" {
			t.Fatalf("alice's token after revoke: %d %s, want 401 token_revoked", status, body)
		}
		if status, _ := e.restStatus("GET", "/api/auth/me", bob.token, nil); status != http.StatusOK {
			t.Fatalf("bob's token: %d", status)
		}
		if p := c.get("/admin/sessions?party=alice"); !strings.Contains(p.body, "is revoked") || strings.Contains(p.body, "/revoke\"") {
			t.Errorf("the page does not show the revocation")
		}
		// Revoking again changes nothing and says so.
		if p := c.post("/admin/sessions/"+sid+"/revoke", nil); p.status != http.StatusSeeOther {
			t.Fatalf("second revoke: %d", p.status)
		}
		if p := c.get("/admin/sessions"); !strings.Contains(p.body, "already revoked") {
			t.Errorf("a second revoke does not say it was already revoked")
		}
		if p := c.post("/admin/sessions/nosuch/revoke", nil); p.status != http.StatusSeeOther {
			t.Fatalf("revoke of nothing: %d", p.status)
		}
		want := []string{"ops revoke-session " + sid + " 127.0.0.1", "ops login ops 127.0.0.1"}
		if got := e.auditActions(); !slices.Equal(got, want) {
			t.Errorf("audit log:\n got %q\nwant %q", got, want)
		}
	})
}

func TestViewer_SeesNoActionsAndForgedActionsAreRefused(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		e := newConsoleEnv(t, b, func(rc *rest.Config, _ *web.Config) { rc.RateRead = 100 })
		e.user("watcher", admin.RoleViewer)
		alice := e.signInParty("alice")
		e.restStatus("GET", "/api/auth/me", alice.token, nil)
		c := e.client()
		c.mustLogin("watcher")
		ss, _ := admin.New(e.store).SearchSessions(context.Background(), admin.SessionQuery{Party: alice.ID})
		sid := ss[0].SID
		if p := c.get("/admin/sessions"); !strings.Contains(p.body, alice.ID) || strings.Contains(p.body, "/revoke") {
			t.Fatalf("a viewer sees a revoke button, or not the session")
		}
		if p := c.get("/admin/ratelimits"); !strings.Contains(p.body, `data-key="read:127.0.0.1"`) || strings.Contains(p.body, "/admin/ratelimits/reset") {
			t.Fatalf("a viewer sees a reset button")
		}
		if p := c.post("/admin/sessions/"+sid+"/revoke", nil); p.status != http.StatusForbidden {
			t.Fatalf("a viewer's forged revoke: %d, want 403", p.status)
		}
		if p := c.post("/admin/ratelimits/reset", url.Values{"key": {"read:127.0.0.1"}}); p.status != http.StatusForbidden {
			t.Fatalf("a viewer's forged reset: %d, want 403", p.status)
		}
		if status, _ := e.restStatus("GET", "/api/auth/me", alice.token, nil); status != http.StatusOK {
			t.Fatalf("alice's token after a viewer's revoke: %d, want 200", status)
		}
		if got := e.auditActions(); len(got) != 1 {
			t.Errorf("audit log after refused actions: %q", got)
		}
	})
}

func TestCSRF_FormsWithoutTheTokenOrFromAnotherSiteAreRefused(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		e := newConsoleEnv(t, b)
		e.user("ops", admin.RoleOperator)
		alice := e.signInParty("alice")
		c := e.client()
		c.mustLogin("ops")
		ss, _ := admin.New(e.store).SearchSessions(context.Background(), admin.SessionQuery{Party: alice.ID})
		path := "/admin/sessions/" + ss[0].SID + "/revoke"
		for _, tc := range []struct {
			name    string
			csrf    string
			headers map[string]string
		}{
			{"no token", "", nil},
			{"another session's token", "AAAA", nil},
			{"cross-site by Sec-Fetch-Site", c.csrf, map[string]string{"Sec-Fetch-Site": "cross-site"}},
			{"same-site, other origin", c.csrf, map[string]string{"Sec-Fetch-Site": "same-site"}},
			{"cross-origin by Origin", c.csrf, map[string]string{"Origin": "https://evil.example"}},
		} {
			req, _ := http.NewRequest("POST", e.url+path, strings.NewReader(url.Values{"csrf": {tc.csrf}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			if p := c.do(req); p.status != http.StatusForbidden {
				t.Errorf("%s: %d, want 403", tc.name, p.status)
			}
		}
		if status, _ := e.restStatus("GET", "/api/auth/me", alice.token, nil); status != http.StatusOK {
			t.Fatalf("a refused revoke revoked: %d", status)
		}
		// Login too: a cross-site login form is refused.
		req, _ := http.NewRequest("POST", e.url+"/admin/login", strings.NewReader("username=ops&password=x"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		if p := e.client().do(req); p.status != http.StatusForbidden {
			t.Errorf("cross-site login: %d, want 403", p.status)
		}
	})
}

func TestRateLimits_ShowsDrainedBucketAndResetIsAudited(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		e := newConsoleEnv(t, b, func(rc *rest.Config, _ *web.Config) { rc.RateRead = 5 })
		e.user("ops", admin.RoleOperator)
		for range 7 {
			e.restStatus("GET", "/api/auth/me", "", nil)
		}
		if status, _ := e.restStatus("GET", "/api/auth/me", "", nil); status != http.StatusTooManyRequests {
			t.Fatalf("burst: %d, want 429", status)
		}
		c := e.client()
		c.mustLogin("ops")
		p := c.get("/admin/ratelimits")
		row := between(p.body, `data-key="read:127.0.0.1"`, "</tr>")
		if row == "" || !strings.Contains(row, `<span class="pill bad">0</span>`) || !strings.Contains(row, `<td class="num">3</td>`) {
			t.Fatalf("the drained bucket is not shown with 0 remaining and 3 refused: %q", row)
		}
		if p := c.post("/admin/ratelimits/reset", url.Values{"key": {"read:127.0.0.1"}}); p.status != http.StatusSeeOther {
			t.Fatalf("reset: %d", p.status)
		}
		if status, _ := e.restStatus("GET", "/api/auth/me", "", nil); status != http.StatusUnauthorized {
			t.Fatalf("after the reset: %d, want 401 (no longer 429)", status)
		}
		if p := c.post("/admin/ratelimits/reset", url.Values{"key": {"read:nobody"}}); p.status != http.StatusSeeOther {
			t.Fatalf("reset of nothing: %d", p.status)
		}
		if p := c.get("/admin/ratelimits"); !strings.Contains(p.body, "There is no bucket read:nobody") {
			t.Errorf("a reset of nothing does not say so")
		}
		want := []string{"ops reset-rate-limit read:127.0.0.1 127.0.0.1", "ops login ops 127.0.0.1"}
		if got := e.auditActions(); !slices.Equal(got, want) {
			t.Errorf("audit log:\n got %q\nwant %q", got, want)
		}
		if p := c.get("/admin/audit"); !strings.Contains(p.body, "reset-rate-limit") {
			t.Errorf("the audit page does not show the reset")
		}
	})
}

// between returns the text of s from the first from to the next to, or "".
func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	j := strings.Index(s[i:], to)
	if j < 0 {
		return ""
	}
	return s[i : i+j]
}

func TestListings_FilterByCollectionSellerStateAndDetailWithHistory(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		e := newConsoleEnv(t, b)
		e.user("watcher", admin.RoleViewer)
		sum, err := e.store.SeedDemo(ctx, store.DemoOptions{NFTs: 40, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		all, err := e.store.Listings(ctx, store.ListingFilter{}, store.PageRequest{Limit: 100})
		if err != nil || len(all.Items) == 0 {
			t.Fatalf("seeded listings: %d %v (%+v)", len(all.Items), err, sum)
		}
		l := all.Items[0]
		c := e.client()
		c.mustLogin("watcher")
		col, err := e.store.CollectionByID(ctx, l.CollectionID)
		if err != nil {
			t.Fatal(err)
		}
		count := func(p page) int { return strings.Count(p.body, `href="/admin/listings/`) }
		for _, tc := range []struct {
			name  string
			query string
			f     store.ListingFilter
		}{
			{"by collection id", "collection=" + l.CollectionID, store.ListingFilter{CollectionID: l.CollectionID}},
			{"by collection slug", "collection=" + col.Slug, store.ListingFilter{CollectionID: l.CollectionID}},
			{"by seller", "seller=" + url.QueryEscape(l.Seller), store.ListingFilter{Seller: l.Seller}},
			{"active", "state=active", store.ListingFilter{State: "active"}},
			{"closed", "state=consumed", store.ListingFilter{State: "consumed"}},
			{"seller and state", "state=active&seller=" + url.QueryEscape(l.Seller), store.ListingFilter{Seller: l.Seller, State: "active"}},
		} {
			want, err := e.store.Listings(ctx, tc.f, store.PageRequest{Limit: 50})
			if err != nil {
				t.Fatal(err)
			}
			p := c.get("/admin/listings?" + tc.query)
			if p.status != http.StatusOK || count(p) != len(want.Items) {
				t.Errorf("%s: %d with %d rows, want %d", tc.name, p.status, count(p), len(want.Items))
			}
			for _, w := range want.Items {
				if !strings.Contains(p.body, "/admin/listings/"+url.PathEscape(w.CID)) {
					t.Errorf("%s: listing %s missing", tc.name, w.CID)
				}
			}
		}
		if p := c.get("/admin/listings?state=sideways"); p.status != http.StatusBadRequest {
			t.Errorf("a bad state: %d, want 400", p.status)
		}
		p := c.get("/admin/listings/" + url.PathEscape(l.CID))
		nft, err := e.store.NFTByContract(ctx, l.NFTCID)
		if err != nil {
			t.Fatal(err)
		}
		if p.status != http.StatusOK || !strings.Contains(p.body, l.NFTID) || !strings.Contains(p.body, nft.Name) || !strings.Contains(p.body, `id="history"`) {
			t.Fatalf("listing detail: %d, NFT or history missing", p.status)
		}
		for _, h := range nft.History {
			if !strings.Contains(p.body, h.UpdateID) {
				t.Errorf("history event %s missing", h.UpdateID)
			}
		}
		if p := c.get("/admin/listings/nosuch"); p.status != http.StatusNotFound {
			t.Errorf("a missing listing: %d, want 404", p.status)
		}
		// The party page joins the seller's listings and updates.
		if p := c.get("/admin/parties/" + url.PathEscape(l.Seller)); p.status != http.StatusOK || !strings.Contains(p.body, l.CID) {
			t.Errorf("the seller's page: %d, listing %s missing", p.status, l.CID)
		}
		if p := c.get("/admin/ledger"); p.status != http.StatusOK || !strings.Contains(p.body, "nft.") {
			t.Errorf("ledger page: %d without NFT updates", p.status)
		}
	})
}

func TestLedger_ShowsUpdatesAndPreparedTransactionsWithTheirState(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		e := newConsoleEnv(t, b)
		e.user("watcher", admin.RoleViewer)
		alice := e.signInParty("alice") // one executed onboarding
		carol := storetest.NewKey()
		if _, err := e.store.PrepareOnboarding(ctx, carol.Public(), "carol"); err != nil { // prepared, never executed
			t.Fatal(err)
		}
		c := e.client()
		c.mustLogin("watcher")
		states := func() string {
			p := c.get("/admin/ledger")
			if p.status != http.StatusOK {
				t.Fatalf("ledger: %d", p.status)
			}
			prepared := between(p.body, `<table class="prepared">`, "</table>")
			return strings.Join(regexp.MustCompile(`<span class="pill[^"]*">([a-z]+)</span>`).FindAllString(prepared, -1), " ")
		}
		if got := states(); !strings.Contains(got, ">pending<") || !strings.Contains(got, ">executed<") || strings.Contains(got, ">expired<") {
			t.Errorf("prepared states now: %s", got)
		}
		e.clock.Advance(e.store.Config().PreparedTTL + time.Second)
		if got := states(); !strings.Contains(got, ">expired<") || strings.Contains(got, ">pending<") {
			t.Errorf("prepared states after the TTL: %s", got)
		}
		if p := c.get("/admin/ledger"); !strings.Contains(p.body, "party.onboard") || !strings.Contains(p.body, alice.ID) {
			t.Errorf("the latest updates miss alice's onboarding")
		}
	})
}

// Two console instances on one store share the sign-in budgets: attempts made through either
// count against the same user's budget, so a fleet does not multiply it.
func TestLogin_ThrottleHoldsAcrossInstances(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		e := newConsoleEnv(t, b, func(_ *rest.Config, wc *web.Config) { wc.LoginPerUser, wc.LoginPerAddr = 3, 100 })
		e.user("ops", admin.RoleOperator)
		other, err := store.Open(context.Background(), e.store.Config()) // a second instance
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { other.Close() })
		hs := httptest.NewServer(web.New(other, web.Config{Dev: true, LoginPerUser: 3, LoginPerAddr: 100, Logger: slog.New(slog.DiscardHandler)}))
		t.Cleanup(hs.Close)
		e2 := *e
		e2.store, e2.url = other, hs.URL
		clients := []*browserless{e.client(), e2.client()}
		for i := range 3 {
			if p := clients[i%2].login("ops", "wrong password "+string(rune('a'+i))); p.status != http.StatusUnauthorized {
				t.Fatalf("attempt %d: %d", i+1, p.status)
			}
		}
		for k, c := range clients {
			if p := c.login("ops", testPassword); p.status != http.StatusTooManyRequests {
				t.Fatalf("a 4th attempt through instance %d: %d, want 429", k+1, p.status)
			}
		}
		e.clock.Advance(16 * time.Minute)
		clients[1].mustLogin("ops")
	})
}
