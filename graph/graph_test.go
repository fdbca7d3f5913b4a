package graph

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/uptrace/bun"

	"marketd/store"
	"marketd/store/storetest"
)

// testGraph is the GraphQL endpoint over a private store holding a small demo market, with a
// counter of the SQL statements the store runs.
type testGraph struct {
	t       testing.TB
	store   *store.Store
	http    *httptest.Server
	queries atomic.Int64
}

func (g *testGraph) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }
func (g *testGraph) AfterQuery(ctx context.Context, _ *bun.QueryEvent) {
	if !store.InBackground(ctx) { // the NFT index follows the log on its own
		g.queries.Add(1)
	}
}

func newTestGraph(t testing.TB, b storetest.Backend, nfts int) *testGraph {
	t.Helper()
	return newTestGraphWith(t, b, nfts, storetest.Config(storetest.NewClock(storetest.Epoch)))
}

// newUncachedTestGraph is newTestGraph with the page cache off: every read is a statement, as
// for a collection that keeps trading, so counting them tells what a query costs the store.
func newUncachedTestGraph(t testing.TB, b storetest.Backend, nfts int) *testGraph {
	t.Helper()
	cfg := storetest.Config(storetest.NewClock(storetest.Epoch))
	cfg.PageCacheTTL = -1
	return newTestGraphWith(t, b, nfts, cfg)
}

func newTestGraphWith(t testing.TB, b storetest.Backend, nfts int, cfg store.Config) *testGraph {
	t.Helper()
	s := b.Open(t, cfg)
	if nfts > 0 {
		if _, err := s.SeedDemo(context.Background(), store.DemoOptions{NFTs: nfts, Seed: 3}); err != nil {
			t.Fatal(err)
		}
	}
	g := &testGraph{t: t, store: s}
	s.AddQueryHook(g)
	g.http = httptest.NewServer(NewHandler(s, Options{Logger: slog.New(slog.DiscardHandler), Authenticate: bearer(s)}))
	t.Cleanup(g.http.Close)
	return g
}

// gqlResponse is a GraphQL response with its data left raw.
type gqlResponse struct {
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Path       []any          `json:"path"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
}

// bearer reads a request's token as the service does: the store checks the signed token of a
// session opened by a signed challenge; no Authorization header is unauthenticated.
func bearer(s *store.Store) func(*http.Request) (*store.Auth, error) {
	return func(r *http.Request) (*store.Auth, error) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			return nil, store.Errorf(store.CodeUnauthenticated, "sign in first")
		}
		return s.Authenticate(r.Context(), tok)
	}
}

// query posts a query with variables and returns the response and the number of SQL
// statements it cost.
func (g *testGraph) query(q string, vars map[string]any) (gqlResponse, int64) {
	g.t.Helper()
	return g.queryAs("", q, vars)
}

// queryAs is query with a token ("" for none).
func (g *testGraph) queryAs(token, q string, vars map[string]any) (gqlResponse, int64) {
	g.t.Helper()
	body, _ := json.Marshal(map[string]any{"query": q, "variables": vars})
	before := g.queries.Load()
	req, _ := http.NewRequest("POST", g.http.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out gqlResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		g.t.Fatalf("%d %s: %v", res.StatusCode, raw, err)
	}
	return out, g.queries.Load() - before
}

// data posts a query that must succeed and decodes its data into v.
func (g *testGraph) data(q string, vars map[string]any, v any) int64 {
	g.t.Helper()
	res, n := g.query(q, vars)
	if len(res.Errors) > 0 {
		g.t.Fatalf("query failed: %+v", res.Errors)
	}
	if err := json.Unmarshal(res.Data, v); err != nil {
		g.t.Fatal(err)
	}
	return n
}

// errorCode posts a query that must fail and returns its first error's extensions.code.
func (g *testGraph) errorCode(q string, vars map[string]any) (string, int64) {
	g.t.Helper()
	res, n := g.query(q, vars)
	if len(res.Errors) == 0 {
		g.t.Fatalf("query succeeded: %s", res.Data)
	}
	code, _ := res.Errors[0].Extensions["code"].(string)
	return code, n
}

func (g *testGraph) collectionID(slug string) string {
	g.t.Helper()
	c, err := g.store.CollectionBySlug(context.Background(), slug)
	if err != nil {
		g.t.Fatal(err)
	}
	return c.ID
}

const nftPageQuery = `query($id: ID!, $first: Int!) {
  collection(id: $id) {
    nfts(first: $first) {
      edges { cursor node {
        contractId serial name owner traits { type value }
        collection { collectionId slug name floorPrice volume phases { name active } }
        listing { cid seller price currency expiresAt }
      } }
      pageInfo { hasNextPage endCursor }
    }
  }
}`

func TestGraphQL_NFTPageCostsTheSameStatementsAt20And100Items(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		g := newUncachedTestGraph(t, b, 600)
		id := g.collectionID("ledger-apes")
		type page struct {
			Collection struct {
				NFTs struct {
					Edges []struct {
						Node struct {
							Serial     int
							Collection struct{ CollectionID string }
							Listing    *struct{ Price string }
						}
					}
				}
			}
		}
		g.data(nftPageQuery, map[string]any{"id": id, "first": 5}, new(page)) // warm the service keys
		cost := map[int]int64{}
		for _, n := range []int{20, 100} {
			var p page
			cost[n] = g.data(nftPageQuery, map[string]any{"id": id, "first": n}, &p)
			edges := p.Collection.NFTs.Edges
			if len(edges) != n {
				t.Fatalf("first: %d gave %d NFTs", n, len(edges))
			}
			listed := 0
			for _, e := range edges {
				if e.Node.Collection.CollectionID != id {
					t.Fatalf("NFT %d names collection %q", e.Node.Serial, e.Node.Collection.CollectionID)
				}
				if e.Node.Listing != nil {
					listed++
				}
			}
			if n == 100 && listed == 0 {
				t.Fatal("no listed NFT among 100: the page does not exercise listings")
			}
		}
		t.Logf("statements: %d for 20 NFTs, %d for 100", cost[20], cost[100])
		if cost[20] != cost[100] || cost[20] > 4 {
			t.Fatalf("a page of 20 NFTs cost %d statements, a page of 100 cost %d; want the same small constant", cost[20], cost[100])
		}
	})
}

func TestGraphQL_HistoriesOfAPageAreOneQuery(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		g := newUncachedTestGraph(t, b, 600)
		q := `query($id: ID!, $first: Int!) { collection(id: $id) { nfts(first: $first, filter: {listed: true}) {
			edges { node { serial history(first: 3) { edges { node { kind updateId } } pageInfo { hasNextPage } } } } } } }`
		id := g.collectionID("ledger-apes")
		var p struct {
			Collection struct {
				NFTs struct {
					Edges []struct {
						Node struct {
							Serial  int
							History struct {
								Edges []struct{ Node struct{ Kind string } }
							}
						}
					}
				}
			}
		}
		g.data(q, map[string]any{"id": id, "first": 2}, &p)
		cost := map[int]int64{}
		for _, n := range []int{10, 40} {
			cost[n] = g.data(q, map[string]any{"id": id, "first": n}, &p)
			for _, e := range p.Collection.NFTs.Edges {
				h := e.Node.History.Edges
				// A listed NFT was minted, then listed: its newest event is the listing.
				if len(h) < 2 || h[0].Node.Kind != "LISTED" && h[0].Node.Kind != "SOLD" {
					t.Fatalf("NFT %d history %+v", e.Node.Serial, h)
				}
			}
		}
		if cost[10] != cost[40] {
			t.Fatalf("histories of 10 NFTs cost %d statements, of 40 cost %d", cost[10], cost[40])
		}
	})
}

func TestGraphQL_WalkingACollectionsNFTsByCursorSeesEachOnceInOrder(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		g := newTestGraph(t, b, 300)
		id := g.collectionID("ledger-apes")
		for _, sort := range []string{"SERIAL", "PRICE_ASC", "PRICE_DESC"} {
			q := `query($id: ID!, $after: String) { collection(id: $id) { minted nfts(first: 7, sort: ` + sort + `, after: $after) {
				edges { cursor node { serial listing { price } } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } } }`
			seen := map[int]bool{}
			var after any
			minted := 0
			for pages := 0; ; pages++ {
				var p struct {
					Collection struct {
						Minted int
						NFTs   struct {
							Edges []struct {
								Cursor string
								Node   struct{ Serial int }
							}
							PageInfo struct {
								HasNextPage, HasPreviousPage bool
								StartCursor, EndCursor       *string
							}
						}
					}
				}
				g.data(q, map[string]any{"id": id, "after": after}, &p)
				minted = p.Collection.Minted
				c := p.Collection.NFTs
				if c.PageInfo.HasPreviousPage != (pages > 0) {
					t.Fatalf("%s page %d: hasPreviousPage %v", sort, pages, c.PageInfo.HasPreviousPage)
				}
				for _, e := range c.Edges {
					if seen[e.Node.Serial] {
						t.Fatalf("%s: NFT %d seen twice", sort, e.Node.Serial)
					}
					seen[e.Node.Serial] = true
				}
				if n := len(c.Edges); n > 0 && (*c.PageInfo.StartCursor != c.Edges[0].Cursor || *c.PageInfo.EndCursor != c.Edges[n-1].Cursor) {
					t.Fatalf("%s: page cursors do not match the edges", sort)
				}
				if !c.PageInfo.HasNextPage {
					break
				}
				// Resuming after an edge's cursor, not only the page's end, continues from that edge.
				after = *c.PageInfo.EndCursor
			}
			if len(seen) != minted {
				t.Fatalf("%s: walked %d NFTs of %d", sort, len(seen), minted)
			}
		}
	})
}

func TestGraphQL_LimitsRefuseAQueryBeforeItTouchesTheStore(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		g := newTestGraph(t, b, 0)
		deep := `{ collections { edges { node { nfts { edges { node { collection { nfts { edges { node { collection { nfts { edges { node { serial } } } } } } } } } } } } } } }`
		costly := `{ collections(first: 100) { edges { node { nfts(first: 100) { edges { node { history(first: 100) { edges { node { kind } } } } } } } } } }`
		for name, q := range map[string]string{"too deep": deep, "too costly": costly} {
			code, n := g.errorCode(q, nil)
			if code != string(store.CodeInvalidRequest) || n != 0 {
				t.Errorf("%s: code %q after %d statements; want invalid_request before any", name, code, n)
			}
		}
	})
}

func TestGraphQL_ErrorsCarryTheStoresCodes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		g := newTestGraph(t, b, 60)
		id := g.collectionID("ledger-apes")
		for _, c := range []struct {
			name, query string
			vars        map[string]any
			want        store.Code
		}{
			{"first over 100", `{ collections(first: 101) { edges { cursor } } }`, nil, store.CodeInvalidRequest},
			{"first under 1", `{ collections(first: 0) { edges { cursor } } }`, nil, store.CodeInvalidRequest},
			{"a forged cursor", `{ collections(after: "eyJsIjoiY29sbGVjdGlvbnMifQ.AAAA") { edges { cursor } } }`, nil, store.CodeInvalidCursor},
			{"a cursor of another list", `query($id: ID!, $after: String) { collection(id: $id) { nfts(sort: PRICE_ASC, after: $after) { edges { cursor } } } }`,
				map[string]any{"id": id, "after": g.endCursor(id)}, store.CodeInvalidCursor},
			{"an unknown field", `{ collections { edges { node { colour } } } }`, nil, store.CodeInvalidRequest},
			{"a syntax error", `{ collections { edges `, nil, store.CodeInvalidRequest},
			{"both id and slug", `{ collection(id: "a", slug: "b") { id } }`, nil, store.CodeInvalidRequest},
			{"a price of the wrong precision", `query($id: ID!) { collection(id: $id) { nfts(filter: {minPrice: "1.12345678901"}) { edges { cursor } } } }`,
				map[string]any{"id": id}, store.CodeInvalidRequest},
			{"a price that is not a decimal", `query($id: ID!) { collection(id: $id) { nfts(filter: {maxPrice: "cheap"}) { edges { cursor } } } }`,
				map[string]any{"id": id}, store.CodeInvalidRequest},
			{"an owner that is not a party id", `query($id: ID!) { collection(id: $id) { nfts(filter: {owner: "x"}) { edges { cursor } } } }`,
				map[string]any{"id": id}, store.CodeInvalidRequest},
		} {
			if code, _ := g.errorCode(c.query, c.vars); code != string(c.want) {
				t.Errorf("%s: code %q, want %q", c.name, code, c.want)
			}
		}
		// A body that is not JSON is the request's fault, not the server's.
		res, err := http.Post(g.http.URL+"/graphql", "application/json", strings.NewReader("{nope"))
		if err != nil {
			t.Fatal(err)
		}
		var out gqlResponse
		json.NewDecoder(res.Body).Decode(&out)
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest || len(out.Errors) == 0 || out.Errors[0].Extensions["code"] != string(store.CodeInvalidRequest) {
			t.Fatalf("malformed body: %d %+v", res.StatusCode, out)
		}
		// Unknown things are null, not errors.
		var d struct {
			NFT        *struct{ Serial int }
			Collection *struct{ ID string }
		}
		g.data(`{ nft(contractId: "00nope") { serial } collection(slug: "nope") { id } }`, nil, &d)
		if d.NFT != nil || d.Collection != nil {
			t.Fatalf("unknown ids: %+v", d)
		}
	})
}

// endCursor is the end cursor of the first page of a collection's NFTs sorted by serial.
func (g *testGraph) endCursor(id string) string {
	var p struct {
		Collection struct {
			NFTs struct{ PageInfo struct{ EndCursor string } }
		}
	}
	g.data(`query($id: ID!) { collection(id: $id) { nfts(first: 2) { pageInfo { endCursor } } } }`, map[string]any{"id": id}, &p)
	return p.Collection.NFTs.PageInfo.EndCursor
}

func TestGraphQL_PersistedQueriesRunByHash(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		g := newTestGraph(t, b, 60)
		q := `{ collections(first: 2) { edges { node { slug } } } }`
		hash := sha256Hex(q)
		ext := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hash}}
		post := func(body map[string]any) gqlResponse {
			raw, _ := json.Marshal(body)
			res, err := http.Post(g.http.URL+"/graphql", "application/json", bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var out gqlResponse
			json.NewDecoder(res.Body).Decode(&out)
			return out
		}
		if out := post(map[string]any{"extensions": ext}); len(out.Errors) == 0 || out.Errors[0].Extensions["code"] != "PERSISTED_QUERY_NOT_FOUND" {
			t.Fatalf("unknown hash: %+v", out)
		}
		if out := post(map[string]any{"query": q, "extensions": ext}); len(out.Errors) > 0 {
			t.Fatalf("register: %+v", out.Errors)
		}
		out := post(map[string]any{"extensions": ext})
		if len(out.Errors) > 0 || !strings.Contains(string(out.Data), `"slug"`) {
			t.Fatalf("by hash: %s %+v", out.Data, out.Errors)
		}
	})
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestGraphQL_IntrospectionAndAliasBombsAreRefused: a hundred aliases of a full __schema
// query and three hundred aliases of anything are refused before they run, while GraphiQL's
// one __schema still answers.
func TestGraphQL_IntrospectionAndAliasBombsAreRefused(t *testing.T) {
	g := newTestGraph(t, storetest.Backends()[0], 0) // the limits read the query, not the store
	full := strings.Index(introspectionQuery, "fragment")
	schemaSel, fragment := introspectionQuery[2:full-2], introspectionQuery[full:]
	aliases := func(n int, sel string) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			fmt.Fprintf(&b, " a%d: %s", i, sel)
		}
		b.WriteString(" }")
		return b.String()
	}
	for name, q := range map[string]string{
		"100 full introspections": aliases(100, schemaSel) + "\n" + fragment,
		"300 aliases":             aliases(300, "__typename"),
	} {
		if code, n := g.errorCode(q, nil); code != string(store.CodeInvalidRequest) || n != 0 {
			t.Errorf("%s: code %q after %d statements; want invalid_request before any", name, code, n)
		}
	}
	var s introspected
	g.data(introspectionQuery, nil, &s)
	if len(s.Schema.Types) == 0 {
		t.Fatal("one full introspection answered no types")
	}
}
