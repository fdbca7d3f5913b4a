package rest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"marketd/store"
	"marketd/store/storetest"
)

// testAPI is the REST API over a private store on one backend, served on a real listener,
// with a clock the test moves.
type testAPI struct {
	t     testing.TB
	clock *storetest.Clock
	store *store.Store
	srv   *Server
	http  *httptest.Server
}

// apiOption adjusts the configuration before the API starts.
type apiOption func(sc *store.Config, rc *Config)

// newTestAPI starts the API on backend b.
func newTestAPI(t testing.TB, b storetest.Backend, opts ...apiOption) *testAPI {
	t.Helper()
	clock := storetest.NewClock(storetest.Epoch)
	sc := storetest.Config(clock)
	rc := Config{PublicURL: sc.PublicURL, Dev: true, RateRead: 0, RatePrepare: 0, Logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(&sc, &rc)
	}
	return serveAPI(t, b.Open(t, sc), clock, rc)
}

// serveAPI serves the API over s with rc on a test server of its own, closed with the test.
func serveAPI(t testing.TB, s *store.Store, clock *storetest.Clock, rc Config) *testAPI {
	t.Helper()
	srv, err := New(s, rc)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &testAPI{t: t, clock: clock, store: s, srv: srv, http: hs}
}

// onboard makes a party with storetest and onboards it through the API.
func (a *testAPI) onboard(hint string) *storetest.Party {
	a.t.Helper()
	p := storetest.NewParty(hint)
	a.prepareExecute("/api/parties/onboard", map[string]string{"publicKey": p.PublicBase64(), "hint": hint}, p)
	return p
}

// prepareExecute runs base/prepare then base/execute signed by p, and returns the receipt.
func (a *testAPI) prepareExecute(base string, body any, p *storetest.Party, opts ...reqOption) map[string]any {
	a.t.Helper()
	prep := a.do("POST", base+"/prepare", body, opts...).ok(a.t)
	hash := prep.str(a.t, "preparedTransactionHash")
	raw, _ := base64.StdEncoding.DecodeString(hash)
	res := a.do("POST", base+"/execute", map[string]string{"preparedTransactionHash": hash, "signature": p.SignBase64(raw)}, opts...).ok(a.t)
	return res.obj(a.t)
}

// challenge asks for a sign-in challenge for p.
func (a *testAPI) challenge(p *storetest.Party) (message, nonce string) {
	a.t.Helper()
	r := a.do("POST", "/api/auth/nonce", map[string]string{"partyId": p.ID}).ok(a.t)
	return r.str(a.t, "message"), r.str(a.t, "nonce")
}

// signIn signs p in and returns the verify response (token in body, cookie in Set-Cookie).
func (a *testAPI) signIn(p *storetest.Party) *testResponse {
	a.t.Helper()
	msg, nonce := a.challenge(p)
	return a.do("POST", "/api/auth/verify", map[string]string{"partyId": p.ID, "nonce": nonce, "signature": p.SignBase64([]byte(msg))}).ok(a.t)
}

// token signs p in and returns its bearer token.
func (a *testAPI) token(p *storetest.Party) string {
	a.t.Helper()
	return a.signIn(p).str(a.t, "token")
}

// reqOption adjusts one request.
type reqOption func(r *http.Request)

func bearer(tok string) reqOption {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
}

func withCookie(c *http.Cookie) reqOption {
	return func(r *http.Request) { r.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value}) }
}

func withHeader(k, v string) reqOption {
	return func(r *http.Request) { r.Header.Set(k, v) }
}

// testResponse is a fully read response.
type testResponse struct {
	status int
	header http.Header
	body   []byte
	cookie []*http.Cookie
}

// do sends a request; body is JSON-encoded unless it is a string or []byte, sent as is.
func (a *testAPI) do(method, path string, body any, opts ...reqOption) *testResponse {
	a.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			a.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, a.http.URL+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, o := range opts {
		o(req)
	}
	client := a.http.Client()
	if ip, ok := req.Context().Value(peerKey{}).(string); ok {
		client = peerClient(ip)
	}
	res, err := client.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	return &testResponse{status: res.StatusCode, header: res.Header, body: b, cookie: res.Cookies()}
}

// ok fails the test unless the status is 2xx.
func (r *testResponse) ok(t testing.TB) *testResponse {
	t.Helper()
	if r.status/100 != 2 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	return r
}

// obj decodes the body as a JSON object.
func (r *testResponse) obj(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, r.body)
	}
	return m
}

func (r *testResponse) str(t testing.TB, field string) string {
	t.Helper()
	s, ok := r.obj(t)[field].(string)
	if !ok {
		t.Fatalf("no string %q in %s", field, r.body)
	}
	return s
}

// wantProblem fails the test unless the response is problem+json with status and code.
func (r *testResponse) wantProblem(t testing.TB, status int, code store.Code) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json", ct)
	}
	var p problem
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("problem body: %v: %s", err, r.body)
	}
	if p.Code != string(code) || p.Status != status || p.Type == "" || p.Title == "" || p.Detail == "" {
		t.Fatalf("problem %+v, want code %s status %d with type, title and detail", p, code, status)
	}
}

// sessionCookie returns the ledger_session cookie a response set, or nil.
func (r *testResponse) sessionCookie() *http.Cookie {
	for _, c := range r.cookie {
		if c.Name == cookieName {
			return c
		}
	}
	return nil
}
