package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"marketd/rest"
	"marketd/store"
	"marketd/store/admin"
	"marketd/store/storetest"
	"marketd/web"
)

// artifactsDir is where browser tests leave their screenshots: $TEST_ARTIFACTS_DIR, else a
// folder under the system's temporary directory. The test logs it; .ci/run prints it.
func artifactsDir(t *testing.T, sub string) string {
	base := os.Getenv("TEST_ARTIFACTS_DIR")
	if base == "" {
		base = filepath.Join(os.TempDir(), "marketd-test-artifacts")
	}
	dir := filepath.Join(base, sub)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

// newBrowser starts Debian's headless Chromium once for a test; every subtest opens its own
// browser contexts (separate cookies) in it.
func newBrowser(t *testing.T) context.Context { return startBrowser(t, false) }

// startBrowser starts Chromium with JavaScript off, or on for a test of what the console's
// one script adds.
func startBrowser(t *testing.T, scripts bool) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("MARKETD_REQUIRE_BROWSER") != "" {
			t.Fatal("chromium is not installed (apt-get install -y chromium)")
		}
		t.Skip("chromium is not installed; .ci/run installs it")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.WindowSize(1366, 900),
	)
	if !scripts {
		opts = append(opts, chromedp.Flag("blink-settings", "scriptEnabled=false")) // the console works with JavaScript off
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	if err := chromedp.Run(browser); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() { cancelBrowser(); cancelAlloc() })
	return browser
}

// tab opens a tab with no cookies, with a time limit. Subtests run one at a time, so each
// starts signed out.
func tab(t *testing.T, browser context.Context) context.Context {
	ctx, cancel := chromedp.NewContext(browser)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute) // generous: the CI machine may be busy
	t.Cleanup(func() { cancelTimeout(); cancel() })
	if err := chromedp.Run(ctx, network.ClearBrowserCookies()); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// shoot saves a full-page PNG screenshot as dir/name.png, and under web/screenshots when
// UPDATE_SCREENSHOTS is set (the README shows those).
func shoot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	var png []byte
	if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("UPDATE_SCREENSHOTS") != "" && strings.HasSuffix(dir, "sqlite") {
		if err := os.WriteFile(filepath.Join("screenshots", name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// clickAndLoad clicks the element with id sel and waits for the page it leads to to load.
func clickAndLoad(sel string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		loaded := make(chan struct{}, 1)
		chromedp.ListenTarget(ctx, func(ev any) {
			if _, ok := ev.(*cdppage.EventLoadEventFired); ok {
				select {
				case loaded <- struct{}{}:
				default:
				}
			}
		})
		if err := chromedp.Click(sel, chromedp.ByID).Do(ctx); err != nil {
			return err
		}
		select {
		case <-loaded:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}

func browserLogin(ctx context.Context, base, name string) chromedp.Tasks {
	return chromedp.Tasks{
		chromedp.Navigate(base + "/admin/sessions"),
		chromedp.WaitVisible(`#username`, chromedp.ByID),
		chromedp.SendKeys(`#username`, name, chromedp.ByID),
		chromedp.SendKeys(`#password`, testPassword, chromedp.ByID),
		chromedp.Click(`#login-submit`, chromedp.ByID),
		chromedp.WaitVisible(`#whoami`, chromedp.ByID),
	}
}

// TestBrowser_Console drives the console in headless Chromium with JavaScript off: an operator
// finds a party's session and revokes it (REST then answers 401 token_revoked), sees the
// bucket a burst drained and resets it; a viewer sees no revoke button and a forged revoke is
// refused; a form posted from another site is refused. Every page is photographed.
func TestBrowser_Console(t *testing.T) {
	browser := newBrowser(t)
	for _, b := range storetest.Backends() { // one at a time: they share the browser's cookies
		t.Run(b.Name, func(t *testing.T) { browserConsole(t, browser, b) })
	}
}

func browserConsole(t *testing.T, browser context.Context, b storetest.Backend) {
	{
		e := newConsoleEnv(t, b, func(rc *rest.Config, _ *web.Config) { rc.RateRead = 10 })
		dir := artifactsDir(t, "admin-console-"+b.Name)
		e.user("ops", admin.RoleOperator)
		e.user("watcher", admin.RoleViewer)
		if _, err := e.store.SeedDemo(context.Background(), store.DemoOptions{NFTs: 24, Seed: 5}); err != nil {
			t.Fatal(err) // a small market, so the listing and ledger pages have something to show
		}
		alice := e.signInParty("alice")
		bob := e.signInParty("bob")
		sidOf := func(p party) string {
			ss, err := admin.New(e.store).SearchSessions(context.Background(), admin.SessionQuery{Party: p.ID})
			if err != nil || len(ss) != 1 {
				t.Fatalf("sessions of %s: %v %v", p.ID, ss, err)
			}
			return ss[0].SID
		}
		aliceSID, bobSID := sidOf(alice), sidOf(bob)

		t.Run("operator revokes a session", func(t *testing.T) {
			ctx := tab(t, browser)
			var loginTitle string
			if err := chromedp.Run(ctx, chromedp.Navigate(e.url+"/admin/ledger"), chromedp.WaitVisible(`#username`, chromedp.ByID), chromedp.Title(&loginTitle)); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(loginTitle, "Sign in") {
				t.Fatalf("without a session /admin/ledger shows %q, want the login page", loginTitle)
			}
			shoot(t, ctx, dir, "login")
			var flash, rowText, fullID string
			var copyButtons []*cdp.Node
			row := fmt.Sprintf(`tr[data-sid="%s"]`, aliceSID)
			err := chromedp.Run(ctx,
				browserLogin(ctx, e.url, "ops"),
				chromedp.SendKeys(`#party-search`, "alice", chromedp.ByID),
				// The unsearched page may list alice's row too: read the row only once the
				// search's page has loaded, or it is the old page's, gone mid-read.
				clickAndLoad(`#search`),
				chromedp.WaitVisible(row, chromedp.ByQuery),
				chromedp.Text(row, &rowText, chromedp.ByQuery),
				chromedp.AttributeValue(row+` .party a`, "title", &fullID, nil, chromedp.ByQuery),
				chromedp.Nodes(`button.copy:not([hidden])`, &copyButtons, chromedp.ByQuery, chromedp.AtLeast(0)),
			)
			if err != nil {
				t.Fatal(err)
			}
			// The id shows shortened, on one line, whole on hover; the copy button needs JavaScript.
			short := "alice::" + alice.ID[7:13] + "…" + alice.ID[len(alice.ID)-4:]
			if !strings.Contains(rowText, short) || strings.Contains(rowText, alice.ID) || fullID != alice.ID || !strings.Contains(rowText, "active") {
				t.Fatalf("alice's row: %q, title %q; want %q shown and %q on hover", rowText, fullID, short, alice.ID)
			}
			if len(copyButtons) != 0 {
				t.Fatalf("with JavaScript off, %d copy buttons show", len(copyButtons))
			}
			shoot(t, ctx, dir, "sessions")
			err = chromedp.Run(ctx,
				chromedp.Click(row+` button.revoke`, chromedp.ByQuery),
				chromedp.WaitVisible(`.flash`, chromedp.ByQuery),
				chromedp.Text(`.flash`, &flash, chromedp.ByQuery),
				chromedp.Text(row, &rowText, chromedp.ByQuery),
			)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(flash, "is revoked") || !strings.Contains(rowText, "revoked") {
				t.Fatalf("after revoke: flash %q, row %q", flash, rowText)
			}
			shoot(t, ctx, dir, "sessions-revoked")
			if status, body := e.restStatus("GET", "/api/auth/me", alice.token, nil); status != http.StatusUnauthorized || problemCode(body) != "token_revoked" {
				t.Fatalf("alice's token after the revoke: %d %s, want 401 token_revoked", status, body)
			}
			if status, _ := e.restStatus("GET", "/api/auth/me", bob.token, nil); status != http.StatusOK {
				t.Fatalf("bob's token: %d", status)
			}

			// The party page joins sessions, balances, listings and updates.
			err = chromedp.Run(ctx, chromedp.Navigate(e.url+"/admin/parties/"+alice.ID), chromedp.WaitVisible(`#balances`, chromedp.ByID))
			if err != nil {
				t.Fatal(err)
			}
			shoot(t, ctx, dir, "party")
			for _, p := range []struct{ path, name, ready string }{
				{"/admin/listings", "listings", `#listings`},
				{"/admin/ledger", "ledger", `table.updates`},
			} {
				if err := chromedp.Run(ctx, chromedp.Navigate(e.url+p.path), chromedp.WaitVisible(p.ready, chromedp.ByQuery)); err != nil {
					t.Fatalf("%s: %v", p.path, err)
				}
				shoot(t, ctx, dir, p.name)
			}
			// A listing's page: its NFT and the NFT's history, reached from the list.
			err = chromedp.Run(ctx,
				chromedp.Navigate(e.url+"/admin/listings?state=active"),
				chromedp.Click(`#listings tbody tr:first-child td:first-child a`, chromedp.ByQuery),
				chromedp.WaitVisible(`#history`, chromedp.ByID),
			)
			if err != nil {
				t.Fatal(err)
			}
			shoot(t, ctx, dir, "listing")
		})

		t.Run("operator resets a drained bucket", func(t *testing.T) {
			for range 12 { // 10 allowed, 2 refused
				e.restStatus("GET", "/api/auth/me", "", nil)
			}
			if status, _ := e.restStatus("GET", "/api/auth/me", "", nil); status != http.StatusTooManyRequests {
				t.Fatalf("after the burst: %d, want 429", status)
			}
			ctx := tab(t, browser)
			row := `tr[data-key="read:127.0.0.1"]`
			var remaining, flash string
			err := chromedp.Run(ctx,
				browserLogin(ctx, e.url, "ops"),
				chromedp.Navigate(e.url+"/admin/ratelimits"),
				chromedp.WaitVisible(row, chromedp.ByQuery),
				chromedp.Text(row+` td.remaining`, &remaining, chromedp.ByQuery),
			)
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(remaining) != "0" {
				t.Fatalf("the drained bucket shows %q remaining, want 0", remaining)
			}
			shoot(t, ctx, dir, "ratelimits")
			err = chromedp.Run(ctx,
				chromedp.Click(row+` button.reset`, chromedp.ByQuery),
				chromedp.WaitVisible(`.flash`, chromedp.ByQuery),
				chromedp.Text(`.flash`, &flash, chromedp.ByQuery),
			)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(flash, "is reset") {
				t.Fatalf("after reset: %q", flash)
			}
			if status, _ := e.restStatus("GET", "/api/auth/me", "", nil); status != http.StatusUnauthorized {
				t.Fatalf("after the reset: %d, want 401 (no longer 429)", status)
			}
			if err := chromedp.Run(ctx, chromedp.Navigate(e.url+"/admin/audit"), chromedp.WaitVisible(`#audit`, chromedp.ByID)); err != nil {
				t.Fatal(err)
			}
			shoot(t, ctx, dir, "audit")
		})

		t.Run("viewer sees no revoke button and a forged revoke is refused", func(t *testing.T) {
			ctx := tab(t, browser)
			var buttons []*cdp.Node
			var csrf, msg string
			row := fmt.Sprintf(`tr[data-sid="%s"]`, bobSID)
			err := chromedp.Run(ctx,
				browserLogin(ctx, e.url, "watcher"),
				chromedp.Navigate(e.url+"/admin/sessions?party=bob"),
				chromedp.WaitVisible(row, chromedp.ByQuery),
				chromedp.Nodes(`button.revoke`, &buttons, chromedp.ByQuery, chromedp.AtLeast(0)),
				chromedp.Value(`input[name="csrf"]`, &csrf, chromedp.ByQuery),
			)
			if err != nil {
				t.Fatal(err)
			}
			if len(buttons) != 0 {
				t.Fatalf("a viewer sees %d revoke buttons", len(buttons))
			}
			shoot(t, ctx, dir, "sessions-viewer")
			// The viewer forges the operator's form, with its own valid CSRF token, on the console's own origin.
			err = chromedp.Run(ctx,
				chromedp.Navigate(e.url+"/admin/sessions?party=bob"),
				chromedp.WaitVisible(`form[action="/admin/logout"]`, chromedp.ByQuery),
				// Turn the sign-out form (same origin, with the token) into a revoke of bob's session.
				chromedp.SetAttributeValue(`form[action="/admin/logout"]`, "action", "/admin/sessions/"+bobSID+"/revoke", chromedp.ByQuery),
				chromedp.Click(`form[action$="/revoke"] button`, chromedp.ByQuery),
				chromedp.WaitVisible(`#error-message`, chromedp.ByID),
				chromedp.Text(`#error-message`, &msg, chromedp.ByID),
			)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(msg, "Only an operator") {
				t.Fatalf("forged revoke by a viewer: %q", msg)
			}
			shoot(t, ctx, dir, "forged-revoke-refused")
			if status, _ := e.restStatus("GET", "/api/auth/me", bob.token, nil); status != http.StatusOK {
				t.Fatalf("bob's token after a viewer's forged revoke: %d, want 200", status)
			}
		})

		t.Run("a form posted from another site is refused", func(t *testing.T) {
			ctx := tab(t, browser)
			var csrf string
			if err := chromedp.Run(ctx, browserLogin(ctx, e.url, "ops"), chromedp.Value(`input[name="csrf"]`, &csrf, chromedp.ByQuery)); err != nil {
				t.Fatal(err)
			}
			// Another origin serves a copy of the revoke form, even with the operator's token.
			evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				fmt.Fprintf(w, `<!doctype html><form method="post" action="%s/admin/sessions/%s/revoke"><input type="hidden" name="csrf" value="%s"><button id="go">Win a prize</button></form>`, e.url, bobSID, csrf)
			}))
			defer evil.Close()
			var body string
			err := chromedp.Run(ctx,
				chromedp.Navigate(evil.URL),
				chromedp.Click(`#go`, chromedp.ByID),
				chromedp.WaitVisible(`body`, chromedp.ByQuery),
				chromedp.Sleep(200*time.Millisecond),
				chromedp.Text(`body`, &body, chromedp.ByQuery),
			)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(body, "refused") {
				t.Fatalf("the cross-site form got: %q", body)
			}
			shoot(t, ctx, dir, "cross-site-refused")
			if status, _ := e.restStatus("GET", "/api/auth/me", bob.token, nil); status != http.StatusOK {
				t.Fatalf("bob's token after a cross-site revoke: %d, want 200", status)
			}
		})
	}
}
