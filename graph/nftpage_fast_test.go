package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/uptrace/bun"
	"github.com/vektah/gqlparser/v2/ast"

	"marketd/store"
	"marketd/store/storetest"
)

// nftPageQueries are pages of NFTs as the earlier fast path knew them, and as it did not
// (a field more, a fragment, a directive) and an error, each with the variables $id, $f and
// $s of storetest.NFTPageQuery.
var nftPageQueries = []string{
	storetest.NFTPageQuery,
	`query($id: ID!, $f: NFTFilter, $s: NFTSort) { collection(id: $id) { __typename collectionId slug name nfts(filter: $f, sort: $s, first: 7) { __typename totalCount edges { __typename cursor node { __typename id contractId collectionId serial name image owner traits { __typename type value } listing { __typename cid seller price currency expiresAt } } } pageInfo { __typename hasNextPage hasPreviousPage startCursor endCursor } } } }`,
	`query($id: ID!, $f: NFTFilter, $s: NFTSort) { c: collection(id: $id) { n: name all: nfts(sort: $s, first: 3) { totalCount edges { node { serial } } } page: nfts(filter: $f, sort: $s, last: 5) { edges { c: cursor n: node { l: listing { p: price } t: traits { v: value } } } info: pageInfo { hasPreviousPage startCursor } } } }`,
	`query($id: ID!, $f: NFTFilter, $s: NFTSort) { collection(id: $id) { nfts(filter: $f, sort: $s, first: 101) { edges { cursor } } } }`, // an error: the executor's
	`query($id: ID!, $f: NFTFilter, $s: NFTSort) { collection(id: $id) { floorPrice nfts(filter: $f, sort: $s, first: 4) { edges { node { serial owner } } } } }`,
	`query($id: ID!, $f: NFTFilter, $s: NFTSort) { collection(id: $id) { nfts(filter: $f, sort: $s) { edges { node { ...N } } } } } fragment N on NFT { serial name }`,
	`query($id: ID!, $f: NFTFilter, $s: NFTSort) { collection(id: $id) { nfts(filter: $f, sort: $s, first: 2) { edges { node { serial @include(if: true) } } } } }`,
}

// TestNFTPageFastPath_AnswersByteForByteAsTheExecutor asks random pages of the demo market
// (filters, sorts, cursors both ways, an unknown collection, bad arguments) through a handler
// with the NFT page fast path and one without it, as the same requests, and wants the same
// status and the same bytes; and that the fast path answered the queries of its shape.
func TestNFTPageFastPath_AnswersByteForByteAsTheExecutor(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := demoMarket(t, b, 600, 3)
		mix, err := storetest.NFTPageMix(ctx, s, 60, 7)
		if err != nil {
			t.Fatal(err)
		}
		fast, exec, answered := fastAndExecutor(s)
		rng := rand.New(rand.NewPCG(7, 7))
		asked, cursors := 0, 0
		for _, r := range mix {
			var env map[string]any
			if err := json.Unmarshal(r.GraphQLBody(), &env); err != nil {
				t.Fatal(err)
			}
			vars := env["variables"].(map[string]any)
			switch rng.IntN(8) {
			case 0:
				vars["id"] = "col_00000000000000000000" // no such collection: null
			case 1:
				vars["f"] = map[string]any{"minPrice": "not a price"} // an error
			}
			for _, q := range nftPageQueries {
				body, _ := json.Marshal(map[string]any{"query": q, "variables": vars})
				codeF, gotF := ask(fast, body)
				codeE, gotE := ask(exec, body)
				if codeF != codeE || !bytes.Equal(gotF, gotE) {
					t.Fatalf("query %s with %v:\nfast path %d %s\nexecutor  %d %s", q, vars, codeF, gotF, codeE, gotE)
				}
				asked++
				// Follow the page's cursor forwards with the first query, as a client pages.
				if q == storetest.NFTPageQuery && bytes.Contains(gotF, []byte(`"hasNextPage":true`)) {
					var page struct {
						Data struct {
							Collection struct {
								Nfts struct {
									PageInfo struct{ EndCursor string }
								}
							}
						}
					}
					json.Unmarshal(gotF, &page)
					next := strings.Replace(q, "first: 20", fmt.Sprintf("first: 20, after: %q", page.Data.Collection.Nfts.PageInfo.EndCursor), 1)
					body, _ := json.Marshal(map[string]any{"query": next, "variables": vars})
					codeF, gotF := ask(fast, body)
					codeE, gotE := ask(exec, body)
					if codeF != codeE || !bytes.Equal(gotF, gotE) {
						t.Fatalf("next page %s:\nfast path %d %s\nexecutor  %d %s", next, codeF, gotF, codeE, gotE)
					}
					cursors++
				}
			}
		}
		// The fast path answers all but the refused page size and the refused arguments.
		if answered.Load() < int64(len(mix)) || cursors == 0 {
			t.Fatalf("the fast path answered %d of %d requests (%d next pages): it should answer most", answered.Load(), asked, cursors)
		}
		t.Logf("%d requests compared, %d answered by the fast path, %d next pages", asked, answered.Load(), cursors)
	})
}

// TestFastPath_AnswersRandomQueriesByteForByteAsTheExecutor asks randomly drawn queries over
// the demo market (random fields of the collection, connection, NFT, trait, listing and page
// types as the schema lists them, random aliases, __typename, named and inline fragments,
// @skip and @include, variables or literals, random pages, sorts, filters and cursors, unknown
// ids and refused arguments, sometimes a field the fast path leaves to the executor) through a
// handler with the fast path and one without it, as the same requests, and wants the same
// status and the same bytes; and that the fast path answered most of them.
func TestFastPath_AnswersRandomQueriesByteForByteAsTheExecutor(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := demoMarket(t, b, 600, 3)
		mix, err := storetest.NFTPageMix(ctx, s, 200, 7)
		if err != nil {
			t.Fatal(err)
		}
		fast, exec, answered := fastAndExecutor(s)
		g := &queryGen{rng: rand.New(rand.NewPCG(11, 13)), schema: NewExecutableSchema(config(s)).Schema()}
		cursor := regexp.MustCompile(`"(?:cursor|startCursor|endCursor|[a-z]\d+)":"([^"]+)"`)
		contract := regexp.MustCompile(`"contractId":"([^"]+)"`)
		asked := 0
		for i, r := range mix {
			var env struct{ Variables map[string]any }
			if err := json.Unmarshal(r.GraphQLBody(), &env); err != nil {
				t.Fatal(err)
			}
			query, vars := g.query(env.Variables)
			body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
			before := answered.Load()
			codeF, gotF := ask(fast, body)
			codeE, gotE := ask(exec, body)
			if codeF != codeE || !sameAnswer(gotF, gotE) {
				t.Fatalf("query %d %s\nvariables %v:\nfast path %d %s\nexecutor  %d %s", i, query, vars, codeF, gotF, codeE, gotE)
			}
			asked++
			// The fast path leaves to the executor only NFT.history and what ends in an error.
			if !bytes.Contains(gotE, []byte(`"errors"`)) && !strings.Contains(query, "history") && answered.Load() == before {
				t.Fatalf("query %d %s: the executor answered it, not the fast path", i, query)
			}
			// Cursors and contract ids seen come back as arguments of later queries.
			for _, m := range cursor.FindAllSubmatch(gotE, -1) {
				g.cursors = append(g.cursors, string(m[1]))
			}
			for _, m := range contract.FindAllSubmatch(gotE, 3) {
				g.contracts = append(g.contracts, string(m[1]))
			}
		}
		if answered.Load() < int64(asked)/2 {
			t.Fatalf("the fast path answered %d of %d queries: it should answer most", answered.Load(), asked)
		}
		t.Logf("%d queries compared, %d answered by the fast path", asked, answered.Load())
	})
}

// TestFastPath_AnswersEveryFieldOfItsTypes asks each field the schema gives the fast path's
// types (NFT.history aside) alone, in a page of the demo market, and wants the fast path to
// have answered it as the executor does: a field added to the schema and not to
// nftpage_fast.go fails here.
func TestFastPath_AnswersEveryFieldOfItsTypes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		s := demoMarket(t, b, 200, 5)
		fast, exec, answered := fastAndExecutor(s)
		schema := NewExecutableSchema(config(s)).Schema()
		// Where each type is reached from, as a query with a hole for its selection.
		at := map[string]string{
			"CollectionConnection": `{ collections(first: 3) %s }`,
			"CollectionEdge":       `{ collections(first: 3) { edges %s } }`,
			"Collection":           `{ collections(first: 3) { edges { node %s } } }`,
			"MintPhase":            `{ collections(first: 3) { edges { node { phases %s } } } }`,
			"NFTConnection":        `{ collections(first: 3) { edges { node { nfts(sort: PRICE_ASC, first: 30) %s } } } }`,
			"NFTEdge":              `{ collections(first: 3) { edges { node { nfts(sort: PRICE_ASC, first: 30) { edges %s } } } } }`,
			"NFT":                  `{ collections(first: 3) { edges { node { nfts(sort: PRICE_ASC, first: 30) { edges { node %s } } } } } }`,
			"Trait":                `{ collections(first: 3) { edges { node { nfts(first: 5) { edges { node { traits %s } } } } } } }`,
			"Listing":              `{ collections(first: 3) { edges { node { nfts(sort: PRICE_ASC, first: 30) { edges { node { listing %s } } } } } } }`,
			"BestOffer":            `{ collections(first: 3) { edges { node { nfts(first: 30) { edges { node { bestOffer %s } } } } } } }`,
			"PageInfo":             `{ collections(first: 3) { pageInfo %s } }`,
		}
		for _, typ := range fastTypes {
			for _, fd := range schema.Types[typ].Fields {
				if strings.HasPrefix(fd.Name, "__") || typ == "NFT" && fd.Name == "history" {
					continue
				}
				sel := fd.Name
				if def := schema.Types[fd.Type.Name()]; def.Kind == ast.Object {
					sel += " { __typename }"
				}
				query := fmt.Sprintf(at[typ], "{ "+sel+" }")
				body, _ := json.Marshal(map[string]any{"query": query})
				before := answered.Load()
				codeF, gotF := ask(fast, body)
				codeE, gotE := ask(exec, body)
				if codeF != codeE || !bytes.Equal(gotF, gotE) {
					t.Fatalf("%s.%s: %s\nfast path %d %s\nexecutor  %d %s", typ, fd.Name, query, codeF, gotF, codeE, gotE)
				}
				if answered.Load() == before || bytes.Contains(gotF, []byte(`"errors"`)) {
					t.Errorf("%s.%s: the fast path did not answer %s: %s", typ, fd.Name, query, gotF)
				}
			}
		}
	})
}

// sameAnswer tells whether two answers are the same bytes; or, for two answers that both
// hold errors of more than one root field, the same but for the order of the errors: the
// executor resolves root fields concurrently and lists their errors as they come.
func sameAnswer(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	type answer struct {
		Errors []json.RawMessage `json:"errors"`
		Data   json.RawMessage   `json:"data"`
	}
	var x, y answer
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil || len(x.Errors) < 2 || !bytes.Equal(x.Data, y.Data) {
		return false
	}
	sorted := func(errs []json.RawMessage) []string {
		var out []string
		for _, e := range errs {
			out = append(out, string(e))
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(sorted(x.Errors), sorted(y.Errors))
}

// demoMarket is a store seeded with a demo market of n NFTs, its NFT index built.
func demoMarket(t *testing.T, b storetest.Backend, n int, seed uint64) *store.Store {
	ctx := context.Background()
	s := b.Open(t, storetest.Config(storetest.NewClock(time.Now())))
	if _, err := s.SeedDemo(ctx, store.DemoOptions{NFTs: n, Seed: seed}); err != nil {
		t.Fatal(err)
	}
	if err := s.AwaitNFTIndex(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// fastAndExecutor is a handler with the fast path, counting its answers, and one without;
// kept answers are off in both, so each request runs.
func fastAndExecutor(s *store.Store) (fast, exec http.Handler, answered *atomic.Int64) {
	quiet := slog.New(slog.DiscardHandler)
	answered = new(atomic.Int64)
	fast = NewHandler(s, Options{Logger: quiet, RunEveryQuery: true, fastAnswers: answered})
	exec = NewHandler(s, Options{Logger: quiet, RunEveryQuery: true, NoFastPath: true})
	return fast, exec, answered
}

func ask(h http.Handler, body []byte) (int, []byte) {
	req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w.Code, w.Body.Bytes()
}

// queryGen draws queries over the schema's types, as dashboards might write them.
type queryGen struct {
	rng       *rand.Rand
	schema    *ast.Schema
	cursors   []string // seen in earlier answers
	contracts []string // NFTs' contract ids seen in earlier answers

	vars      map[string]any    // the values of the variables a query may use
	used      map[string]string // the variables it uses, with their types
	fragments []string
	aliases   int
}

// query draws a query and its variables; mix holds a page of storetest.NFTPageMix's ($id, $f, $s).
func (g *queryGen) query(mix map[string]any) (string, map[string]any) {
	g.vars, g.used, g.fragments, g.aliases = maps.Clone(mix), map[string]string{}, nil, 0
	switch g.rng.IntN(12) {
	case 0:
		g.vars["id"] = "col_00000000000000000000" // no such collection: null
	case 1:
		g.vars["f"] = map[string]any{"minPrice": "not a price"} // refused
	case 2:
		g.vars["id"] = globalID(nodeCollection, g.vars["id"].(string)) // a global id
	}
	g.vars["n"] = 1 + g.rng.IntN(12)
	g.vars["yes"] = g.rng.IntN(2) == 0
	g.vars["cur"] = g.cursor()

	var roots []string
	for range 1 + g.rng.IntN(2) {
		switch r := g.rng.IntN(10); {
		case r < 6:
			roots = append(roots, g.alias()+"collection("+g.collectionArgs()+") "+g.selection("Collection", 0))
		case r < 8:
			roots = append(roots, g.alias()+"collections("+g.pageArgs(true)+") "+g.selection("CollectionConnection", 0))
		case r < 9:
			contract := "nope"
			if len(g.contracts) > 0 {
				contract = g.contracts[g.rng.IntN(len(g.contracts))]
			}
			roots = append(roots, g.alias()+fmt.Sprintf("nft(contractId: %q) ", contract)+g.selection("NFT", 1))
		default:
			roots = append(roots, "__typename")
		}
	}
	var head []string
	for _, name := range slices.Sorted(maps.Keys(g.used)) {
		head = append(head, "$"+name+": "+g.used[name])
	}
	q := "query"
	if g.rng.IntN(2) == 0 {
		q += " Dashboard"
	}
	if len(head) > 0 {
		q += "(" + strings.Join(head, ", ") + ")"
	}
	q += " { " + strings.Join(roots, " ") + " }"
	for _, f := range g.fragments {
		q += "\n" + f
	}
	vars := map[string]any{}
	for name := range g.used {
		vars[name] = g.vars[name]
	}
	return q, vars
}

// use names a variable in the query.
func (g *queryGen) use(name, typ string) string {
	g.used[name] = typ
	return "$" + name
}

func (g *queryGen) alias() string {
	if g.rng.IntN(5) > 0 {
		return ""
	}
	g.aliases++
	return fmt.Sprintf("a%d: ", g.aliases)
}

func (g *queryGen) cursor() any {
	if len(g.cursors) == 0 || g.rng.IntN(12) == 0 {
		return "not a cursor"
	}
	return g.cursors[g.rng.IntN(len(g.cursors))]
}

func (g *queryGen) collectionArgs() string {
	switch g.rng.IntN(16) {
	case 0, 3, 4:
		return fmt.Sprintf("id: %q", g.vars["id"])
	case 1:
		return `slug: "no-such-slug"`
	case 2:
		return g.use("id", "ID") + `, slug: "both"` // refused: one of the two
	}
	return "id: " + g.use("id", "ID!")
}

// pageArgs draws a connection's page: sizes, cursors and, for a collection's NFTs, a filter
// and a sort, as variables or literals; now and then one the resolver refuses.
func (g *queryGen) pageArgs(collections bool) string {
	var args []string
	if collections {
		if g.rng.IntN(2) == 0 {
			args = append(args, []string{"sort: VOLUME", "sort: FLOOR", "sort: NEWEST"}[g.rng.IntN(3)])
		}
	} else {
		switch g.rng.IntN(3) {
		case 0:
			args = append(args, "filter: "+g.use("f", "NFTFilter"))
		case 1:
			args = append(args, "filter: "+literal(g.vars["f"]))
		}
		switch g.rng.IntN(3) {
		case 0:
			args = append(args, "sort: "+g.use("s", "NFTSort"))
		case 1:
			args = append(args, []string{"sort: SERIAL", "sort: PRICE_ASC", "sort: PRICE_DESC"}[g.rng.IntN(3)])
		}
	}
	size := func() string {
		switch g.rng.IntN(20) {
		case 0, 1:
			return g.use("n", "Int")
		case 2:
			return []string{"0", "101", "-1"}[g.rng.IntN(3)] // refused
		}
		return fmt.Sprint(1 + g.rng.IntN(8))
	}
	cur := func() string {
		if g.rng.IntN(3) == 0 {
			return g.use("cur", "String")
		}
		return fmt.Sprintf("%q", g.cursor())
	}
	switch g.rng.IntN(16) {
	case 0, 1, 2, 8, 9, 10, 11, 12, 13, 14, 15:
		args = append(args, "first: "+size())
	case 3:
		args = append(args, "first: "+size(), "after: "+cur())
	case 4:
		args = append(args, "last: "+size())
	case 5:
		args = append(args, "last: "+size(), "before: "+cur())
	case 6:
		args = append(args, "first: 2", "last: 2") // refused
	case 7:
		args = append(args, "after: "+cur())
	}
	return strings.Join(args, ", ")
}

// selection draws a selection set of typ: some of its fields in random order, some twice,
// under aliases, behind fragments and directives.
func (g *queryGen) selection(typ string, depth int) string {
	def := g.schema.Types[typ]
	var parts []string
	if g.rng.IntN(3) == 0 {
		parts = append(parts, "__typename")
	}
	for _, fd := range def.Fields {
		// Most objects are asked into, so most queries reach the NFTs' traits and listings.
		skip := 2
		if g.schema.Types[fd.Type.Name()].Kind == ast.Object {
			skip = 1
		}
		if strings.HasPrefix(fd.Name, "__") || g.rng.IntN(5) < skip {
			continue
		}
		if p := g.field(typ, fd, depth); p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "__typename")
	}
	g.rng.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	var out []string
	for _, p := range parts {
		switch g.rng.IntN(14) {
		case 0:
			out = append(out, "... on "+typ+" { "+p+" }")
		case 1:
			out = append(out, "... { "+p+" }")
		case 2, 3:
			name := fmt.Sprintf("F%d", len(g.fragments))
			g.fragments = append(g.fragments, "fragment "+name+" on "+typ+" { "+p+" }")
			out = append(out, "..."+name)
		case 4:
			out = append(out, "... @include(if: "+g.use("yes", "Boolean!")+") { "+p+" }")
		case 5:
			out = append(out, p, p) // the same field twice: merged
		default:
			out = append(out, p)
		}
	}
	if slices.Contains(def.Interfaces, "Node") && g.rng.IntN(4) == 0 {
		out = append(out, "... on Node { id }")
	}
	return "{ " + strings.Join(out, " ") + " }"
}

// field draws one field of typ: a leaf, or an object with a selection of its own (none past
// a depth, to keep within the query limits).
func (g *queryGen) field(typ string, fd *ast.FieldDefinition, depth int) string {
	out := g.alias() + fd.Name
	switch typ + "." + fd.Name {
	case "Collection.nfts":
		if depth > 1 {
			return ""
		}
		out += "(" + g.pageArgs(false) + ")"
	case "NFT.history":
		if g.rng.IntN(4) > 0 {
			return "" // rare: the executor's
		}
		out += "(first: 2)"
	case "NFT.collection":
		if depth > 2 {
			return ""
		}
	}
	switch g.rng.IntN(12) {
	case 0:
		out += " @skip(if: " + g.use("yes", "Boolean!") + ")"
	case 1:
		out += " @include(if: true)"
	}
	if g.schema.Types[fd.Type.Name()].Kind == ast.Object {
		out += " " + g.selection(fd.Type.Name(), depth+1)
	}
	return out
}

// literal writes a variable's value as a GraphQL literal.
func literal(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		var fields []string
		for _, k := range slices.Sorted(maps.Keys(v)) {
			fields = append(fields, k+": "+literal(v[k]))
		}
		return "{" + strings.Join(fields, ", ") + "}"
	case []any:
		var items []string
		for _, x := range v {
			items = append(items, literal(x))
		}
		return "[" + strings.Join(items, ", ") + "]"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// statementCounter counts the SQL statements a store runs for requests (not the NFT index's
// own reads of the log).
type statementCounter struct{ n atomic.Int64 }

func (c *statementCounter) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (c *statementCounter) AfterQuery(ctx context.Context, _ *bun.QueryEvent) {
	if !store.InBackground(ctx) {
		c.n.Add(1)
	}
}

// TestFastPath_LeavesAQueryItCannotWriteBeforeItReads asks queries the fast path leaves to the
// executor (an NFT's history, introspection next to a page) of a store without its page cache,
// where every read is a statement, and wants them to cost what they cost the executor alone:
// the fast path gives them up before reading the collection or its page.
func TestFastPath_LeavesAQueryItCannotWriteBeforeItReads(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		cfg := storetest.Config(storetest.NewClock(time.Now()))
		cfg.PageCacheTTL = -1
		s := b.Open(t, cfg)
		if _, err := s.SeedDemo(context.Background(), store.DemoOptions{NFTs: 200, Seed: 5}); err != nil {
			t.Fatal(err)
		}
		if err := s.AwaitNFTIndex(context.Background()); err != nil {
			t.Fatal(err)
		}
		statements := new(statementCounter)
		s.AddQueryHook(statements)
		fast, exec, answered := fastAndExecutor(s)
		cols, err := s.Collections(context.Background(), store.SortNewest, store.PageRequest{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		vars := map[string]any{"id": cols.Items[0].ID}
		for _, q := range []string{
			`query($id: ID) { collection(id: $id) { name nfts(first: 5) { edges { node { serial history(first: 2) { edges { node { kind } } } } } } } }`,
			`query($id: ID) { collection(id: $id) { name nfts(first: 5) { edges { node { ...H } } } } } fragment H on NFT { serial history { edges { cursor } } }`,
			`query($id: ID) { collection(id: $id) { name nfts(first: 5) { edges { cursor } } } __schema { queryType { name } } }`,
		} {
			body, _ := json.Marshal(map[string]any{"query": q, "variables": vars})
			cost := func(h http.Handler) (int64, []byte) {
				before := statements.n.Load()
				code, got := ask(h, body)
				if code != http.StatusOK || bytes.Contains(got, []byte(`"errors"`)) {
					t.Fatalf("%s: %d %s", q, code, got)
				}
				return statements.n.Load() - before, got
			}
			cost(exec) // the first read of a kind may prepare what later ones reuse
			nExec, gotE := cost(exec)
			nFast, gotF := cost(fast)
			if nFast != nExec || !bytes.Equal(gotF, gotE) {
				t.Errorf("%s: %d statements through the handler with the fast path, %d through the executor alone", q, nFast, nExec)
			}
		}
		if answered.Load() != 0 {
			t.Errorf("the fast path answered %d of these queries", answered.Load())
		}
	})
}

// TestFastPath_WritesScalarsAsGqlgen holds the fast path's own writers of strings, ids and
// numbers equal, byte for byte, to the marshalers the executor uses, over random strings
// (quotes, backslashes, every control character, multi-byte runes and bytes that are not
// UTF-8) and ids.
func TestFastPath_WritesScalarsAsGqlgen(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "Z", "0", " ", `"`, `\`, "\t", "\n", "\r", "\x00", "\x1f", "\x7f", "é", "€", "😀", "\xff", "\xc3", "<", "/"}
	for range 5000 {
		var b strings.Builder
		for range rnd.IntN(12) {
			b.WriteString(alphabet[rnd.IntN(len(alphabet))])
		}
		s := b.String()
		var want, got bytes.Buffer
		graphql.MarshalString(s).MarshalGQL(&want)
		(&fastAnswer{w: &got}).str(s)
		if got.String() != want.String() {
			t.Fatalf("str(%q) = %s, gqlgen writes %s", s, got.String(), want.String())
		}
		ref := store.NFTRef{CollectionID: s, Serial: rnd.IntN(1 << 40)}
		want.Reset()
		got.Reset()
		MarshalNFTGlobalID(ref).MarshalGQL(&want)
		(&fastAnswer{w: &got}).nftID(ref)
		if got.String() != want.String() {
			t.Fatalf("nftID(%+v) = %s, the executor writes %s", ref, got.String(), want.String())
		}
	}
	for _, n := range []int{0, 1, -1, 42, 1 << 40, -(1 << 62)} {
		var want, got bytes.Buffer
		graphql.MarshalInt(n).MarshalGQL(&want)
		(&fastAnswer{w: &got}).integer(n)
		if got.String() != want.String() {
			t.Fatalf("integer(%d) = %s, gqlgen writes %s", n, got.String(), want.String())
		}
	}
	for _, v := range []bool{true, false} {
		var want, got bytes.Buffer
		graphql.MarshalBoolean(v).MarshalGQL(&want)
		(&fastAnswer{w: &got}).boolean(v)
		if got.String() != want.String() {
			t.Fatalf("boolean(%v) = %s, gqlgen writes %s", v, got.String(), want.String())
		}
	}
}
