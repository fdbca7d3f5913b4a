package graph

import (
	"encoding/binary"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"marketd/store"
)

// An operation's cost is how many reads of the store it may make, counted on the parsed and
// validated query before any resolver runs:
//
//   - A field that runs a resolver or a model's method (resolverFields, listed from the
//     generated executor by go generate) costs the SQL statements its store read may run when
//     the page cache misses: 1, or what fieldStatements says (a collection is 3: its row, its
//     mint phases, its expired listings), or 0 where readsNothing says it answers from its
//     object alone. nodes(ids:) costs its read once per id. A plain field of a struct costs
//     nothing beyond its children; __typename nothing; __schema and __type introspectionCost
//     each, whatever they select (the shape limit in handler.go bounds what they select).
//   - A connection (a field with first/last) resolves its edges' selection once per item of
//     its page: first or last, else store.DefaultPageSize (a size outside 1 to 100 is refused
//     by the resolver before it reads, so the cost counts at most 100); nodes(ids:) once per
//     id; any other list field once per store.DefaultPageSize items.
//   - Fields are collected as the executor collects them (graphql.CollectFields): aliases each
//     count, fragments and inline fragments are expanded, @skip/@include and variables are
//     read, and a field asked twice under one name runs once. A selection on an interface
//     costs what its dearest possible type costs.
//
// Dataloaders batch an association of a page's items into one statement where the cost counts
// one read per item, and a cached page reads nothing: the cost is an upper bound of the SQL
// statements the operation runs (FuzzOperationCost holds it so), not an estimate. A
// subscription is charged once, when it starts, for its start's reads.

// costPerRead is C, how much cost one read of the shared read budget buys: an operation is
// charged max(1, ceil(cost / costPerRead)) reads. A page of a collection's NFTs with their
// listings and traits, collection(id) { nfts(first: 20) { ... } }, costs 6 (the collection 3,
// its page 3) and so one read, what REST's GET of the same page costs.
const costPerRead = 6

// readsFor is how many reads of the budget an operation of cost c is charged.
func readsFor(c int) int { return max(1, (c+costPerRead-1)/costPerRead) }

// introspectionCost is what each __schema or __type field costs: the answer is built from the
// schema, not the store, but it is large, so each asks for one read of the budget.
const introspectionCost = costPerRead

// costCap bounds every sum and product: a query nested 12 deep with 100 items a level would
// overflow an int; anything near the cap is far over any limit anyway.
const costCap = 1 << 40

// readsNothing are the resolvers (and model methods) that answer from their object, the clock
// or nothing: a global id, the phases a collection row holds, an intent's fills, a log
// position. They cost 0.
var readsNothing = map[string]bool{
	"Collection.id":               true,
	"NFT.id":                      true,
	"Pool.id":                     true,
	"LPQuote.id":                  true,
	"Intent.id":                   true,
	"Offer.id":                    true,
	"Collection.phases":           true,
	"MintPhase.active":            true,
	"Preapproval.active":          true,
	"Intent.fills":                true,
	"CollectionActivity.position": true,
}

// fieldStatements are the resolvers whose store read may run more than one statement: the
// most each runs, the page cache missing. FuzzOperationCost finds a resolver that runs more
// than it is counted for.
var fieldStatements = map[string]int{
	"Query.collection": 3, // the collection, its mint phases, its listings past their expiry
	// The page, their mint phases, their listings past their expiry; sorted by floor, also the
	// collections whose floor counts an expired listing the sweeper has not archived yet, and
	// their rows (each such collection's corrected floor costs two more: the sweeper, running
	// every second, keeps them rare).
	"Query.collections": 5,
	"NFT.collection":    3, // as Query.collection, for the page's collections at once
	"Collection.nfts":   3, // the NFT index; with a cursor, the collection again
	"Query.nft":         3, // the contract's NFT, the NFT, its listing's event
	"Query.node":        3, // a collection is the dearest object
	"Query.nodes":       3, // for each id
	"Wallet.balances":   4, // holdings, and what LP quotes, intents and offers lock
	"Pool.lpQuotes":     2, // the pool again, the page
	"Pool.outcomes":     2,
	"Pool.history":      2,
	// Offer lists: the page, read in runs when it keeps only the offers an NFT takes (at most
	// five); nftOffers reads the NFT's contract and item first, offersReceived the party's NFTs.
	"Query.collectionOffers": 2, // the collection's identity, the page
	"Query.nftOffers":        7,
	"Wallet.offersReceived":  6,
	// A subscription is charged when it starts: its object, then its start position.
	"Subscription.collectionActivity": 4,
	"Subscription.poolOutcomes":       2,
	"Subscription.intentStatus":       2,
}

// costModel computes the cost of operations on one schema.
type costModel struct {
	schema *ast.Schema
	// satisfies is, for each object type, the names a fragment's type condition may use to
	// select on it (the type, its interfaces, the unions it belongs to): what the executor
	// passes to graphql.CollectFields.
	satisfies map[string][]string

	kept      *lru.Cache[string, int]            // costs by query text, operation and costVariables' values
	variables *lru.Cache[string, []costVariable] // costVariables by query text and operation
}

// keptCosts bounds the costs a model keeps (each key is a query's text and a few values).
const keptCosts = 1000

func newCostModel(schema *ast.Schema) *costModel {
	m := &costModel{schema: schema, satisfies: map[string][]string{}}
	m.kept, _ = lru.New[string, int](keptCosts)
	m.variables, _ = lru.New[string, []costVariable](keptCosts)
	for name, def := range schema.Types {
		if def.Kind == ast.Object {
			m.satisfies[name] = append([]string{name}, def.Interfaces...)
		}
	}
	for name, def := range schema.Types {
		if def.Kind == ast.Union {
			for _, member := range def.Types {
				m.satisfies[member] = append(m.satisfies[member], name)
			}
		}
	}
	return m
}

// cost is the cost of oc's operation; 0 for none. Dashboards send the same few query texts
// again and again, each time with other variables (a cursor, a filter): a cost is kept by the
// query's text, its operation and the values of only those variables that can change it
// (costVariables), so a page costs what its text costs once.
func (m *costModel) cost(oc *graphql.OperationContext) int {
	if oc.Operation == nil {
		return 0
	}
	if oc.RawQuery == "" || m.kept == nil {
		return m.costOf(oc)
	}
	text := oc.RawQuery + "\x00" + oc.OperationName
	vars, ok := m.variables.Get(text)
	if !ok {
		vars = costVariables(oc)
		m.variables.Add(text, vars)
	}
	key := append([]byte(text), 0)
	for _, v := range vars {
		key = append(key, 0)
		if v.length {
			key = strconv.AppendInt(key, int64(lenOf(oc.Variables[v.name])), 10)
		} else {
			key = fmt.Append(key, oc.Variables[v.name])
		}
	}
	if c, ok := m.kept.Get(string(key)); ok {
		return c
	}
	c := m.costOf(oc)
	m.kept.Add(string(key), c)
	return c
}

// costVariable is a variable that can change an operation's cost: through @skip or @include
// (any directive), a page size (first, last), or, by its length only, a list of ids.
type costVariable struct {
	name   string
	length bool
}

// costVariables lists the variables of oc's operation that can change its cost, in a fixed
// order, from the operation and every fragment of its document.
func costVariables(oc *graphql.OperationContext) []costVariable {
	found := map[costVariable]bool{}
	var walk func(ast.SelectionSet)
	directives := func(ds ast.DirectiveList) {
		for _, d := range ds {
			for _, a := range d.Arguments {
				if a.Value != nil && a.Value.Kind == ast.Variable {
					found[costVariable{name: a.Value.Raw}] = true
				}
			}
		}
	}
	walk = func(set ast.SelectionSet) {
		for _, sel := range set {
			switch sel := sel.(type) {
			case *ast.Field:
				directives(sel.Directives)
				for _, a := range sel.Arguments {
					if a.Value == nil || a.Value.Kind != ast.Variable {
						continue
					}
					switch a.Name {
					case "first", "last":
						found[costVariable{name: a.Value.Raw}] = true
					case "ids":
						found[costVariable{name: a.Value.Raw, length: true}] = true
					}
				}
				walk(sel.SelectionSet)
			case *ast.InlineFragment:
				directives(sel.Directives)
				walk(sel.SelectionSet)
			case *ast.FragmentSpread:
				directives(sel.Directives)
			}
		}
	}
	walk(oc.Operation.SelectionSet)
	for _, f := range oc.Doc.Fragments {
		walk(f.SelectionSet)
	}
	vars := slices.Collect(maps.Keys(found))
	slices.SortFunc(vars, func(a, b costVariable) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		switch {
		case a.length == b.length:
			return 0
		case a.length:
			return 1
		}
		return -1
	})
	return vars
}

// costOf computes the cost of oc's operation.
func (m *costModel) costOf(oc *graphql.OperationContext) int {
	var root *ast.Definition
	switch oc.Operation.Operation {
	case ast.Query:
		root = m.schema.Query
	case ast.Mutation:
		root = m.schema.Mutation
	case ast.Subscription:
		root = m.schema.Subscription
	}
	if root == nil {
		return 0
	}
	c := &coster{m: m, oc: oc, memo: map[costKey]int{}}
	return c.selection(oc.Operation.SelectionSet, root.Name, 0)
}

// coster costs one operation, remembering the cost of each selection it has seen: the same
// fragment spread under many aliases is costed once, so costing a query takes time in
// proportion to its text, however many times its fragments multiply.
type coster struct {
	m    *costModel
	oc   *graphql.OperationContext
	memo map[costKey]int
	key  []byte
}

type costKey struct {
	typ  string
	page int
	sels string // the selections' addresses (a plain spread's, its fragment's): the same AST nodes, wherever they are reached
}

// selection is the cost of resolving sels once on a value of type typ; page, when not 0, is
// the page size of the connection typ is.
func (c *coster) selection(sels ast.SelectionSet, typ string, page int) int {
	if len(sels) == 0 {
		return 0
	}
	c.key = c.key[:0]
	for _, sel := range sels {
		node := any(sel)
		if fs, ok := sel.(*ast.FragmentSpread); ok && len(fs.Directives) == 0 && fs.Definition != nil {
			node = fs.Definition // every plain spread of a fragment selects the same
		}
		c.key = binary.LittleEndian.AppendUint64(c.key, uint64(reflect.ValueOf(node).Pointer()))
	}
	k := costKey{typ: typ, page: page, sels: string(c.key)}
	if v, ok := c.memo[k]; ok {
		return v
	}
	def := c.m.schema.Types[typ]
	total := 0
	switch {
	case def == nil:
	case def.IsAbstractType():
		for _, t := range c.m.schema.GetPossibleTypes(def) {
			total = max(total, c.object(sels, t.Name, page))
		}
	default:
		total = c.object(sels, typ, page)
	}
	c.memo[k] = total
	return total
}

func (c *coster) object(sels ast.SelectionSet, typ string, page int) int {
	total := 0
	for _, f := range graphql.CollectFields(c.oc, sels, c.m.satisfies[typ]) {
		total = min(total+c.field(typ, f, page), costCap)
	}
	return total
}

// field is the cost of one collected field of an object of type typ.
func (c *coster) field(typ string, f graphql.CollectedField, page int) int {
	if f.Name == "__schema" || f.Name == "__type" {
		return introspectionCost
	}
	if strings.HasPrefix(f.Name, "__") || f.Definition == nil {
		return 0
	}
	key := typ + "." + f.Name
	own := 0
	if resolverFields[key] && !readsNothing[key] {
		own = max(fieldStatements[key], 1)
	}
	times, childPage := 1, 0
	args := f.ArgumentMap(c.oc.Variables)
	switch {
	case key == "Query.nodes":
		times = min(lenOf(args["ids"]), maxNodes)
		own *= times
	case f.Definition.Arguments.ForName("first") != nil || f.Definition.Arguments.ForName("last") != nil:
		childPage = pageSizeOf(args)
	case f.Definition.Type.Elem != nil:
		times = store.DefaultPageSize
		if page > 0 {
			times = page // a connection's edges
		}
	}
	child := c.selection(f.Selections, f.Definition.Type.Name(), childPage)
	return min(own+times*child, costCap)
}

// pageSizeOf is the page a connection's arguments ask for: first or last (the larger, when a
// query gives both, which the resolver refuses), else the default; at most MaxPageSize.
func pageSizeOf(args map[string]any) int {
	n := 0
	for _, name := range []string{"first", "last"} {
		if v, ok := intArg(args[name], 0); ok && v > n {
			n = v
		}
	}
	if n == 0 {
		n = store.DefaultPageSize
	}
	return min(n, store.MaxPageSize)
}

// lenOf is the length of a list argument, as a literal or a variable gives it.
func lenOf(v any) int {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice {
		return rv.Len()
	}
	if v != nil {
		return 1 // a single value stands for a list of one
	}
	return 0
}
