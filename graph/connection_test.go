package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"marketd/store"
	"marketd/store/storetest"
)

// connection is one page of any connection, its nodes left raw to compare.
type connection struct {
	Edges []struct {
		Cursor string
		Node   json.RawMessage
	}
	PageInfo struct {
		HasNextPage, HasPreviousPage bool
		StartCursor, EndCursor       *string
	}
	TotalCount *int
}

func (c connection) cursors() []string {
	out := make([]string, len(c.Edges))
	for i, e := range c.Edges {
		out[i] = e.Cursor
	}
	return out
}

func (c connection) nodes() []string {
	out := make([]string, len(c.Edges))
	for i, e := range c.Edges {
		out[i] = string(e.Node)
	}
	return out
}

// connCase is a connection to page through: query has $first/$after/$last/$before wired to
// the connection, which the response holds at path.
type connCase struct {
	name  string
	query string
	vars  map[string]any
	path  []string
	size  int
}

const pageVars = `$first: Int, $after: String, $last: Int, $before: String`
const pageArgs = `first: $first, after: $after, last: $last, before: $before`
const pageShape = `pageInfo { hasNextPage hasPreviousPage startCursor endCursor }`

// page reads one page of c with the paging arguments args (the others null).
func (g *testGraph) page(c connCase, args map[string]any) connection {
	g.t.Helper()
	vars := map[string]any{"first": nil, "after": nil, "last": nil, "before": nil}
	for k, v := range c.vars {
		vars[k] = v
	}
	for k, v := range args {
		vars[k] = v
	}
	var raw json.RawMessage
	g.data(c.query, vars, &raw)
	for _, step := range c.path {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			g.t.Fatal(err)
		}
		raw = m[step]
	}
	var out connection
	if err := json.Unmarshal(raw, &out); err != nil {
		g.t.Fatal(err)
	}
	if n := len(out.Edges); n > 0 && (out.PageInfo.StartCursor == nil || *out.PageInfo.StartCursor != out.Edges[0].Cursor ||
		out.PageInfo.EndCursor == nil || *out.PageInfo.EndCursor != out.Edges[n-1].Cursor) {
		g.t.Fatalf("%s: startCursor/endCursor do not name the first and last edges", c.name)
	}
	return out
}

// walk pages through c to its end, forwards (first/after) or backwards (last/before), and
// returns the pages in the order read.
func (g *testGraph) walk(c connCase, backward bool) []connection {
	g.t.Helper()
	var pages []connection
	args := map[string]any{"first": c.size}
	if backward {
		args = map[string]any{"last": c.size}
	}
	for {
		p := g.page(c, args)
		pages = append(pages, p)
		more := p.PageInfo.HasNextPage
		if backward {
			more = p.PageInfo.HasPreviousPage
		}
		if !more || len(pages) > 500 {
			return pages
		}
		if backward {
			args["before"] = *p.PageInfo.StartCursor
		} else {
			args["after"] = *p.PageInfo.EndCursor
		}
	}
}

func joined(pages []connection, reverse bool) (nodes, cursors []string) {
	if reverse {
		pages = slices.Clone(pages)
		slices.Reverse(pages)
	}
	for _, p := range pages {
		nodes = append(nodes, p.nodes()...)
		cursors = append(cursors, p.cursors()...)
	}
	return nodes, cursors
}

func TestConnection_LastBeforeWalksTheForwardPagesBackExactly(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		g := newTestGraph(t, b, 150)
		ctx := context.Background()
		id := g.collectionID("ledger-apes")
		pools, err := g.store.PoolsPage(ctx, store.PageRequest{})
		if err != nil || len(pools.Items) == 0 {
			t.Fatalf("no pool in the demo: %v", err)
		}
		// The NFT with the longest history among the first ones.
		nfts, err := g.store.NFTs(ctx, id, store.NFTFilter{}, store.SortSerial, store.PageRequest{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		contract, longest := "", 0
		for _, n := range nfts.Items {
			h, err := g.store.NFTHistory(ctx, n.Ref(), store.PageRequest{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			if len(h.Items) > longest {
				contract, longest = n.ContractID, len(h.Items)
			}
		}
		if longest < 3 {
			t.Fatalf("no NFT has a history of 3 events (longest %d)", longest)
		}
		collections := func(sort string) connCase {
			return connCase{name: "collections " + sort, size: 2, path: []string{"conn"},
				query: `query(` + pageVars + `) { conn: collections(sort: ` + sort + `, ` + pageArgs + `) { edges { cursor node { id } } ` + pageShape + ` } }`}
		}
		nftsBy := func(sort, filter string, size int) connCase {
			return connCase{name: "nfts " + sort + " " + filter, size: size, vars: map[string]any{"id": id}, path: []string{"collection", "conn"},
				query: `query($id: ID!, ` + pageVars + `) { collection(id: $id) { conn: nfts(sort: ` + sort + `, filter: {` + filter + `}, ` + pageArgs + `) {
					edges { cursor node { serial listing { price } } } ` + pageShape + ` } } }`}
		}
		cases := []connCase{
			collections("NEWEST"), collections("VOLUME"), collections("FLOOR"),
			nftsBy("SERIAL", "", 9), nftsBy("PRICE_ASC", "", 9), nftsBy("PRICE_DESC", "", 8), nftsBy("PRICE_ASC", "listed: true", 2),
			{name: "nft history", size: 1, vars: map[string]any{"c": contract}, path: []string{"nft", "conn"},
				query: `query($c: ID!, ` + pageVars + `) { nft(contractId: $c) { conn: history(` + pageArgs + `) { edges { cursor node { updateId kind } } ` + pageShape + ` } } }`},
			{name: "pool outcomes", size: 2, vars: map[string]any{"p": pools.Items[0].PoolID}, path: []string{"pool", "conn"},
				query: `query($p: ID!, ` + pageVars + `) { pool(id: $p) { conn: outcomes(` + pageArgs + `) { edges { cursor node { intentCid } } ` + pageShape + ` } } }`},
			{name: "pools", size: 1, path: []string{"conn"},
				query: `query(` + pageVars + `) { conn: pools(` + pageArgs + `) { edges { cursor node { poolId } } ` + pageShape + ` } }`},
		}
		for _, c := range cases {
			func() {
				forward, backward := g.walk(c, false), g.walk(c, true)
				fnodes, fcursors := joined(forward, false)
				bnodes, bcursors := joined(backward, true)
				if len(fnodes) == 0 {
					t.Fatal(c.name, ": an empty list pages nothing")
				}
				if !slices.Equal(fnodes, bnodes) || !slices.Equal(fcursors, bcursors) {
					t.Fatalf("%s: forwards %v\nbackwards, in order, %v", c.name, fnodes, bnodes)
				}
				for i, p := range backward {
					// From the end: nothing follows the first page read; each later one was asked before a cursor.
					if p.PageInfo.HasNextPage != (i > 0) || p.PageInfo.HasPreviousPage != (i < len(backward)-1) {
						t.Fatalf("%s: backward page %d of %d: hasNextPage %v hasPreviousPage %v", c.name, i, len(backward), p.PageInfo.HasNextPage, p.PageInfo.HasPreviousPage)
					}
				}
				// last/before from each forward page's start cursor is the page before it, exactly.
				for i := len(forward) - 1; i > 0; i-- {
					p := g.page(c, map[string]any{"last": c.size, "before": *forward[i].PageInfo.StartCursor})
					want := forward[i-1]
					if !slices.Equal(p.nodes(), want.nodes()) || !slices.Equal(p.cursors(), want.cursors()) {
						t.Fatalf("%s: before forward page %d: %v, want %v", c.name, i, p.nodes(), want.nodes())
					}
					if !p.PageInfo.HasNextPage || p.PageInfo.HasPreviousPage != (i-1 > 0) {
						t.Fatalf("%s: before forward page %d: hasNextPage %v hasPreviousPage %v", c.name, i, p.PageInfo.HasNextPage, p.PageInfo.HasPreviousPage)
					}
				}
				// A backward page's cursor reads on forwards: after the last page's start comes the rest.
				last := backward[0]
				p := g.page(c, map[string]any{"first": c.size, "after": *last.PageInfo.StartCursor})
				if !slices.Equal(p.nodes(), last.nodes()[1:]) || p.PageInfo.HasNextPage || !p.PageInfo.HasPreviousPage {
					t.Fatalf("%s: after the last page's start cursor: %v (%+v), want %v", c.name, p.nodes(), p.PageInfo, last.nodes()[1:])
				}
				// And a forward cursor reads backwards: before the first page's end comes its start.
				first := forward[0]
				p = g.page(c, map[string]any{"last": c.size, "before": *first.PageInfo.EndCursor})
				if want := first.nodes()[:len(first.Edges)-1]; !slices.Equal(p.nodes(), want) || p.PageInfo.HasPreviousPage {
					t.Fatalf("%s: before the first page's end cursor: %v (%+v), want %v", c.name, p.nodes(), p.PageInfo, want)
				}
			}()
		}
	})
}

func TestConnection_PagingArgumentsOutOfRangeOrMixedAreInvalidRequests(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		g := newTestGraph(t, b, 60)
		end := g.endCursor(g.collectionID("ledger-apes"))
		for _, c := range []struct{ name, args string }{
			{"last over 100", `last: 101`},
			{"last under 1", `last: 0`},
			{"first and last", `first: 2, last: 2`},
			{"after and before", fmt.Sprintf(`after: %q, before: %q`, end, end)},
			{"first with before", fmt.Sprintf(`first: 2, before: %q`, end)},
			{"last with after", fmt.Sprintf(`last: 2, after: %q`, end)},
		} {
			for _, field := range []string{"collections", "pools"} {
				q := `{ ` + field + `(` + c.args + `) { edges { cursor } } }`
				if code, n := g.errorCode(q, nil); code != string(store.CodeInvalidRequest) || n != 0 {
					t.Errorf("%s on %s: code %q after %d statements, want invalid_request before any", c.name, field, code, n)
				}
			}
		}
		// A cursor of one list is not another's, backwards too.
		q := `query($b: String) { collections(last: 2, before: $b) { edges { cursor } } }`
		if code, _ := g.errorCode(q, map[string]any{"b": end}); code != string(store.CodeInvalidCursor) {
			t.Errorf("an NFT cursor before collections: code %q, want invalid_cursor", code)
		}
	})
}

func TestConnection_TotalCountIsTheRealCountWhereOffered(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		g := newTestGraph(t, b, 150)
		id := g.collectionID("ledger-apes")
		count := func(c connCase) (int, *int) {
			t.Helper()
			n := 0
			var total *int
			for i, p := range g.walk(c, false) {
				n += len(p.Edges)
				if i > 0 && (p.TotalCount == nil) != (total == nil) || p.TotalCount != nil && total != nil && *p.TotalCount != *total {
					t.Fatalf("%s: totalCount changes from page to page", c.name)
				}
				total = p.TotalCount
			}
			return n, total
		}
		for _, c := range []connCase{
			{name: "collections", size: 2, path: []string{"conn"},
				query: `query(` + pageVars + `) { conn: collections(` + pageArgs + `) { edges { cursor node { id } } ` + pageShape + ` totalCount } }`},
			{name: "pools", size: 1, path: []string{"conn"},
				query: `query(` + pageVars + `) { conn: pools(` + pageArgs + `) { edges { cursor node { poolId } } ` + pageShape + ` totalCount } }`},
			{name: "nfts", size: 40, vars: map[string]any{"id": id}, path: []string{"collection", "conn"},
				query: `query($id: ID!, ` + pageVars + `) { collection(id: $id) { conn: nfts(` + pageArgs + `) { edges { cursor node { serial } } ` + pageShape + ` totalCount } } }`},
		} {
			n, total := count(c)
			if total == nil || *total != n || n == 0 {
				t.Errorf("%s: totalCount %v, the pages hold %d", c.name, total, n)
			}
		}
		// A burned NFT leaves the count, as it leaves the list.
		m := newMinter(t, g.store, "burner")
		m.mint(id, 1)
		page, err := g.store.NFTs(context.Background(), id, store.NFTFilter{Owner: m.ID}, store.SortSerial, store.PageRequest{})
		if err != nil || len(page.Items) != 1 {
			t.Fatalf("the minter's NFTs: %v %v", page.Items, err)
		}
		prep, err := g.store.PrepareBurn(context.Background(), m.ID, page.Items[0].ContractID)
		if err != nil {
			t.Fatal(err)
		}
		m.execute(store.KindNFTBurn, prep)
		nftsCase := connCase{name: "nfts after a burn", size: 100, vars: map[string]any{"id": id}, path: []string{"collection", "conn"},
			query: `query($id: ID!, ` + pageVars + `) { collection(id: $id) { conn: nfts(` + pageArgs + `) { edges { cursor node { serial } } ` + pageShape + ` totalCount } } }`}
		if n, total := count(nftsCase); total == nil || *total != n {
			t.Errorf("after a burn: totalCount %v, the pages hold %d", total, n)
		}
		// With a filter the count would scan: it is null, not a wrong number.
		filtered := strings.Replace(nftsCase.query, pageArgs, `filter: {listed: true}, `+pageArgs, 1)
		if _, total := count(connCase{name: "listed", size: 100, vars: nftsCase.vars, path: nftsCase.path, query: filtered}); total != nil {
			t.Errorf("a filtered connection's totalCount is %d, want null", *total)
		}
	})
}

func TestConnection_LastHistoriesOfAPageAreOneQuery(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		g := newUncachedTestGraph(t, b, 300)
		id := g.collectionID("ledger-apes")
		q := `query($id: ID!, $first: Int!) { collection(id: $id) { nfts(first: $first, filter: {listed: true}) {
			edges { node { contractId history(last: 1) { edges { cursor node { kind updateId } } pageInfo { hasPreviousPage } } } } } } }`
		type result struct {
			Collection struct {
				NFTs struct {
					Edges []struct {
						Node struct {
							ContractID string
							History    connection
						}
					}
				}
			}
		}
		g.data(q, map[string]any{"id": id, "first": 2}, new(result))
		cost := map[int]int64{}
		for _, n := range []int{5, 20} {
			var r result
			cost[n] = g.data(q, map[string]any{"id": id, "first": n}, &r)
			for _, e := range r.Collection.NFTs.Edges {
				// A listed NFT's oldest event is its mint, and a listing followed.
				h := e.Node.History
				if len(h.Edges) != 1 || !strings.Contains(string(h.Edges[0].Node), `"MINTED"`) || !h.PageInfo.HasPreviousPage {
					t.Fatalf("NFT %s: last history page %s %+v", e.Node.ContractID, h.nodes(), h.PageInfo)
				}
			}
		}
		if cost[5] != cost[20] {
			t.Fatalf("last histories of 5 NFTs cost %d statements, of 20 cost %d", cost[5], cost[20])
		}
	})
}
