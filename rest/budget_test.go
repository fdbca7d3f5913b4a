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
