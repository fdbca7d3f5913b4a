package graph

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/coder/websocket"

	"marketd/store"
	"marketd/store/storetest"
)

const poolFeedsQuery = `query($p: ID!) { pool(id: $p) {
  outcomes(first: 100) { edges { node { intentCid taker } } }
  history(first: 100) { edges { node { intentCid taker } } }
} }`

// fillsOf is who swapped each fill of the pool, from the store's taker histories.
func fillsOf(t *testing.T, s *store.Store, takers ...*minter) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range takers {
		page, err := s.SwapHistory(context.Background(), store.SwapHistoryFilter{Taker: m.ID}, store.PageRequest{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range page.Items {
			out[v.IntentCID] = m.ID
		}
	}
	return out
}

// In Pool.outcomes and Pool.history a fill's taker is null unless the request's token is the
// taker's: anonymous, another party's token and a token that does not authenticate see null
// on every fill, on a first answer and on a repeat the response cache could serve; the taker
// sees its own fills' taker and no one else's.
func TestGraphQL_PoolFeedsShowATakerOnlyToThatTaker(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		g := newTestGraph(t, b, 40)
		pool := demoPool(t, g.store)
		alice, bob, carol := newMinter(t, g.store, "alice"), newMinter(t, g.store, "bob"), newMinter(t, g.store, "carol")
		alice.swap(pool, "1")
		bob.swap(pool, "1")
		alice.swap(pool, "2")
		fills := fillsOf(t, g.store, alice, bob)
		if len(fills) != 3 {
			t.Fatalf("%d fills, want 3", len(fills))
		}
		aliceTok, bobTok, carolTok := alice.signIn(), bob.signIn(), carol.signIn()
		for _, c := range []struct{ who, token, viewer string }{
			{"anonymous", "", ""},
			{"carol, who never swapped", carolTok, ""},
			{"a token that does not authenticate", "not-a-token", ""},
			{"alice", aliceTok, alice.ID},
			{"anonymous after alice", "", ""},
			{"bob", bobTok, bob.ID},
			{"anonymous again", "", ""},
		} {
			for range 2 { // the repeat is one the response cache could answer
				res, _ := g.queryAs(c.token, poolFeedsQuery, map[string]any{"p": pool})
				if len(res.Errors) > 0 {
					t.Fatalf("%s: %+v", c.who, res.Errors)
				}
				var d struct {
					Pool map[string]struct {
						Edges []struct {
							Node struct {
								IntentCid string
								Taker     *string
							}
						}
					}
				}
				if err := json.Unmarshal(res.Data, &d); err != nil {
					t.Fatal(err)
				}
				for feed, conn := range d.Pool {
					mine := 0
					for _, e := range conn.Edges {
						n := e.Node
						want := ""
						if c.viewer != "" && fills[n.IntentCid] == c.viewer {
							want, mine = c.viewer, mine+1
						}
						if got := deref(n.Taker); got != want || (want == "" && n.Taker != nil) {
							t.Errorf("%s, %s: fill %.8s shows taker %q, want %q", c.who, feed, n.IntentCid, got, want)
						}
					}
					if c.viewer != "" && mine == 0 {
						t.Errorf("%s, %s: none of the viewer's fills listed", c.who, feed)
					}
				}
			}
		}
	})
}

// demoPool is the id of the demo market's first pool.
func demoPool(t *testing.T, s *store.Store) string {
	t.Helper()
	pools, err := s.Pools(context.Background())
	if err != nil || len(pools) == 0 {
		t.Fatalf("the demo has no pool: %v", err)
	}
	return pools[0].PoolID
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// The poolOutcomes subscription keeps the same rule: a subscriber whose token is alice's sees
// alice's taker on her fills and null on bob's; an anonymous subscriber sees null on both.
func TestSubscription_PoolOutcomesShowATakerOnlyToThatTaker(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		g := newTestGraph(t, b, 40)
		pool := demoPool(t, g.store)
		alice, bob := newMinter(t, g.store, "alice"), newMinter(t, g.store, "bob")
		subs := map[string]*wsClient{"anonymous": dialGraphQL(t, g.http.URL), "alice": dialGraphQLAs(t, g.http.URL, alice.signIn())}
		for _, c := range subs {
			c.subscribe("1", outcomesQuery, map[string]any{"p": pool})
		}
		time.Sleep(300 * time.Millisecond)
		alice.swap(pool, "1")
		bob.swap(pool, "1")
		fills := fillsOf(t, g.store, alice, bob)
		for who, c := range subs {
			for i := range 2 {
				ev := c.next(10 * time.Second)
				if ev == nil {
					t.Fatalf("%s: outcome %d did not arrive", who, i)
				}
				out := ev["poolOutcomes"].(map[string]any)["outcome"].(map[string]any)
				want := any(nil)
				if who == "alice" && fills[out["intentCid"].(string)] == alice.ID {
					want = alice.ID
				}
				if out["taker"] != want {
					t.Errorf("%s: fill %.8s shows taker %v, want %v", who, out["intentCid"], out["taker"], want)
				}
			}
			c.conn.Close(websocket.StatusNormalClosure, "")
		}
	})
}
