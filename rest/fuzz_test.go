package rest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"marketd/store/storetest"
)

// postRoutes is every POST route of the route table, in table order.
func postRoutes(srv *Server) []route {
	var out []route
	for _, rt := range srv.routes {
		if rt.method == http.MethodPost {
			out = append(out, rt)
		}
	}
	return out
}

var pathParam = regexp.MustCompile(`\{[^}]*\}`)

// endpointBodySeeds are valid bodies for each POST route of a and bodies built to hurt a
// decoder; the index is the route's position in postRoutes.
func endpointBodySeeds(a *testAPI, alice *storetest.Party) (valid map[string][]string, nasty []string) {
	t := a.t
	k := newTestKey()
	p := a.prepareOnboarding(k, "fuzz")
	msg, nonce := a.challenge(alice)
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	valid = map[string][]string{
		"/api/parties/onboard/prepare": {enc(k.onboardBody("fuzz")), enc(newTestKey().onboardBody("x"))},
		"/api/parties/onboard/execute": {enc(map[string]string{
			"preparedTransactionHash": p.PreparedTransactionHash,
			"signature":               base64.StdEncoding.EncodeToString(k.signHash(t, p.PreparedTransactionHash)),
		})},
		"/api/auth/nonce":  {enc(map[string]string{"partyId": alice.ID})},
		"/api/auth/verify": {enc(map[string]string{"partyId": alice.ID, "nonce": nonce, "signature": alice.SignBase64([]byte(msg))})},
		"/api/auth/logout": {"", "{}"},
	}
	nasty = []string{
		"", "null", "{}", "[]", "0", `""`, "true", "{", "}", `{"`, "\x00", "\xff\xfe\xfd",
		strings.Repeat("[", 20000), strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000),
		strings.Repeat("[", 5000) + strings.Repeat("]", 5000),
		`{"partyId":1e999999}`, `{"hint":123456789012345678901234567890123456789}`, `{"limit":-1e308}`,
		`{"partyId":null,"nonce":null,"signature":null,"publicKey":null,"hint":null,"preparedTransactionHash":null}`,
		`{"partyId":"` + alice.ID + `","nonce":"\u0000\u0000","signature":"` + strings.Repeat("0", 128) + `"}`,
		`{"partyId":"` + alice.ID + `","nonce":"` + "\xff\xfe" + `","signature":"` + strings.Repeat("a", 128) + `"}`,
		`{"partyId":"` + alice.ID + `","nonce":"` + strings.Repeat("é", 40) + `","signature":"` + strings.Repeat("a", 128) + `"}`,
		`{"partyId":"alice::1220` + strings.Repeat("0", 64) + "\u0000" + `"}`,
		`{"publicKey":"` + strings.Repeat("A", 43) + `=","hint":"\ud800"}`,
		`{"publicKey":"` + strings.Repeat("A", 43) + `=","hint":"` + strings.Repeat("h", 64) + `"}`,
		`{"hint":"a","hint":"b","publicKey":"x"}`,
		`{"preparedTransactionHash":"` + strings.Repeat("A", 43) + `=","signature":"` + strings.Repeat("f", 128) + `"}`,
		`{"preparedTransactionHash":"` + strings.Repeat("/", 44) + `","signature":"` + strings.Repeat("+", 88) + `"}`,
		`{"partyId":"x","sender":"y","owner":"z","taker":"t","lp":"l"}`,
		`{"partyId":["` + alice.ID + `"]}`, `{"partyId":{"partyId":"x"}}`,
		`{"PARTYID":"` + alice.ID + `"}`, `{"partyid":"` + alice.ID + `"}`,
		"\ufeff{}", `{}` + "\x00", `{} {}`, `{"a":"\x7f\x80"}`,
	}
	return valid, nasty
}

func FuzzEndpointBodies(f *testing.F) {
	b := storetest.Backends()[0]
	a := newTestAPI(f, b)
	alice := a.onboard("alice")
	routes := postRoutes(a.srv)
	if len(routes) == 0 {
		f.Fatal("no POST routes")
	}
	valid, nasty := endpointBodySeeds(a, alice)
	for i, rt := range routes {
		for _, body := range valid[rt.path] {
			f.Add(byte(i), []byte(body))
		}
		for _, body := range nasty {
			f.Add(byte(i), []byte(body))
		}
	}
	shared := a.token(alice)
	f.Fuzz(func(t *testing.T, idx byte, body []byte) {
		rt := routes[int(idx)%len(routes)]
		tok := shared
		if rt.noRotate {
			// Logout ends the session: it gets a session of its own each time.
			ta := &testAPI{t: t, clock: a.clock, store: a.store, srv: a.srv, http: a.http}
			tok = ta.token(alice)
		}
		checkEndpointBody(t, a.srv, rt, tok, body)
	})
}

// checkEndpointBody sends body to rt through the whole handler chain and fails on a 5xx or
// on an error that is not problem+json.
func checkEndpointBody(t *testing.T, srv *Server, rt route, tok string, body []byte) {
	t.Helper()
	req := httptest.NewRequest(rt.method, pathParam.ReplaceAllString(rt.path, "x"), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code >= 500 {
		t.Fatalf("%s %s with %q: status %d: %s", rt.method, rt.path, body, rec.Code, rec.Body)
	}
	if rec.Code/100 == 2 {
		return
	}
	if ct := rec.Header().Get("Content-Type"); rt.protocol != "" && rec.Code != http.StatusTooManyRequests {
		// The route answers as its protocol says: a line of text, or a size for a 409.
		if !strings.HasPrefix(ct, "text/") || rec.Body.Len() == 0 {
			t.Fatalf("%s %s with %q: status %d with Content-Type %q: %q", rt.method, rt.path, body, rec.Code, ct, rec.Body)
		}
		return
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("%s %s with %q: status %d with Content-Type %q", rt.method, rt.path, body, rec.Code, ct)
	}
	var p problem
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Code == "" || p.Status != rec.Code || p.Detail == "" {
		t.Fatalf("%s %s with %q: status %d, problem %s (%v)", rt.method, rt.path, body, rec.Code, rec.Body, err)
	}
}

// TestEndpointBodies_SeedsNever5xx runs the fuzz seeds on every backend, PostgreSQL
// included, where the fuzzer itself does not go.
func TestEndpointBodies_SeedsNever5xx(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice := a.onboard("alice")
		valid, nasty := endpointBodySeeds(a, alice)
		for _, rt := range postRoutes(a.srv) {
			for _, body := range append(valid[rt.path], nasty...) {
				checkEndpointBody(t, a.srv, rt, a.token(alice), []byte(body))
			}
		}
	})
}
