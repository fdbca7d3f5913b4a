package rest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// withRates sets the read and prepare limits (requests per minute; 0 = unlimited).
func withRates(read, prepare int) apiOption {
	return func(sc *store.Config, rc *Config) { rc.RateRead, rc.RatePrepare = read, prepare }
}

// testKey is a key from storetest that is not onboarded yet, with the request shapes the
// onboarding tests send it in.
type testKey struct{ storetest.Key }

func newTestKey() testKey { return testKey{storetest.NewKey()} }

func (k testKey) onboardBody(hint string) map[string]string {
	return map[string]string{"publicKey": k.PublicBase64(), "hint": hint}
}

// signHash signs the raw bytes of a base64 preparedTransactionHash.
func (k testKey) signHash(t testing.TB, hash64 string) []byte {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(hash64)
	if err != nil {
		t.Fatalf("hash %q: %v", hash64, err)
	}
	return k.Sign(raw)
}

// preparedView is a prepare response as a client reads it.
type preparedView struct {
	PreparedTransaction     string         `json:"preparedTransaction"`
	PreparedTransactionHash string         `json:"preparedTransactionHash"`
	HashingScheme           string         `json:"hashingScheme"`
	ActAs                   string         `json:"actAs"`
	ExpiresAt               int64          `json:"expiresAt"`
	Summary                 map[string]any `json:"summary"`
	PartyID                 string         `json:"partyId"`
}

// prepareOnboarding runs POST /api/parties/onboard/prepare for k and decodes the answer.
func (a *testAPI) prepareOnboarding(k testKey, hint string, opts ...reqOption) preparedView {
	a.t.Helper()
	r := a.do("POST", "/api/parties/onboard/prepare", k.onboardBody(hint), opts...).ok(a.t)
	var p preparedView
	if err := json.Unmarshal(r.body, &p); err != nil {
		a.t.Fatalf("prepare response: %v: %s", err, r.body)
	}
	return p
}

// executeOnboarding posts an execute body with the signature as base64.
func (a *testAPI) executeOnboarding(hash64 string, sig []byte, opts ...reqOption) *testResponse {
	a.t.Helper()
	body := map[string]string{"preparedTransactionHash": hash64, "signature": base64.StdEncoding.EncodeToString(sig)}
	return a.do("POST", "/api/parties/onboard/execute", body, opts...)
}

// problemOf decodes a problem+json body as a generic object.
func problemOf(t testing.TB, r *testResponse) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("problem body: %v: %s", err, r.body)
	}
	return m
}

// wantDetailMentions fails unless the problem's detail contains every one of words.
func wantDetailMentions(t testing.TB, r *testResponse, words ...string) {
	t.Helper()
	detail, _ := problemOf(t, r)["detail"].(string)
	for _, w := range words {
		if !strings.Contains(detail, w) {
			t.Errorf("detail %q does not mention %q", detail, w)
		}
	}
}

// headerInt reads an integer header, failing when it is missing or not an integer.
func headerInt(t testing.TB, h http.Header, name string) int {
	t.Helper()
	v := h.Get(name)
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("header %s = %q, want an integer", name, v)
	}
	return n
}

// rawResponse is a response read by a goroutine that may not call t.Fatal.
type rawResponse struct {
	status int
	header http.Header
	body   []byte
	err    error
}

// postJSON sends body as JSON without touching the test, for use from other goroutines.
func (a *testAPI) postJSON(path string, body any) rawResponse {
	j, err := json.Marshal(body)
	if err != nil {
		return rawResponse{err: err}
	}
	res, err := a.http.Client().Post(a.http.URL+path, "application/json", bytes.NewReader(j))
	if err != nil {
		return rawResponse{err: err}
	}
	defer res.Body.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(res.Body)
	return rawResponse{status: res.StatusCode, header: res.Header, body: buf.Bytes(), err: err}
}

// unixTime is the instant of a Unix-seconds field.
func unixTime(sec int64) time.Time { return time.Unix(sec, 0).UTC() }

func base64Std(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }
