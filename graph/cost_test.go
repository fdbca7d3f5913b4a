package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vektah/gqlparser/v2/ast"

	"marketd/store"
	"marketd/store/storetest"
)

// costMarket is the GraphQL endpoint over a demo market with the page cache off (every read
// is a statement), counting the statements the store runs and telling the cost of each
// operation: what the cost must never be below.
type costMarket struct {
	*testGraph
	cost   *atomic.Int64
	schema *ast.Schema
	token  string
	ids    []string // ids of every kind, for ID arguments
	words  []string // slugs, cursors and junk, for String arguments
}

func newCostMarket(t testing.TB, b storetest.Backend) *costMarket {
	t.Helper()
	ctx := context.Background()
	cfg := storetest.Config(storetest.NewClock(storetest.Epoch))
	cfg.PageCacheTTL = -1
	s := b.Open(t, cfg)
	sum, err := s.SeedDemo(ctx, store.DemoOptions{NFTs: 120, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	m := &costMarket{testGraph: &testGraph{t: t, store: s}, cost: new(atomic.Int64)}
	s.AddQueryHook(m.testGraph)
	h := NewHandler(s, Options{Logger: slog.New(slog.DiscardHandler), Authenticate: bearer(s), RunEveryQuery: true, lastCost: m.cost})
	m.schema = NewExecutableSchema(config(s)).Schema()
	m.http = httptest.NewServer(h)
	t.Cleanup(m.http.Close)

	holder := newMinter(t, s, "holder")
	m.token = holder.signIn()
	m.ids = append(m.ids, holder.ID, "nope", "", globalID(nodeIntent, "x"))
	m.words = append(m.words, "nope", "", "eyJsIjoiY29sbGVjdGlvbnMifQ.AAAA")
	for _, slug := range sum.Collections {
		c, err := s.CollectionBySlug(ctx, slug)
		if err != nil {
			t.Fatal(err)
		}
		m.ids = append(m.ids, c.ID, globalID(nodeCollection, c.ID))
		m.words = append(m.words, slug)
		page, err := s.NFTs(ctx, c.ID, store.NFTFilter{}, "", store.PageRequest{Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range page.Items {
			m.ids = append(m.ids, n.ContractID, globalID(nodeNFT, nftKey(n.Ref())))
		}
	}
	for _, p := range sum.Pools {
		m.ids = append(m.ids, p, globalID(nodePool, p))
	}
	for _, p := range sum.Parties[:min(2, len(sum.Parties))] {
		m.ids = append(m.ids, p)
	}
	// The first statements of a store (its service keys) are not a query's.
	m.query(`{ collections { edges { node { slug } } } }`, nil)
	return m
}

// check asks q (with the holder's token when signed) and fails when it ran more statements
// than its cost, answered a 5xx, or failed with internal.
func (m *costMarket) check(t testing.TB, q string, vars map[string]any, signed bool) (cost, statements int64) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": q, "variables": vars})
	req, _ := http.NewRequest("POST", m.http.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if signed {
		req.Header.Set("Authorization", "Bearer "+m.token)
	}
	m.cost.Store(-1)
	before := m.queries.Load()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	statements, cost = m.queries.Load()-before, m.cost.Load()
	var out gqlResponse
	if res.StatusCode >= 500 || json.Unmarshal(raw, &out) != nil {
		t.Fatalf("%s %v: %d %s", q, vars, res.StatusCode, raw)
	}
	for _, e := range out.Errors {
		if e.Extensions["code"] == string(store.CodeInternal) {
			t.Fatalf("%s %v: %s", q, vars, raw)
		}
	}
	if statements > max(cost, 0) {
		t.Fatalf("%s %v (signed %v): cost %d, but it ran %d statements; answer %.300s", q, vars, signed, cost, statements, raw)
	}
	return cost, statements
}

// randomQuery builds a query over the schema from data: random fields of the query type and
// below, aliases, arguments (literal or variables), inline and named fragments, __typename.
type randomQuery struct {
	m     *costMarket
	data  []byte
	pos   int
	frags []string
	vars  map[string]any
	defs  []string
	n     int
}

func (g *randomQuery) next() int {
	if g.pos >= len(g.data) {
		return 0
	}
	g.pos++
	return int(g.data[g.pos-1])
}

func (g *randomQuery) pick(n int) int { return g.next() % n }

func (g *randomQuery) build() (string, map[string]any, bool) {
	g.vars = map[string]any{}
	signed := g.pick(2) == 0
	set := g.selection(g.m.schema.Query, 0)
	q := "query"
	if len(g.defs) > 0 {
		q += "(" + strings.Join(g.defs, ", ") + ")"
	}
	q += " " + set
	for _, f := range g.frags {
		q += " " + f
	}
	return q, g.vars, signed
}

// maxGenDepth keeps random queries inside the depth limit (12).
const maxGenDepth = 7

func (g *randomQuery) selection(typ *ast.Definition, depth int) string {
	var parts []string
	for range 1 + g.pick(3) {
		switch k := g.pick(10); {
		case k == 0:
			parts = append(parts, "__typename")
		case k == 1 || typ.IsAbstractType() && k < 5:
			// An inline fragment on the type itself or one that can stand there.
			on := typ
			if possible := g.m.schema.GetPossibleTypes(typ); len(possible) > 0 {
				on = possible[g.pick(len(possible))]
			}
			parts = append(parts, "... on "+on.Name+" "+g.selection(on, depth))
		case k == 2 && len(g.frags) < 4:
			g.n++
			name := "F" + strconv.Itoa(g.n)
			// Appended before the body: a fragment must not spread itself.
			g.frags = append(g.frags, "")
			i := len(g.frags) - 1
			g.frags[i] = "fragment " + name + " on " + typ.Name + " " + g.selection(typ, depth)
			parts = append(parts, "..."+name)
			if g.pick(3) == 0 {
				parts = append(parts, "..."+name) // spread twice: merged, counted once
			}
		default:
			parts = append(parts, g.field(typ, depth))
		}
	}
	return "{ " + strings.Join(parts, " ") + " }"
}

func (g *randomQuery) field(typ *ast.Definition, depth int) string {
	var fields []*ast.FieldDefinition
	for _, f := range typ.Fields {
		if !strings.HasPrefix(f.Name, "__") {
			fields = append(fields, f)
		}
	}
	f := fields[g.pick(len(fields))]
	out := ""
	if g.pick(3) == 0 {
		g.n++
		out = "a" + strconv.Itoa(g.n) + ": "
	}
	out += f.Name
	var args []string
	for _, a := range f.Arguments {
		if a.Type.NonNull || g.pick(3) == 0 {
			args = append(args, a.Name+": "+g.value(a.Type))
		}
	}
	if len(args) > 0 {
		out += "(" + strings.Join(args, ", ") + ")"
	}
	child := g.m.schema.Types[f.Type.Name()]
	if child.Kind == ast.Object || child.IsAbstractType() {
		if depth >= maxGenDepth {
			return out + " { __typename }"
		}
		out += " " + g.selection(child, depth+1)
	}
	return out
}

// value is a literal of type t, or now and then a variable holding one.
func (g *randomQuery) value(t *ast.Type) string {
	if t.Elem == nil && t.Name() == "Int" && g.pick(3) == 0 {
		g.n++
		name := "v" + strconv.Itoa(g.n)
		g.defs = append(g.defs, "$"+name+": Int")
		g.vars[name] = []int{1, 3, 20, 100, 0, 101}[g.pick(6)]
		return "$" + name
	}
	if t.Elem != nil {
		var items []string
		for range g.pick(5) {
			items = append(items, g.value(t.Elem))
		}
		return "[" + strings.Join(items, ", ") + "]"
	}
	def := g.m.schema.Types[t.Name()]
	switch {
	case t.Name() == "Int":
		return strconv.Itoa([]int{1, 2, 3, 5, 20, 100, 0, 101, -1}[g.pick(9)])
	case t.Name() == "Boolean":
		return strconv.FormatBool(g.pick(2) == 0)
	case t.Name() == "ID":
		return strconv.Quote(g.m.ids[g.pick(len(g.m.ids))])
	case t.Name() == "String", t.Name() == "Decimal":
		return strconv.Quote(g.m.words[g.pick(len(g.m.words))])
	case def.Kind == ast.Enum:
		return def.EnumValues[g.pick(len(def.EnumValues))].Name
	case def.Kind == ast.InputObject:
		var fields []string
		for _, f := range def.Fields {
			if f.Type.NonNull || g.pick(4) == 0 {
				fields = append(fields, f.Name+": "+g.value(f.Type))
			}
		}
		return "{" + strings.Join(fields, ", ") + "}"
	}
	return "null"
}

// FuzzOperationCost asks random queries over the whole schema and holds that no operation
// runs more SQL statements than its cost, and that costing never panics.
func FuzzOperationCost(f *testing.F) {
	m := newCostMarket(f, storetest.Backends()[0])
	for i := range 16 {
		f.Add(seedBytes(uint64(i)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &randomQuery{m: m, data: data}
		q, vars, signed := g.build()
		m.check(t, q, vars, signed)
	})
}

func seedBytes(seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, 64+r.IntN(192))
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

// TestOperationCost_NeverBelowTheStatementsRun is the fuzz target's property on a few hundred
// random queries, on every backend.
func TestOperationCost_NeverBelowTheStatementsRun(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newCostMarket(t, b)
		ran := 0
		for i := range 300 {
			g := &randomQuery{m: m, data: seedBytes(uint64(1000 + i))}
			q, vars, signed := g.build()
			if _, n := m.check(t, q, vars, signed); n > 0 {
				ran++
			}
		}
		if ran < 100 {
			t.Fatalf("only %d of 300 random queries read the store: the generator does not reach it", ran)
		}
	})
}

// TestOperationCost_CountsReadsNotFields pins the rules on queries whose cost is known.
func TestOperationCost_CountsReadsNotFields(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newCostMarket(t, b)
		id := m.collectionID("ledger-apes")
		vars := map[string]any{"id": id}
		for _, c := range []struct {
			q    string
			vars map[string]any
			want int64
		}{
			// The collection and its page of NFTs, with their listings and traits: 3 + 3, one read of the budget.
			{`query($id: ID!) { collection(id: $id) { name nfts(first: 20) { edges { node { id serial traits { type value } listing { price } } } } } }`, vars, 6},
			// Each NFT's collection is counted (a dataloader batches them): 6 + 20 × 3.
			{`query($id: ID!) { collection(id: $id) { nfts { edges { node { collection { name } } } } } }`, vars, 66},
			{`query($id: ID!) { collection(id: $id) { nfts(last: 5) { edges { node { history(first: 3) { edges { node { kind } } } } } } } }`, vars, 11},
			// Aliases each count; a fragment is expanded; the same name twice runs once.
			{`{ a: nft(contractId: "x") { serial } b: nft(contractId: "y") { serial } nft(contractId: "z") { ...N } } fragment N on NFT { serial collection { name } }`, nil, 12},
			{`{ nft(contractId: "x") { serial } nft(contractId: "x") { name } }`, nil, 3},
			// nodes reads once per id; an interface costs its dearest type.
			{`{ nodes(ids: ["a", "b", "c"]) { id ... on NFT { collection { name } } } }`, nil, 18},
			{`query($n: Int) { collections(first: $n) { totalCount edges { node { nfts(first: 2) { totalCount } } } } }`, map[string]any{"n": 7}, 27}, // 5 + 1 + 7 × 3
			// Introspection reads the schema only, but each __schema or __type is one read's worth.
			{`{ __typename __schema { queryType { name } } }`, nil, introspectionCost},
			{`{ a: __schema { queryType { name } } b: __type(name: "NFT") { name } }`, nil, 2 * introspectionCost},
		} {
			if cost, _ := m.check(t, c.q, c.vars, false); cost != c.want {
				t.Errorf("%s: cost %d, want %d", c.q, cost, c.want)
			}
		}
	})
}

// TestOperationCost_AKeptCostFollowsTheVariablesThatChangeIt: one query text asked again
// with other page sizes, @include conditions and lengths of a list of ids costs what each
// asks, however its earlier costs were kept; another cursor or id costs the same.
func TestOperationCost_AKeptCostFollowsTheVariablesThatChangeIt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newCostMarket(t, b)
		page := `query($n: Int, $after: String, $b: Boolean!) { collections(first: $n, after: $after) { edges { node { name ...N @include(if: $b) } } } } fragment N on Collection { nfts(first: 2) { totalCount } }`
		nodes := `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`
		for _, c := range []struct {
			q    string
			vars map[string]any
			want int64
		}{
			{page, map[string]any{"n": 7, "b": true}, 26}, // 5 + 7 × 3
			{page, map[string]any{"n": 3, "b": true}, 14},
			{page, map[string]any{"n": 7, "b": false}, 5},
			{page, map[string]any{"n": 7, "b": true, "after": "not a cursor"}, 26},
			{page, map[string]any{"n": 3, "b": true}, 14},
			{nodes, map[string]any{"ids": []string{"a", "b"}}, 6},
			{nodes, map[string]any{"ids": []string{"a", "b", "c", "d", "e"}}, 15},
			{nodes, map[string]any{"ids": []string{"x", "y"}}, 6},
		} {
			if cost, _ := m.check(t, c.q, c.vars, false); cost != c.want {
				t.Errorf("%s %v: cost %d, want %d", c.q, c.vars, cost, c.want)
			}
		}
	})
}

// A fragment spread under many aliases at every level is costed in time that follows the
// query's text, not the millions of fields it names, and refused before it reads.
func TestOperationCost_AFragmentBombIsCostedQuickly(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newCostMarket(t, b)
		var q strings.Builder
		q.WriteString(`{ collections { edges { node { ...F0 } } } }`)
		const levels, width = 3, 400 // 400^3 fields, 12 levels deep, under 15,000 tokens
		for i := range levels {
			fmt.Fprintf(&q, " fragment F%d on Collection {", i)
			for a := range width {
				if i == levels-1 {
					fmt.Fprintf(&q, " a%d: name", a)
				} else {
					fmt.Fprintf(&q, " a%d: nfts { edges { node { collection { ...F%d } } } }", a, i+1)
				}
			}
			q.WriteString(" }")
		}
		start := time.Now()
		code, n := m.errorCode(q.String(), nil)
		// Costing it spread by spread took 1.8 s; the depth check walking every spread, 0.3 s.
		if took := time.Since(start); code != string(store.CodeInvalidRequest) || n != 0 || took > time.Second {
			t.Fatalf("a fragment bomb: %q after %d statements in %v", code, n, took)
		}
	})
}
