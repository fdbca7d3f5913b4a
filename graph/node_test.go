package graph

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// signIn opens a session for the minter by signing a challenge, as a wallet does, and
// returns its token.
func (m *minter) signIn() string {
	m.t.Helper()
	return m.SignIn(m.t, m.s).Token
}

// wait submits an intent no quote can fill (it asks far more than the pool gives), so it
// stays pending, and returns its cid.
func (m *minter) wait(poolID string) string {
	m.t.Helper()
	prep, err := m.s.PrepareSwap(context.Background(), m.ID, store.SwapTerms{PoolID: poolID, Sell: "CC", Amount: "1", MinReceive: "1000000",
		Deadline: m.s.Now().Add(time.Hour).Unix()})
	if err != nil {
		m.t.Fatal(err)
	}
	var r struct {
		IntentCID string `json:"intentCid"`
	}
	if err := json.Unmarshal(m.execute(store.KindSwapIntent, prep), &r); err != nil || r.IntentCID == "" {
		m.t.Fatalf("intent receipt: %v %+v", err, r)
	}
	return r.IntentCID
}

// nodeFields asks every Node type for its REST id beside the global one.
const nodeFields = `__typename id
	... on Collection { collectionId }
	... on NFT { contractId }
	... on Pool { poolId }
	... on LPQuote { cid }
	... on Intent { intentCid status }`

type nodeAnswer struct {
	Typename     string `json:"__typename"`
	ID           string
	CollectionID string
	ContractID   string
	PoolID       string
	CID          string
	IntentCID    string
	Status       string
}

func TestNode_AnswersEachTypeByTheIDItsListGives(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		g := newTestGraph(t, b, 60)
		pools, err := g.store.Pools(context.Background())
		if err != nil || len(pools) == 0 {
			t.Fatalf("the demo has no pool: %v", err)
		}
		taker := newMinter(t, g.store, "taker")
		intentCID := taker.wait(pools[0].PoolID)
		token := taker.signIn()

		// The lists, as a dashboard reads them.
		var lists struct {
			Collections struct {
				Edges []struct {
					Node struct {
						ID, CollectionID string
						NFTs             struct {
							Edges []struct {
								Node struct{ ID, ContractID string }
							}
						}
					}
				}
			}
			Pools struct {
				Edges []struct {
					Node struct {
						ID, PoolID string
						LPQuotes   struct {
							Edges []struct{ Node struct{ ID, CID string } }
						}
					}
				}
			}
			Intents struct {
				Edges []struct {
					Node struct{ ID, IntentCID, Status string }
				}
			}
		}
		res, _ := g.queryAs(token, `query($p: ID!) {
			collections(first: 3) { edges { node { id collectionId nfts(first: 2) { edges { node { id contractId } } } } } }
			pools(first: 2) { edges { node { id poolId lpQuotes(first: 2) { edges { node { id cid } } } } } }
			intents(taker: $p) { edges { node { id intentCid status } } } }`, map[string]any{"p": taker.ID})
		if len(res.Errors) > 0 {
			t.Fatalf("lists: %+v", res.Errors)
		}
		if err := json.Unmarshal(res.Data, &lists); err != nil {
			t.Fatal(err)
		}
		want := map[string]nodeAnswer{} // by global id
		add := func(a nodeAnswer) {
			if a.ID == "" || want[a.ID].ID != "" {
				t.Fatalf("%s: id %q is empty or given twice", a.Typename, a.ID)
			}
			want[a.ID] = a
		}
		for _, c := range lists.Collections.Edges {
			add(nodeAnswer{Typename: "Collection", ID: c.Node.ID, CollectionID: c.Node.CollectionID})
			for _, n := range c.Node.NFTs.Edges {
				add(nodeAnswer{Typename: "NFT", ID: n.Node.ID, ContractID: n.Node.ContractID})
			}
		}
		for _, p := range lists.Pools.Edges {
			add(nodeAnswer{Typename: "Pool", ID: p.Node.ID, PoolID: p.Node.PoolID})
			for _, q := range p.Node.LPQuotes.Edges {
				add(nodeAnswer{Typename: "LPQuote", ID: q.Node.ID, CID: q.Node.CID})
			}
		}
		for _, i := range lists.Intents.Edges {
			add(nodeAnswer{Typename: "Intent", ID: i.Node.ID, IntentCID: i.Node.IntentCID, Status: i.Node.Status})
		}
		types := map[string]int{}
		for _, a := range want {
			types[a.Typename]++
		}
		if len(types) != 5 || lists.Intents.Edges[0].Node.IntentCID != intentCID || lists.Intents.Edges[0].Node.Status != "PENDING" {
			t.Fatalf("the lists do not give every Node type (a pending intent among them): %v %+v", types, lists.Intents)
		}

		// node(id:) answers each object by exactly that id.
		for id, w := range want {
			var d struct{ Node *nodeAnswer }
			res, _ := g.queryAs(token, `query($id: ID!) { node(id: $id) { `+nodeFields+` } }`, map[string]any{"id": id})
			if len(res.Errors) > 0 || json.Unmarshal(res.Data, &d) != nil || d.Node == nil || *d.Node != w {
				t.Errorf("node(%s): %s %+v, want %+v", id, res.Data, res.Errors, w)
			}
		}

		// A collection's global id reads it where its REST id does.
		for _, c := range lists.Collections.Edges {
			var d struct {
				A, B struct{ ID, CollectionID string }
			}
			g.data(`query($g: ID, $r: ID) { a: collection(id: $g) { id collectionId } b: collection(id: $r) { id collectionId } }`,
				map[string]any{"g": c.Node.ID, "r": c.Node.CollectionID}, &d)
			if d.A != d.B || d.A.ID != c.Node.ID || d.A.CollectionID != c.Node.CollectionID {
				t.Fatalf("collection by global id %+v, by REST id %+v", d.A, d.B)
			}
		}

		// An intent is its taker's: without a token it is unauthenticated, with another
		// party's token it is null.
		intentID := lists.Intents.Edges[0].Node.ID
		q := `query($id: ID!) { node(id: $id) { id } }`
		if res, _ := g.queryAs("", q, map[string]any{"id": intentID}); len(res.Errors) == 0 || res.Errors[0].Extensions["code"] != string(store.CodeUnauthenticated) {
			t.Fatalf("an intent without a token: %s %+v", res.Data, res.Errors)
		}
		other := newMinter(t, g.store, "other").signIn()
		if res, _ := g.queryAs(other, q, map[string]any{"id": intentID}); len(res.Errors) > 0 || string(res.Data) != `{"node":null}` {
			t.Fatalf("another party's intent: %s %+v", res.Data, res.Errors)
		}
	})
}

func TestNodes_KeepsTheOrderOfTheIDsWithNullForUnknownOnes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		g := newTestGraph(t, b, 40)
		var lists struct {
			Collections struct {
				Edges []struct {
					Node struct {
						ID, CollectionID string
						NFTs             struct {
							Edges []struct{ Node struct{ ID string } }
						}
					}
				}
			}
			Pools struct {
				Edges []struct{ Node struct{ ID, PoolID string } }
			}
		}
		g.data(`{ collections(first: 1) { edges { node { id collectionId nfts(first: 1) { edges { node { id } } } } } }
			pools(first: 1) { edges { node { id poolId } } } }`, nil, &lists)
		col := lists.Collections.Edges[0].Node
		nft, pool := col.NFTs.Edges[0].Node.ID, lists.Pools.Edges[0].Node.ID
		b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
		if b64("Pool:"+lists.Pools.Edges[0].Node.PoolID) != pool {
			t.Fatalf("pool id %s is not the base64 of its type and key", pool)
		}
		unknown := []string{
			"",                                     // empty
			"not base64!",                          // not an id at all
			b64("Pool:NO-SUCH-1"),                  // well formed, no such pool
			b64("Wallet:" + col.CollectionID),      // a type that is no Node
			b64("NFT:#1"),                          // an NFT without a collection
			b64("NFT:" + col.CollectionID + "#01"), // another spelling of serial 1
			b64("NFT:" + col.CollectionID + "#999999"), // never minted
			pool + "==", // padding after an unpadded id
			b64("Collection:" + col.CollectionID + " "), // a key with a space more
		}
		ids := []string{nft, unknown[0], pool, unknown[1], col.ID}
		ids = append(ids, unknown[2:]...)
		ids = append(ids, nft)
		var d struct {
			Nodes []*struct {
				Typename string `json:"__typename"`
				ID       string
			}
		}
		res, _ := g.query(`query($ids: [ID!]!) { nodes(ids: $ids) { __typename id } }`, map[string]any{"ids": ids})
		if len(res.Errors) > 0 || json.Unmarshal(res.Data, &d) != nil {
			t.Fatalf("nodes: %s %+v", res.Data, res.Errors)
		}
		known := map[string]string{nft: "NFT", pool: "Pool", col.ID: "Collection"}
		if len(d.Nodes) != len(ids) {
			t.Fatalf("%d ids gave %d nodes", len(ids), len(d.Nodes))
		}
		for i, id := range ids {
			n := d.Nodes[i]
			switch typ, ok := known[id]; {
			case ok && (n == nil || n.ID != id || n.Typename != typ):
				t.Errorf("nodes[%d] (%s): %+v, want the %s", i, id, n, typ)
			case !ok && n != nil:
				t.Errorf("nodes[%d] (%q): %+v, want null", i, id, n)
			}
		}

		// More ids than a page holds is the request's fault.
		many := make([]string, store.MaxPageSize+1)
		for i := range many {
			many[i] = nft
		}
		if code, n := g.errorCode(`query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, map[string]any{"ids": many}); code != string(store.CodeInvalidRequest) || n != 0 {
			t.Fatalf("%d ids: code %q after %d statements, want invalid_request before any", len(many), code, n)
		}
		var full struct{ Nodes []struct{ ID string } }
		g.data(`query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, map[string]any{"ids": many[:store.MaxPageSize]}, &full)
		if len(full.Nodes) != store.MaxPageSize {
			t.Fatalf("%d ids gave %d nodes", store.MaxPageSize, len(full.Nodes))
		}
	})
}
