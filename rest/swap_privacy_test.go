package rest

import (
	"net/http"
	"strings"
	"testing"

	"marketd/store/storetest"
)

// poolFeedTakers reads one page of a pool feed and returns, per intent, the taker it shows
// ("" when the key is absent), failing on a taker key that is present but empty.
func poolFeedTakers(t *testing.T, r *testResponse) map[string]string {
	t.Helper()
	items, _ := r.ok(t).obj(t)["items"].([]any)
	out := map[string]string{}
	for _, it := range items {
		e := it.(map[string]any)
		taker, present := e["taker"]
		if present && (taker == nil || taker == "") {
			t.Fatalf("an entry with a taker key that names nobody: %s", r.body)
		}
		s, _ := taker.(string)
		out[e["intentCid"].(string)] = s
	}
	return out
}

// In the pool's public feeds a fill's taker is shown to that taker only: anonymous callers,
// another party's token and a token that does not authenticate see every fill without it,
// on a first read and on a repeat; the taker's own token (bearer or cookie) sees its own.
func TestSwapPoolFeeds_ShowATakerOnlyToThatTaker(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newSwapMarket(t, b, withRates(1000, 1000))
		lp := m.user("lp", "1000", "")
		alice, bob, carol := m.user("alice", "", "100"), m.user("bob", "", "100"), m.user("carol", "", "")
		m.publish(lp, "ask", "2.6", "100")
		mine := map[string]*walletUser{}
		for _, u := range []*walletUser{alice, bob} {
			r := m.submit(u, "USDCx", "26", "9")
			if r["intentStatus"] != "filled" {
				t.Fatalf("submit: %v", r)
			}
			mine[r["intentCid"].(string)] = u
		}
		cookie := m.signIn(alice.Party).sessionCookie()
		if cookie == nil {
			t.Fatal("sign-in set no session cookie")
		}
		for _, feed := range []string{"/outcomes", "/history"} {
			path := "/api/swap/pool/" + m.pool + feed
			for _, c := range []struct {
				who    string
				viewer *walletUser
				opts   []reqOption
			}{
				{"anonymous", nil, nil},
				{"carol, who never swapped", nil, []reqOption{bearer(carol.tok)}},
				{"a token that does not authenticate", nil, []reqOption{bearer("not-a-token")}},
				{"alice", alice, []reqOption{bearer(alice.tok)}},
				{"alice's cookie", alice, []reqOption{withCookie(cookie)}},
				{"anonymous after alice", nil, nil},
				{"bob", bob, []reqOption{bearer(bob.tok)}},
				{"anonymous again", nil, nil},
			} {
				for range 2 { // a repeat is answered like the first read
					r := m.do("GET", path, nil, c.opts...)
					got := poolFeedTakers(t, r)
					if len(got) != 2 {
						t.Fatalf("%s %s: %d fills, want 2: %s", c.who, feed, len(got), r.body)
					}
					for cid, taker := range got {
						want := ""
						if c.viewer != nil && mine[cid] == c.viewer {
							want = c.viewer.ID
						}
						if taker != want {
							t.Errorf("%s %s: fill %s shows taker %q, want %q", c.who, feed, cid[:8], taker, want)
						}
					}
					if v := strings.Join(r.header.Values("Vary"), ","); !strings.Contains(v, "Authorization") || !strings.Contains(v, "Cookie") {
						t.Errorf("%s %s: Vary %q, want Authorization and Cookie: the answer depends on the token", c.who, feed, v)
					}
				}
			}
		}
		// The taker's own history still names it on every fill.
		r := m.do("GET", "/api/swap/history", nil, bearer(alice.tok))
		for cid, taker := range poolFeedTakers(t, r) {
			if taker != alice.ID {
				t.Errorf("alice's history: fill %s shows taker %q", cid[:8], taker)
			}
		}
		if r.status != http.StatusOK {
			t.Fatal(r.status)
		}
	})
}
