package rest

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// swapMarket is an API with an oracle price, a pool of CC/USDCx with a 30 bps fee, and
// signed-in users funded through the tap.
type swapMarket struct {
	*testAPI
	pool string
}

func newSwapMarket(t *testing.T, b storetest.Backend, opts ...apiOption) *swapMarket {
	t.Helper()
	a := newTestAPI(t, b, opts...)
	ctx := context.Background()
	if _, err := a.store.SetOraclePrice(ctx, store.CC, store.USDCx, "2.5"); err != nil {
		t.Fatal(err)
	}
	p, err := a.store.CreatePool(ctx, store.CC, store.USDCx, 30)
	if err != nil {
		t.Fatal(err)
	}
	return &swapMarket{testAPI: a, pool: p.PoolID}
}

func (m *swapMarket) user(hint, cc, usdcx string) *walletUser {
	m.t.Helper()
	u := m.walletUser(hint)
	if cc != "" {
		m.walletTap(u, store.CC, cc)
	}
	if usdcx != "" {
		m.walletTap(u, store.USDCx, usdcx)
	}
	return u
}

func (m *swapMarket) later(d time.Duration) int64 { return m.clock.Now().Add(d).Unix() }

// publish publishes an LP quote and returns its cid.
func (m *swapMarket) publish(u *walletUser, side, price, size string) string {
	m.t.Helper()
	r := m.prepareExecute("/api/swap/lp-quote", map[string]any{"poolId": m.pool, "side": side, "price": price, "size": size, "expiresAt": m.later(time.Hour)}, u.Party, bearer(u.tok))
	return r["cid"].(string)
}

// submit prepares and submits an intent and returns the receipt.
func (m *swapMarket) submit(u *walletUser, sell, amount, minReceive string) map[string]any {
	m.t.Helper()
	prep := m.do("POST", "/api/swap/prepare", map[string]any{"poolId": m.pool, "sell": sell, "amount": amount, "minReceive": minReceive, "deadline": m.later(time.Hour)}, bearer(u.tok)).ok(m.t)
	hash := prep.str(m.t, "preparedTransactionHash")
	raw, _ := base64.StdEncoding.DecodeString(hash)
	return m.do("POST", "/api/swap/intent/submit", map[string]string{"preparedTransactionHash": hash, "signature": u.SignBase64(raw)}, bearer(u.tok)).ok(m.t).obj(m.t)
}

func TestOpenAPI_RealSwapResponsesMatchTheDocument(t *testing.T) {
	doc := openAPIKinDoc(t)
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newSwapMarket(t, b, withRates(1000, 1000))
		c := openAPIResponseChecker{t: t, doc: doc}
		lp, taker := m.user("lp", "1000", "1000"), m.user("taker", "100", "100")
		// exec signs prep as u and posts it to path (an execute or the submit).
		exec := func(path string, prep *testResponse, u *walletUser) *testResponse {
			t.Helper()
			hash := prep.ok(t).str(t, "preparedTransactionHash")
			raw, _ := base64.StdEncoding.DecodeString(hash)
			r := m.do("POST", path, map[string]string{"preparedTransactionHash": hash, "signature": u.SignBase64(raw)}, bearer(u.tok))
			c.check("POST", path, r)
			return r
		}
		pool := "/api/swap/pool/{poolId}"
		at := func(tmpl string) string { return "/api/swap/pool/" + m.pool + tmpl[len(pool):] }

		// LP quotes: publish both sides, list in pages, cancel one.
		var cids []string
		for _, q := range []map[string]any{
			{"poolId": m.pool, "side": "bid", "price": "2.4", "size": "5", "expiresAt": m.later(time.Hour)},
			{"poolId": m.pool, "side": "bid", "price": "2.45", "size": "4", "expiresAt": m.later(time.Hour)},
			{"poolId": m.pool, "side": "ask", "price": "2.6", "size": "100", "expiresAt": m.later(time.Hour)},
			{"poolId": m.pool, "side": "ask", "price": "3", "size": "1", "expiresAt": m.later(time.Hour)},
		} {
			prep := m.do("POST", "/api/swap/lp-quote/prepare", q, bearer(lp.tok))
			c.checkPrepared("POST", "/api/swap/lp-quote/prepare", prep)
			cids = append(cids, exec("/api/swap/lp-quote/execute", prep, lp).ok(t).str(t, "cid"))
			m.clock.Advance(time.Second)
		}
		active := m.do("GET", "/api/swap/lp-quote/active?limit=2", nil, bearer(lp.tok))
		c.check("GET", "/api/swap/lp-quote/active", active)
		next, _ := active.ok(t).obj(t)["cursor"].(string)
		if next == "" {
			t.Fatalf("four quotes in pages of two: no cursor: %s", active.body)
		}
		c.check("GET", "/api/swap/lp-quote/active", m.do("GET", "/api/swap/lp-quote/active?limit=2&cursor="+url.QueryEscape(next), nil, bearer(lp.tok)).ok(t))
		cancel := m.do("POST", "/api/swap/lp-quote/cancel/prepare", map[string]string{"cid": cids[3]}, bearer(lp.tok))
		c.checkPrepared("POST", "/api/swap/lp-quote/cancel/prepare", cancel)
		exec("/api/swap/lp-quote/cancel/execute", cancel, lp).ok(t)
		exec("/api/swap/lp-quote/cancel/execute", cancel, lp).ok(t) // a replay

		// Quotes and pool reads.
		for _, path := range []string{"/api/swap/quote?sell=CC&amount=6", "/api/swap/quote?sell=USDCx&amount=26&poolId=" + m.pool, "/api/swap/quote?sell=CC&amount=1000"} {
			c.check("GET", "/api/swap/quote", m.do("GET", path, nil).ok(t))
		}
		c.check("GET", "/api/swap/pools", m.do("GET", "/api/swap/pools", nil).ok(t))

		// An intent that fills across two quotes, one that waits and is cancelled.
		prep := m.do("POST", "/api/swap/prepare", map[string]any{"poolId": m.pool, "sell": "CC", "amount": "6", "minReceive": "14.5", "deadline": m.later(time.Hour)}, bearer(taker.tok))
		c.checkPrepared("POST", "/api/swap/prepare", prep)
		filled := exec("/api/swap/intent/submit", prep, taker).ok(t).obj(t)
		if filled["intentStatus"] != "filled" {
			t.Fatalf("submit: %v", filled)
		}
		status := m.do("GET", "/api/swap/intent/status?intentCid="+filled["intentCid"].(string), nil, bearer(taker.tok))
		c.check("GET", "/api/swap/intent/status", status)
		if st := status.ok(t).obj(t); st["received"] != "14.5562" || len(st["fills"].([]any)) != 2 {
			t.Fatalf("status: %s", status.body)
		}
		prep = m.do("POST", "/api/swap/prepare", map[string]any{"poolId": m.pool, "sell": "USDCx", "amount": "50", "minReceive": "25", "deadline": m.later(time.Hour)}, bearer(taker.tok))
		c.checkPrepared("POST", "/api/swap/prepare", prep)
		pending := exec("/api/swap/intent/submit", prep, taker).ok(t).obj(t)
		if pending["intentStatus"] != "pending" {
			t.Fatalf("submit: %v", pending)
		}
		c.check("GET", "/api/swap/intent/active", m.do("GET", "/api/swap/intent/active", nil, bearer(taker.tok)).ok(t))
		c.check("GET", "/api/swap/intent/status", m.do("GET", "/api/swap/intent/status?intentCid="+pending["intentCid"].(string), nil, bearer(taker.tok)).ok(t))
		if got := m.walletBalance(taker)["USDCx"]; got != "64.5562/50/1" {
			t.Errorf("taker USDCx with 50 locked: %s", got)
		}
		cancelIntent := m.do("POST", "/api/swap/intent/cancel/prepare", map[string]string{"intentCid": pending["intentCid"].(string)}, bearer(taker.tok))
		c.checkPrepared("POST", "/api/swap/intent/cancel/prepare", cancelIntent)
		exec("/api/swap/intent/cancel/execute", cancelIntent, taker).ok(t)
		c.check("POST", "/api/swap/intent/cancel/prepare", m.do("POST", "/api/swap/intent/cancel/prepare", map[string]string{"intentCid": pending["intentCid"].(string)}, bearer(taker.tok)))

		// History, outcomes, aggregates and the fee claim.
		c.check("GET", "/api/swap/history", m.do("GET", "/api/swap/history?taker="+url.QueryEscape(taker.ID), nil, bearer(taker.tok)).ok(t))
		for _, tmpl := range []string{pool, pool + "/aggregates", pool + "/outcomes", pool + "/history"} {
			c.check("GET", tmpl, m.do("GET", at(tmpl), nil).ok(t))
		}
		claim := m.do("POST", "/api/swap/lp-quote/claim-fees/prepare", map[string]string{"poolId": m.pool}, bearer(lp.tok))
		c.checkPrepared("POST", "/api/swap/lp-quote/claim-fees/prepare", claim)
		if r := exec("/api/swap/lp-quote/claim-fees/execute", claim, lp).ok(t).obj(t); fmt.Sprint(r["claimed"]) != "map[CC:0 USDCx:0.0438]" {
			t.Errorf("claimed: %v", r)
		}

		// Errors every swap route documents.
		for _, tc := range []struct{ method, tmpl, path string }{
			{"GET", "/api/swap/quote", "/api/swap/quote?sell=EUR&amount=1"},
			{"GET", "/api/swap/quote", "/api/swap/quote?sell=CC&amount=1&poolId=nope"},
			{"GET", pool, "/api/swap/pool/nope"},
			{"GET", pool + "/aggregates", "/api/swap/pool/nope/aggregates"},
			{"GET", pool + "/history", at(pool+"/history") + "?cursor=bogus"},
			{"GET", pool + "/outcomes", at(pool+"/outcomes") + "?limit=0"},
			{"GET", "/api/swap/history", "/api/swap/history?taker=" + url.QueryEscape(taker.ID)},
			{"GET", "/api/swap/intent/status", "/api/swap/intent/status?intentCid=" + filled["intentCid"].(string)},
			{"GET", "/api/swap/intent/active", "/api/swap/intent/active"},
			{"GET", "/api/swap/lp-quote/active", "/api/swap/lp-quote/active?lp=" + url.QueryEscape(taker.ID)},
		} {
			tok := lp.tok
			if tc.tmpl == "/api/swap/intent/active" {
				tok = ""
			}
			var opts []reqOption
			if tok != "" {
				opts = append(opts, bearer(tok))
			}
			r := m.do(tc.method, tc.path, nil, opts...)
			c.check(tc.method, tc.tmpl, r)
			if r.status < 400 {
				t.Errorf("%s answered %d: %s", tc.path, r.status, r.body)
			}
		}
	})
}

// swapState is what a refused request must leave as it was: every user's balances, the
// LP's open quotes and the taker's open intents.
func (m *swapMarket) swapState(users ...*walletUser) string {
	m.t.Helper()
	out := ""
	for _, u := range users {
		out += fmt.Sprint(m.walletBalance(u))
		out += string(m.do("GET", "/api/swap/lp-quote/active?limit=100", nil, bearer(u.tok)).ok(m.t).body)
		out += string(m.do("GET", "/api/swap/intent/active?limit=100", nil, bearer(u.tok)).ok(m.t).body)
	}
	return out
}

func TestSwap_BadInputsGetTheirDocumentedProblemAndChangeNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newSwapMarket(t, b)
		lp, taker := m.user("lp", "1000", "1000"), m.user("taker", "100", "100")
		quote := m.publish(lp, "ask", "2.5", "4")
		filled := m.submit(taker, "USDCx", "10", "3")["intentCid"].(string)
		pending := m.submit(taker, "CC", "5", "100")["intentCid"].(string)
		intent := func(extra map[string]any) map[string]any {
			body := map[string]any{"poolId": m.pool, "sell": "CC", "amount": "1", "minReceive": "0", "deadline": m.later(time.Hour)}
			for k, v := range extra {
				body[k] = v
			}
			return body
		}
		lpQuote := func(extra map[string]any) map[string]any {
			body := map[string]any{"poolId": m.pool, "side": "bid", "price": "2.4", "size": "1", "expiresAt": m.later(time.Hour)}
			for k, v := range extra {
				body[k] = v
			}
			return body
		}
		before := m.swapState(lp, taker)
		for _, tc := range []struct {
			name, method, path string
			body               any
			tok                string
			status             int
			code               store.Code
		}{
			{"unknown pool", "POST", "/api/swap/prepare", intent(map[string]any{"poolId": "CC-USDCx-99"}), taker.tok, 404, store.CodeNotFound},
			{"unknown pool for a quote", "POST", "/api/swap/lp-quote/prepare", lpQuote(map[string]any{"poolId": "nope"}), lp.tok, 404, store.CodeNotFound},
			{"unknown pool read", "GET", "/api/swap/pool/nope/aggregates", nil, "", 404, store.CodeNotFound},
			{"an instrument the pool does not trade", "POST", "/api/swap/prepare", intent(map[string]any{"sell": "EUR"}), taker.tok, 400, store.CodeInvalidRequest},
			{"deadline in the past", "POST", "/api/swap/prepare", intent(map[string]any{"deadline": m.later(-time.Minute)}), taker.tok, 400, store.CodeInvalidRequest},
			{"deadline too far", "POST", "/api/swap/prepare", intent(map[string]any{"deadline": m.later(40 * 24 * time.Hour)}), taker.tok, 400, store.CodeInvalidRequest},
			{"quote expiry in the past", "POST", "/api/swap/lp-quote/prepare", lpQuote(map[string]any{"expiresAt": m.later(-time.Second)}), lp.tok, 400, store.CodeInvalidRequest},
			{"CC amount of 11 decimals", "POST", "/api/swap/prepare", intent(map[string]any{"amount": "0.00000000001"}), taker.tok, 400, store.CodeInvalidRequest},
			{"USDCx amount of 7 decimals", "POST", "/api/swap/prepare", intent(map[string]any{"sell": "USDCx", "amount": "1.0000001"}), taker.tok, 400, store.CodeInvalidRequest},
			{"minReceive of 7 decimals", "POST", "/api/swap/prepare", intent(map[string]any{"minReceive": "0.0000001"}), taker.tok, 400, store.CodeInvalidRequest},
			{"amount as a number", "POST", "/api/swap/prepare", intent(map[string]any{"amount": 1}), taker.tok, 400, store.CodeInvalidRequest},
			{"zero amount", "POST", "/api/swap/prepare", intent(map[string]any{"amount": "0"}), taker.tok, 400, store.CodeInvalidRequest},
			{"price of 7 decimals", "POST", "/api/swap/lp-quote/prepare", lpQuote(map[string]any{"price": "2.4000001"}), lp.tok, 400, store.CodeInvalidRequest},
			{"side neither ask nor bid", "POST", "/api/swap/lp-quote/prepare", lpQuote(map[string]any{"side": "buy"}), lp.tok, 400, store.CodeInvalidRequest},
			{"more than the balance", "POST", "/api/swap/prepare", intent(map[string]any{"amount": "1000"}), taker.tok, 409, store.CodeInsufficientFunds},
			{"cancel of a filled intent", "POST", "/api/swap/intent/cancel/prepare", map[string]string{"intentCid": filled}, taker.tok, 409, store.CodeConflict},
			{"cancel of another party's intent", "POST", "/api/swap/intent/cancel/prepare", map[string]string{"intentCid": pending}, lp.tok, 403, store.CodePartyMismatch},
			{"status of another party's intent", "GET", "/api/swap/intent/status?intentCid=" + pending, nil, lp.tok, 403, store.CodePartyMismatch},
			{"cancel of another party's quote", "POST", "/api/swap/lp-quote/cancel/prepare", map[string]string{"cid": quote}, taker.tok, 403, store.CodePartyMismatch},
			{"a quote acting as another LP", "POST", "/api/swap/lp-quote/prepare", lpQuote(map[string]any{"lp": lp.ID}), taker.tok, 403, store.CodePartyMismatch},
			{"another taker's open intents", "GET", "/api/swap/intent/active?taker=" + url.QueryEscape(taker.ID), nil, lp.tok, 403, store.CodePartyMismatch},
			{"unknown intent", "POST", "/api/swap/intent/cancel/prepare", map[string]string{"intentCid": "00" + fmt.Sprintf("%064d", 0)}, taker.tok, 404, store.CodeNotFound},
			{"no fees to claim", "POST", "/api/swap/lp-quote/claim-fees/prepare", map[string]string{"poolId": m.pool}, taker.tok, 409, store.CodeConflict},
			{"quote without a token", "POST", "/api/swap/lp-quote/prepare", lpQuote(nil), "", 401, store.CodeUnauthenticated},
		} {
			var opts []reqOption
			if tc.tok != "" {
				opts = append(opts, bearer(tc.tok))
			}
			r := m.do(tc.method, tc.path, tc.body, opts...)
			if r.status != tc.status || problemOf(t, r)["code"] != string(tc.code) {
				t.Errorf("%s: %d %s, want %d %s", tc.name, r.status, r.body, tc.status, tc.code)
			}
		}
		if after := m.swapState(lp, taker); after != before {
			t.Errorf("refused requests changed the state:\nbefore %s\nafter  %s", before, after)
		}
		if _, err := m.store.CreatePool(context.Background(), store.CC, store.CC, 30); store.ErrorCode(err) != store.CodeInvalidRequest {
			t.Errorf("a pool of CC for CC: %v, want invalid_request", err)
		}
		if _, err := m.store.SetOraclePrice(context.Background(), store.USDCx, store.USDCx, "1"); store.ErrorCode(err) != store.CodeInvalidRequest {
			t.Errorf("an oracle price of USDCx in USDCx: %v, want invalid_request", err)
		}
	})
}

func TestSwapPools_ArePagedByLimitAndCursor(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newSwapMarket(t, b)
		ctx := context.Background()
		want := []string{m.pool}
		for _, fee := range []int{5, 100} {
			p, err := m.store.CreatePool(ctx, store.CC, store.USDCx, fee)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, p.PoolID)
		}
		var got []string
		path := "/api/swap/pools?limit=2"
		for pages := 0; ; pages++ {
			if pages > 3 {
				t.Fatal("the pools do not end")
			}
			page := m.do("GET", path, nil).ok(t).obj(t)
			items := page["items"].([]any)
			if len(items) > 2 {
				t.Fatalf("limit 2 gave %d pools", len(items))
			}
			for _, it := range items {
				got = append(got, it.(map[string]any)["poolId"].(string))
			}
			cursor, _ := page["cursor"].(string)
			if cursor == "" {
				break
			}
			path = "/api/swap/pools?limit=2&cursor=" + url.QueryEscape(cursor)
		}
		if fmt.Sprint(got) != fmt.Sprint(sortedCopy(want)) {
			t.Errorf("paged pools %v, want every pool once, by id: %v", got, sortedCopy(want))
		}
		m.do("GET", "/api/swap/pools?limit=101", nil).wantProblem(t, 400, store.CodeInvalidRequest)
		m.do("GET", "/api/swap/pools?cursor=nope", nil).wantProblem(t, 400, store.CodeInvalidCursor)
	})
}

func sortedCopy(xs []string) []string {
	out := append([]string(nil), xs...)
	slices.Sort(out)
	return out
}
