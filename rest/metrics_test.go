package rest

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"marketd/store/storetest"
)

// scrape reads /metrics into series -> value, the series written as in the exposition
// format (name{labels} with labels in the order the registry writes them: sorted).
func (a *testAPI) scrape() map[string]float64 {
	a.t.Helper()
	r := a.do("GET", "/metrics", nil).ok(a.t)
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(string(r.body)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			a.t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// After a known sequence of calls, every counter moved by exactly what the calls did.
func TestMetrics_CountersMoveByExactlyTheCallsMade(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b, withRates(4, 0))
		alice, bob := a.onboard("alice"), a.onboard("bob")
		tok := a.token(alice)
		before := a.scrape()

		// 1 sign-in; 3 reads of /me (200) then 2 over the limit of 4 (the 4th read is a 404 by raw path).
		cookie := a.signIn(alice).sessionCookie()
		for range 3 {
			a.do("GET", "/api/auth/me", nil, bearer(tok)).ok(t)
		}
		a.do("GET", "/api/no/such/"+alice.ID, nil)
		for range 2 {
			wantRateLimited(t, a.do("GET", "/api/auth/me", nil, bearer(tok)), 60)
		}
		// A tap and a transfer: 2 prepares ok, 2 executes ok, 2 commits; a replay is an ok
		// execute without a commit; a bad signature and an unknown hash are refused.
		a.prepareExecute("/api/wallet/tap", map[string]string{"instrument": "CC", "amount": "10"}, alice, bearer(tok))
		prep := a.do("POST", "/api/wallet/cc-transfer/prepare", map[string]string{"receiver": bob.ID, "amount": "1"}, bearer(tok)).ok(t)
		hash := prep.str(t, "preparedTransactionHash")
		raw, _ := base64Std(hash)
		exec := func(sig string) *testResponse {
			return a.do("POST", "/api/wallet/cc-transfer/execute", map[string]string{"preparedTransactionHash": hash, "signature": sig}, bearer(tok))
		}
		exec(bob.SignBase64(raw)).wantProblem(t, http.StatusUnauthorized, "invalid_signature")
		exec(alice.SignBase64(raw)).ok(t)
		exec(alice.SignBase64(raw)).ok(t)
		// Rotation through the cookie after 31 minutes (the read window has ended), then logout.
		a.clock.Advance(31 * 60e9)
		rot := a.do("GET", "/api/auth/me", nil, withCookie(cookie)).ok(t)
		a.do("POST", "/api/auth/logout", nil, withCookie(rot.sessionCookie())).ok(t)

		after := a.scrape()
		want := map[string]float64{
			`marketd_signins_total`:             1,
			`marketd_token_rotations_total`:     1,
			`marketd_session_revocations_total`: 1,
			`marketd_http_requests_total{method="GET",route="/api/auth/me",status="200"}`:                     4,
			`marketd_http_requests_total{method="GET",route="/api/auth/me",status="429"}`:                     2,
			`marketd_http_requests_total{method="GET",route="unmatched",status="404"}`:                        1,
			`marketd_http_requests_total{method="POST",route="/api/wallet/cc-transfer/execute",status="200"}`: 2,
			`marketd_http_requests_total{method="POST",route="/api/wallet/cc-transfer/execute",status="401"}`: 1,
			`marketd_http_request_duration_seconds_count{method="GET",route="/api/auth/me"}`:                  6,
			`marketd_ratelimit_rejections_total{scope="read"}`:                                                2,
			`marketd_prepares_total{kind="wallet/tap",outcome="ok"}`:                                          1,
			`marketd_prepares_total{kind="wallet/cc-transfer",outcome="ok"}`:                                  1,
			`marketd_executes_total{kind="wallet/tap",outcome="ok"}`:                                          1,
			`marketd_executes_total{kind="wallet/cc-transfer",outcome="ok"}`:                                  2,
			`marketd_executes_total{kind="wallet/cc-transfer",outcome="bad_signature"}`:                       1,
			`marketd_ledger_commits_total{kind="wallet.tap"}`:                                                 1,
			`marketd_ledger_commits_total{kind="wallet.cc-transfer"}`:                                         1,
			`marketd_ledger_commit_duration_seconds_count`:                                                    2,
			`marketd_ratelimit_fallback`:                                                                      0,
		}
		for series, d := range want {
			if got := after[series] - before[series]; got != d {
				t.Errorf("%s moved by %v, want %v", series, got, d)
			}
		}
		// No raw path or party id is ever a label.
		for series := range after {
			if strings.Contains(series, alice.ID) || strings.Contains(series, "/api/no/such") {
				t.Errorf("a raw path or party id is a label: %s", series)
			}
		}
		for _, name := range []string{"go_sql_open_connections", "go_goroutines"} {
			found := false
			for series := range after {
				found = found || strings.HasPrefix(series, name)
			}
			if !found {
				t.Errorf("no %s series", name)
			}
		}
	})
}
