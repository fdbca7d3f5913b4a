package rest

import (
	"net/http"
	"strings"
	"testing"

	"marketd/store"
	"marketd/store/storetest"
)

// Every route names the limit it spends, or the server refuses to start: a route added
// without one fails closed (the security read's row 3).
func TestRoutes_EveryRouteNamesItsBudgetOrTheServerRefusesToStart(t *testing.T) {
	a := newTestAPI(t, storetest.Backends()[0])
	for _, rt := range a.srv.routes {
		if rt.budget() == "" {
			t.Errorf("%s %s names no budget", rt.method, rt.path)
		}
	}
	routes := append(a.srv.apiRoutes(), route{method: "POST", path: "/api/wallet/something", access: token})
	if err := checkBudgets(routes); err == nil || !strings.Contains(err.Error(), "/api/wallet/something") {
		t.Fatalf("a route without a budget: %v", err)
	}
}

// The unsigned preapproval renew writes a ledger update and a log entry each time: it spends
// the prepare budget, with the RateLimit headers, and is refused 429 past it.
func TestRenew_IsCountedAgainstThePrepareLimit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b, withRates(0, 5))
		u := a.walletUser("alice")
		a.prepareExecute("/api/wallet/nft-preapproval", map[string]string{}, u.Party, bearer(u.tok))
		refused := 0
		for i := range 10 {
			r := a.do("POST", "/api/wallet/preapproval/renew", map[string]string{"kind": "nft"}, bearer(u.tok))
			if r.header.Get("RateLimit-Limit") == "" {
				t.Fatalf("renew %d: no RateLimit-Limit header (status %d)", i, r.status)
			}
			if r.status == http.StatusTooManyRequests {
				r.wantProblem(t, http.StatusTooManyRequests, store.CodeRateLimited)
				refused++
			}
		}
		if refused == 0 {
			t.Fatalf("10 renews under a limit of 5 prepares a minute: none refused")
		}
	})
}

// One client address that signs in as many parties gets no more prepares than its address
// budget: each party's own limit is not a way round it (the security read's row 9).
func TestPrepares_AreLimitedPerClientAddressOverAllItsParties(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b, func(sc *store.Config, rc *Config) { rc.RatePrepare, rc.RatePrepareAddress = 3, 8 })
		refused := 0
		for i := range 5 { // five parties, three prepares each: 15 within their own limits
			p := storetest.Onboard(t, a.store, string(rune('a'+i)))
			tok := a.token(p)
			for range 3 {
				r := a.do("POST", "/api/wallet/tap/prepare", map[string]string{"instrument": "CC", "amount": "1"}, bearer(tok))
				if r.status == http.StatusTooManyRequests {
					r.wantProblem(t, http.StatusTooManyRequests, store.CodeRateLimited)
					refused++
				}
			}
		}
		if refused == 0 {
			t.Fatalf("15 prepares from one address under an address limit of 8: none refused")
		}
	})
}
