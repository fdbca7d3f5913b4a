package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"marketd/rest"
	"marketd/store"
	"marketd/store/admin"
	"marketd/store/storetest"
	"marketd/web"
)

// consoleEnv is the service as `marketd serve` mounts it, the REST API and the admin console
// over one private store on one backend, on a real listener, with a clock the test moves.
type consoleEnv struct {
	t     *testing.T
	clock *storetest.Clock
	store *store.Store
	api   *rest.Server
	url   string
}

type envOption func(rc *rest.Config, wc *web.Config)

func newConsoleEnv(t *testing.T, b storetest.Backend, opts ...envOption) *consoleEnv {
	t.Helper()
	clock := storetest.NewClock(storetest.Epoch)
	sc := storetest.Config(clock)
	rc := rest.Config{PublicURL: sc.PublicURL, Dev: true, Logger: slog.New(slog.DiscardHandler)}
	wc := web.Config{Dev: true, Logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(&rc, &wc)
	}
	s := b.Open(t, sc)
	api, err := rest.New(s, rc)
	if err != nil {
		t.Fatal(err)
	}
	wc.Limits = api.Limiter()
	root := http.NewServeMux()
	root.Handle("/admin/", web.New(s, wc))
	root.Handle("/", api)
	hs := httptest.NewServer(root)
	t.Cleanup(hs.Close)
	return &consoleEnv{t: t, clock: clock, store: s, api: api, url: hs.URL}
}

const testPassword = "a long enough password"

// user creates a console user with testPassword.
func (e *consoleEnv) user(name string, role admin.Role) {
	e.t.Helper()
	if _, err := admin.New(e.store).CreateUser(context.Background(), name, role, testPassword, cli); err != nil {
		e.t.Fatal(err)
	}
}

// party is a party made by storetest, onboarded and signed in over REST, with its bearer token.
type party struct {
	*storetest.Party
	token string
}

// signInParty onboards a fresh party with hint and signs it in over REST.
func (e *consoleEnv) signInParty(hint string) party {
	e.t.Helper()
	p := storetest.NewParty(hint)
	var prep struct{ PreparedTransactionHash string }
	e.rest("POST", "/api/parties/onboard/prepare", "", map[string]string{"publicKey": p.PublicBase64(), "hint": hint}, &prep)
	e.rest("POST", "/api/parties/onboard/execute", "", map[string]string{"preparedTransactionHash": prep.PreparedTransactionHash, "signature": p.SignHash(e.t, prep.PreparedTransactionHash)}, nil)
	var nr struct{ Message, Nonce string }
	e.rest("POST", "/api/auth/nonce", "", map[string]string{"partyId": p.ID}, &nr)
	var tr struct{ Token string }
	e.rest("POST", "/api/auth/verify", "", map[string]string{"partyId": p.ID, "nonce": nr.Nonce, "signature": p.SignBase64([]byte(nr.Message))}, &tr)
	return party{Party: p, token: tr.Token}
}

// exec runs a prepare as p and executes it with p's signature (execute is the path that
// takes the signed hash); it returns the execute's answer.
func (e *consoleEnv) exec(p party, prepare, execute string, body any) map[string]any {
	e.t.Helper()
	var prep struct{ PreparedTransactionHash string }
	e.rest("POST", prepare, p.token, body, &prep)
	var out map[string]any
	e.rest("POST", execute, p.token, map[string]string{"preparedTransactionHash": prep.PreparedTransactionHash, "signature": p.SignHash(e.t, prep.PreparedTransactionHash)}, &out)
	return out
}

// rest sends a JSON request to the API and decodes a 2xx answer into out; anything else fails the test.
func (e *consoleEnv) rest(method, path, token string, body, out any) {
	e.t.Helper()
	status, b := e.restStatus(method, path, token, body)
	if status/100 != 2 {
		e.t.Fatalf("%s %s: %d %s", method, path, status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			e.t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}

func (e *consoleEnv) restStatus(method, path, token string, body any) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, e.url+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// problemCode returns the code of a problem+json body.
func problemCode(b []byte) string {
	var p struct{ Code string }
	json.Unmarshal(b, &p)
	return p.Code
}

// browserless is a console client: a cookie jar, no redirects followed, and the last page's
// CSRF token for the next form it posts.
type browserless struct {
	e      *consoleEnv
	c      *http.Client
	csrf   string
	header http.Header // sent on every request, as a proxy in front would add it
}

func (e *consoleEnv) client() *browserless {
	jar, _ := cookiejar.New(nil)
	return &browserless{e: e, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// page is one response of the console.
type page struct {
	status   int
	location string
	body     string
}

var csrfPattern = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (b *browserless) do(req *http.Request) page {
	b.e.t.Helper()
	for k, v := range b.header {
		req.Header[k] = v
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if m := csrfPattern.FindSubmatch(body); m != nil {
		b.csrf = string(m[1])
	}
	return page{status: res.StatusCode, location: res.Header.Get("Location"), body: string(body)}
}

func (b *browserless) get(path string) page {
	req, _ := http.NewRequest("GET", b.e.url+path, nil)
	return b.do(req)
}

// post sends a form the way the console's own page does (same origin), with the CSRF token
// unless the form sets one itself.
func (b *browserless) post(path string, form url.Values) page {
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["csrf"]; !ok && b.csrf != "" {
		form.Set("csrf", b.csrf)
	}
	req, _ := http.NewRequest("POST", b.e.url+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.e.url)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return b.do(req)
}

func (b *browserless) login(name, password string) page {
	return b.post("/admin/login", url.Values{"username": {name}, "password": {password}})
}

// mustLogin signs in and loads the sessions page, so the client holds a CSRF token.
func (b *browserless) mustLogin(name string) {
	b.e.t.Helper()
	if p := b.login(name, testPassword); p.status != http.StatusSeeOther || p.location != "/admin/" {
		b.e.t.Fatalf("login %s: %d %s %s", name, p.status, p.location, p.body)
	}
	if p := b.get("/admin/sessions"); p.status != http.StatusOK {
		b.e.t.Fatalf("sessions page after login: %d", p.status)
	}
}

// toLogin tells whether p sends the browser to the login page.
func toLogin(p page) bool {
	return p.status == http.StatusSeeOther && strings.HasPrefix(p.location, "/admin/login")
}

// auditActions lists the console's audit log entries newest first as "actor action target addr".
func (e *consoleEnv) auditActions() []string {
	e.t.Helper()
	es, err := admin.New(e.store).AuditLog(context.Background(), "", 100)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, a := range es {
		if strings.HasPrefix(a.Actor, "cli:") {
			continue // users created for the test
		}
		out = append(out, strings.Join([]string{a.Actor, a.Action, a.Target, a.Addr}, " "))
	}
	return out
}

var _ = time.Second

// cli is who the command-line tool acts as in tests.
var cli = admin.AuditEntry{Actor: "cli:root", Addr: "local"}
