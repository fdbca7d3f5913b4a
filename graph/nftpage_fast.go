package graph

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"marketd/store"
)

// Pages of collections and of their NFTs are what dApp grids and dashboards ask for most, each
// with other fields, aliases, fragments, filters, sorts and cursors, so their answers are rarely
// kept. gqlgen's executor resolves each of a page's ~400 fields through a field context, a
// closure and the middleware, and marshals every element of a list in a goroutine of its own:
// most of a query's cost. fastPath answers a query instead when everything it selects is a
// field of the types below (any of their fields but NFT.history, which batches a statement per
// page across the NFTs' concurrent resolvers):
//
//	Query { __typename collection collections nft }
//	Collection, CollectionConnection, CollectionEdge, MintPhase,
//	NFTConnection, NFTEdge, NFT, Trait, Listing, BestOffer, PageInfo
//
// It walks the operation as the executor does: the fields of each selection set as gqlgen's
// CollectFields merges them (fragments, inline fragments, aliases, @skip and @include with
// their variables), each field's arguments through the generated executor's own coercion, the
// resolvers and model fields the executor reads, every value through the scalar and enum
// marshalers the executor uses, written in the order the executor writes them. A field outside
// these types or a deferred fragment leaves the query to the executor before anything is read
// ([fastPath.writes]); any error (an argument refused, a resolver's error, a null where the
// schema says non-null) leaves it midway, and the executor then answers and reports it its
// way. TestFastPath_AnswersRandomQueriesByteForByteAsTheExecutor holds the two
// equal over randomly drawn queries, TestFastPath_AnswersEveryFieldOfItsTypes that it knows
// every field the schema gives these types.
//
// It intercepts the response innermost, so the extensions around it (metrics, the kept-answer
// verdict, the limits) see its answers as any other.
type fastPath struct {
	es      *executableSchema
	r       *Resolver
	answers *atomic.Int64   // when set, counts the queries it answered
	fields  map[string]bool // Type.field of every field it writes
}

// fastTypes are the types the fast path writes every field of, NFT.history aside.
var fastTypes = []string{"Collection", "CollectionConnection", "CollectionEdge", "MintPhase",
	"NFTConnection", "NFTEdge", "NFT", "Trait", "Listing", "BestOffer", "PageInfo"}

func newFastPath(es *executableSchema, r *Resolver, answers *atomic.Int64) *fastPath {
	fields := map[string]bool{"Query.collection": true, "Query.collections": true, "Query.nft": true, "Node.id": true}
	for _, typ := range fastTypes {
		for _, f := range es.Schema().Types[typ].Fields {
			fields[typ+"."+f.Name] = true
		}
	}
	delete(fields, "NFT.history")
	return &fastPath{es: es, r: r, answers: answers, fields: fields}
}

// writes tells whether every field set selects, at any depth and through its fragments, is
// one the fast path writes, and none is deferred: a query it would leave to the executor
// midway is left before it reads anything.
func (p *fastPath) writes(set ast.SelectionSet, oc *graphql.OperationContext, seen map[string]bool) bool {
	for _, sel := range set {
		switch sel := sel.(type) {
		case *ast.Field:
			if sel.Name != "__typename" && (sel.ObjectDefinition == nil || !p.fields[sel.ObjectDefinition.Name+"."+sel.Name]) {
				return false
			}
			if !p.writes(sel.SelectionSet, oc, seen) {
				return false
			}
		case *ast.InlineFragment:
			if sel.Directives.ForName("defer") != nil || !p.writes(sel.SelectionSet, oc, seen) {
				return false
			}
		case *ast.FragmentSpread:
			if sel.Directives.ForName("defer") != nil {
				return false
			}
			if seen[sel.Name] {
				continue
			}
			seen[sel.Name] = true
			def := oc.Doc.Fragments.ForName(sel.Name)
			if def == nil || !p.writes(def.SelectionSet, oc, seen) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func (*fastPath) ExtensionName() string                   { return "FastPath" }
func (*fastPath) Validate(graphql.ExecutableSchema) error { return nil }

func (p *fastPath) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	if !graphql.HasOperationContext(ctx) { // a request refused before it parsed
		return next(ctx)
	}
	oc := graphql.GetOperationContext(ctx)
	// A transport that streams (a websocket) asks again until the answer is nil: an operation
	// the fast path answered has ended (nil); one it left is the executor's to the end.
	switch oc.Stats.GetExtension(fastPathStat) {
	case fastAnswered:
		return nil
	case fastLeft:
		return next(ctx)
	}
	oc.Stats.SetExtension(fastPathStat, fastLeft)
	// A query a limit refused comes here with its errors (DispatchError), not to be run.
	if oc.Operation == nil || oc.Operation.Operation != ast.Query || len(graphql.GetErrors(ctx)) > 0 ||
		!p.writes(oc.Operation.SelectionSet, oc, map[string]bool{}) {
		return next(ctx)
	}
	w := fastBuffers.Get().(*bytes.Buffer)
	defer fastBuffers.Put(w)
	w.Reset()
	// What the fast path reads, the executor finds again if it must answer instead.
	ctx = withReadMemo(ctx)
	a := &fastAnswer{ctx: ctx, oc: oc, ec: newExecutionContext(oc, p.es, nil), r: p.r, w: w}
	if !a.query(oc.Operation.SelectionSet) {
		// An error: the executor answers and reports it its way, from the reads made so far.
		return next(ctx)
	}
	oc.Stats.SetExtension(fastPathStat, fastAnswered)
	if p.answers != nil {
		p.answers.Add(1)
	}
	// As the executor's response: any extensions the request's own extensions added.
	return &graphql.Response{Data: json.RawMessage(bytes.Clone(w.Bytes())), Extensions: graphql.GetExtensions(ctx)}
}

// fastPathStat records, in an operation's stats, how the fast path's one turn went.
const fastPathStat = "marketd.fastPath"

const (
	fastLeft     = "left"     // to the executor
	fastAnswered = "answered" // the whole answer was given
)

var fastBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// fastAnswer writes one query's data. Each method writes a value and returns false when the
// executor must answer instead; what it wrote is then dropped.
type fastAnswer struct {
	ctx context.Context
	oc  *graphql.OperationContext
	ec  *executionContext
	r   *Resolver
	w   *bytes.Buffer

	scratch [64]byte  // for numbers, decimals and ids on their way to w
	encoded [128]byte // for an id's base64

	// collected holds each selection set's fields as collected for one object type: a page's
	// NFTs share one selection set, collected once an operation rather than once an NFT.
	collected map[collectedKey][]graphql.CollectedField
}

// collectedKey names a selection set (by its first selection's address in the document and
// its length) and the implementors its fields were collected for.
type collectedKey struct {
	first *ast.Selection
	n     int
	impl  *string
}

// fields is the executor's own collection of sel on an object of a type that implementors
// satisfy; false when a field of it is deferred (@defer answers in parts).
func (a *fastAnswer) fields(sel ast.SelectionSet, implementors []string) ([]graphql.CollectedField, bool) {
	var k collectedKey
	if len(sel) > 0 && len(implementors) > 0 {
		k = collectedKey{first: &sel[0], n: len(sel), impl: &implementors[0]}
		if fields, ok := a.collected[k]; ok {
			return fields, true
		}
	}
	fields := graphql.CollectFields(a.oc, sel, implementors)
	for _, f := range fields {
		if f.IsDeferred() {
			return nil, false
		}
	}
	if k.first != nil {
		if a.collected == nil {
			a.collected = map[collectedKey][]graphql.CollectedField{}
		}
		a.collected[k] = fields
	}
	return fields, true
}

// object writes an object of the fields, under their response names, each value by value;
// false as soon as one is.
func (a *fastAnswer) object(fields []graphql.CollectedField, value func(f *graphql.CollectedField) bool) bool {
	a.w.WriteByte('{')
	for i := range fields {
		if i > 0 {
			a.w.WriteByte(',')
		}
		f := &fields[i]
		a.w.WriteByte('"')
		a.w.WriteString(f.Alias)
		a.w.WriteString(`":`)
		if !value(f) {
			return false
		}
	}
	a.w.WriteByte('}')
	return true
}

// args coerces a field's arguments as the executor does.
func (a *fastAnswer) args(f *graphql.CollectedField, coerce func(*executionContext, context.Context, map[string]any) (map[string]any, error)) (map[string]any, bool) {
	args, err := coerce(a.ec, a.ctx, f.ArgumentMap(a.oc.Variables))
	return args, err == nil
}

// str writes s quoted as gqlgen's String and ID marshalers quote it (the same escapes, byte
// for byte; TestFastPath_WritesScalarsAsGqlgen holds them equal), without the marshaler's
// closure and its writes of a few bytes each.
func (a *fastAnswer) str(s string) {
	w := a.w
	w.WriteByte('"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '\\' && c != '"' {
			continue // a byte of a multi-byte rune is >= 0x80: written as it is, as gqlgen does
		}
		w.WriteString(s[start:i])
		switch c {
		case '\t':
			w.WriteString(`\t`)
		case '\r':
			w.WriteString(`\r`)
		case '\n':
			w.WriteString(`\n`)
		case '\\':
			w.WriteString(`\\`)
		case '"':
			w.WriteString(`\"`)
		default:
			w.WriteString(`\u00`)
			w.WriteByte(hexDigits[c>>4])
			w.WriteByte(hexDigits[c&0xf])
		}
		start = i + 1
	}
	w.WriteString(s[start:])
	w.WriteByte('"')
}

const hexDigits = "0123456789ABCDEF"

// nftID writes an NFT's global id as MarshalNFTGlobalID does (base64 needs no escapes).
func (a *fastAnswer) nftID(ref store.NFTRef) {
	raw := append(append(append(a.scratch[:0], nodeNFT...), ':'), ref.CollectionID...)
	raw = strconv.AppendInt(append(raw, '#'), int64(ref.Serial), 10)
	a.w.WriteByte('"')
	a.w.Write(base64.RawURLEncoding.AppendEncode(a.encoded[:0], raw))
	a.w.WriteByte('"')
}

func (a *fastAnswer) id(s string)   { a.str(s) } // gqlgen's ID marshals as its String
func (a *fastAnswer) integer(n int) { a.w.Write(strconv.AppendInt(a.scratch[:0], int64(n), 10)) }
func (a *fastAnswer) boolean(b bool) {
	if b {
		a.w.WriteString("true")
	} else {
		a.w.WriteString("false")
	}
}
func (a *fastAnswer) null() { a.w.WriteString("null") }

// amount writes a Decimal as MarshalDecimal does.
func (a *fastAnswer) amount(v store.Amount) {
	a.w.WriteByte('"') // a decimal's digits, sign and point need no escapes
	a.w.Write(v.AppendText(a.scratch[:0]))
	a.w.WriteByte('"')
}

// time writes a UnixTime as MarshalUnixTime does.
func (a *fastAnswer) time(t store.Timestamp) {
	a.w.Write(strconv.AppendInt(a.scratch[:0], t.Unix(), 10))
}
func (a *fastAnswer) instrument(v store.Instrument) {
	a.str(marshalNInstrument2marketdᚋstoreᚋledgerᚐInstrument[v])
}

// list writes n items, each by item; false as soon as one is.
func (a *fastAnswer) list(n int, item func(i int) bool) bool {
	a.w.WriteByte('[')
	for i := range n {
		if i > 0 {
			a.w.WriteByte(',')
		}
		if !item(i) {
			return false
		}
	}
	a.w.WriteByte(']')
	return true
}

func (a *fastAnswer) optInt(n *int) {
	if n == nil {
		a.null()
	} else {
		a.integer(*n)
	}
}

func (a *fastAnswer) optString(s *string) {
	if s == nil {
		a.null()
	} else {
		a.str(*s)
	}
}

func (a *fastAnswer) query(sel ast.SelectionSet) bool {
	fields, ok := a.fields(sel, queryImplementors)
	if !ok {
		return false
	}
	return a.object(fields, func(f *graphql.CollectedField) bool {
		switch f.Name {
		case "__typename":
			a.str("Query")
		case "collection":
			args, ok := a.args(f, (*executionContext).field_Query_collection_args)
			if !ok {
				return false
			}
			id, _ := args["id"].(*string)
			slug, _ := args["slug"].(*string)
			c, err := a.r.Query().Collection(a.ctx, id, slug)
			if err != nil {
				return false
			}
			if c == nil {
				a.null()
			} else if !a.collection(f.Selections, c) {
				return false
			}
		case "collections":
			args, ok := a.args(f, (*executionContext).field_Query_collections_args)
			if !ok {
				return false
			}
			sort, _ := args["sort"].(*CollectionSort)
			first, _ := args["first"].(*int)
			after, _ := args["after"].(*string)
			last, _ := args["last"].(*int)
			before, _ := args["before"].(*string)
			conn, err := a.r.Query().Collections(a.ctx, sort, first, after, last, before)
			if err != nil || conn == nil || !a.collectionConnection(f.Selections, conn) {
				return false
			}
		case "nft":
			args, ok := a.args(f, (*executionContext).field_Query_nft_args)
			if !ok {
				return false
			}
			contractID, _ := args["contractId"].(string)
			n, err := a.r.Query().Nft(a.ctx, contractID)
			if err != nil {
				return false
			}
			if n == nil {
				a.null()
			} else if !a.nft(f.Selections, n) {
				return false
			}
		default:
			return false
		}
		return true
	})
}

func (a *fastAnswer) collectionConnection(sel ast.SelectionSet, conn *CollectionConnection) bool {
	fields, ok := a.fields(sel, collectionConnectionImplementors)
	if !ok {
		return false
	}
	return a.object(fields, func(f *graphql.CollectedField) bool {
		switch f.Name {
		case "__typename":
			a.str("CollectionConnection")
		case "edges":
			edges, ok := a.fields(f.Selections, collectionEdgeImplementors)
			if !ok {
				return false
			}
			if !a.list(len(conn.Edges), func(j int) bool { return conn.Edges[j] != nil && a.collectionEdge(edges, conn.Edges[j]) }) {
				return false
			}
		case "pageInfo":
			if !a.pageInfo(f.Selections, conn.PageInfo) {
				return false
			}
		case "totalCount":
			n, err := a.r.CollectionConnection().TotalCount(a.ctx, conn)
			if err != nil {
				return false
			}
			a.integer(n)
		default:
			return false
		}
		return true
	})
}

func (a *fastAnswer) collectionEdge(fields []graphql.CollectedField, e *CollectionEdge) bool {
	return a.object(fields, func(f *graphql.CollectedField) bool {
		switch f.Name {
		case "__typename":
			a.str("CollectionEdge")
		case "cursor":
			a.str(e.Cursor)
		case "node":
			if e.Node == nil || !a.collection(f.Selections, e.Node) {
				return false
			}
		default:
			return false
		}
		return true
	})
}

func (a *fastAnswer) collection(sel ast.SelectionSet, c *store.Collection) bool {
	fields, ok := a.fields(sel, collectionImplementors)
	if !ok {
		return false
	}
	return a.object(fields, func(f *graphql.CollectedField) bool {
		switch f.Name {
		case "__typename":
			a.str("Collection")
		case "id":
			id, err := a.r.Collection().ID(a.ctx, c)
			if err != nil {
				return false
			}
			a.id(id)
		case "collectionId":
			a.id(c.ID)
		case "slug":
			a.str(c.Slug)
		case "name":
			a.str(c.Name)
		case "description":
			a.str(c.Description)
		case "image":
			a.str(c.Image)
		case "creator":
			a.id(c.Creator)
		case "currency":
			a.instrument(c.Currency)
		case "royaltyBps":
			a.integer(c.RoyaltyBps)
		case "supply":
			a.integer(c.Supply)
		case "minted":
			a.integer(c.Minted)
		case "burned":
			a.integer(c.Burned)
		case "floorPrice":
			if c.FloorPrice == nil {
				a.null()
			} else {
				a.amount(*c.FloorPrice)
			}
		case "listedCount":
			a.integer(c.ListedCount)
		case "owners":
			a.integer(c.Owners)
		case "volume":
			a.amount(c.Volume)
		case "topOffer":
			if c.TopOffer == nil {
				a.null()
			} else {
				a.amount(*c.TopOffer)
			}
		case "createdAt":
			a.time(c.CreatedAt)
		case "phases":
			phases, err := a.r.Collection().Phases(a.ctx, c)
			if err != nil {
				return false
			}
			fields, ok := a.fields(f.Selections, mintPhaseImplementors)
			if !ok {
				return false
			}
			if !a.list(len(phases), func(j int) bool { return phases[j] != nil && a.mintPhase(fields, phases[j]) }) {
				return false
			}
		case "nfts":
			args, ok := a.args(f, (*executionContext).field_Collection_nfts_args)
			if !ok {
				return false
			}
			filter, _ := args["filter"].(*NFTFilter)
			sort, _ := args["sort"].(*NFTSort)
			first, _ := args["first"].(*int)
			after, _ := args["after"].(*string)
			last, _ := args["last"].(*int)
			before, _ := args["before"].(*string)
			conn, _, err := a.r.collectionNFTs(a.ctx, c, filter, sort, first, after, last, before)
			if err != nil || !a.nftConnection(f.Selections, conn) {
				return false
			}
		default:
			return false
		}
		return true
	})
}

func (a *fastAnswer) mintPhase(fields []graphql.CollectedField, ph *store.MintPhase) bool {
	return a.object(fields, func(f *graphql.CollectedField) bool {
		switch f.Name {
		case "__typename":
			a.str("MintPhase")
		case "name":
			a.str(ph.Name)
		case "price":
			a.amount(ph.Price)
		case "start":
			a.time(ph.Start)
		case "end":
			a.time(ph.End)
		case "perPartyLimit":
			a.integer(ph.PerPartyLimit)
		case "supply":
			a.optInt(ph.Supply)
		case "minted":
			a.integer(ph.Minted)
		case "allowList":
			a.boolean(ph.AllowList)
		case "active":
			active, err := a.r.MintPhase().Active(a.ctx, ph)
			if err != nil {
				return false
			}
			a.boolean(active)
		default:
			return false
		}
		return true
	})
}

func (a *fastAnswer) nftConnection(sel ast.SelectionSet, conn *NFTConnection) bool {
	fields, ok := a.fields(sel, nFTConnectionImplementors)
	if !ok {
		return false
	}
	return a.object(fields, func(f *graphql.CollectedField) bool {
		switch f.Name {
		case "__typename":
			a.str("NFTConnection")
		case "totalCount":
			a.optInt(conn.TotalCount)
		case "edges":
			edges, ok := a.fields(f.Selections, nFTEdgeImplementors)
			if !ok {
				return false
			}
			if !a.list(len(conn.Edges), func(j int) bool { return conn.Edges[j] != nil && a.nftEdge(edges, conn.Edges[j]) }) {
				return false
			}
		case "pageInfo":
			if !a.pageInfo(f.Selections, conn.PageInfo) {
				return false
			}
		default:
			return false
		}
		return true
	})
}

func (a *fastAnswer) nftEdge(fields []graphql.CollectedField, e *NFTEdge) bool {
	return a.object(fields, func(f *graphql.CollectedField) bool {
		switch f.Name {
		case "__typename":
			a.str("NFTEdge")
		case "cursor":
			a.str(e.Cursor)
		case "node":
			if e.Node == nil || !a.nft(f.Selections, e.Node) {
				return false
			}
		default:
			return false
		}
		return true
	})
}

func (a *fastAnswer) nft(sel ast.SelectionSet, n *store.NFTView) bool {
	fields, ok := a.fields(sel, nFTImplementors)
	if !ok {
		return false
	}
	return a.object(fields, func(f *graphql.CollectedField) bool {
		switch f.Name {
		case "__typename":
			a.str("NFT")
		case "id":
			a.nftID(n.Ref())
		case "contractId":
			a.id(n.ContractID)
		case "collectionId":
			a.id(n.CollectionID)
		case "collection":
			c, err := a.r.NFT().Collection(a.ctx, n)
			if err != nil || c == nil || !a.collection(f.Selections, c) {
				return false
			}
		case "serial":
			a.integer(n.Serial)
		case "name":
			a.str(n.Name)
		case "image":
			a.str(n.Image)
		case "owner":
			a.id(n.Owner)
		case "traits":
			fields, ok := a.fields(f.Selections, traitImplementors)
			if !ok {
				return false
			}
			if !a.list(len(n.Traits), func(j int) bool { return a.trait(fields, &n.Traits[j]) }) {
				return false
			}
		case "listing":
			if n.Listing == nil {
				a.null()
			} else if !a.listing(f.Selections, n.Listing) {
				return false
			}
		case "bestOffer":
			if n.BestOffer == nil {
				a.null()
			} else if !a.bestOffer(f.Selections, n.BestOffer) {
				return false
			}
		default: // history
			return false
		}
		return true
	})
}

func (a *fastAnswer) trait(fields []graphql.CollectedField, t *store.Trait) bool {
	return a.object(fields, func(f *graphql.CollectedField) bool {
		switch f.Name {
		case "__typename":
			a.str("Trait")
		case "type":
			a.str(t.Type)
		case "value":
			a.str(t.Value)
		default:
			return false
		}
		return true
	})
}

func (a *fastAnswer) bestOffer(sel ast.SelectionSet, o *store.BestOffer) bool {
	fields, ok := a.fields(sel, bestOfferImplementors)
	if !ok {
		return false
	}
	return a.object(fields, func(f *graphql.CollectedField) bool {
		switch f.Name {
		case "__typename":
			a.str("BestOffer")
		case "cid":
			a.id(o.CID)
		case "price":
			a.amount(o.Price)
		case "kind":
			a.str(marshalNOfferKind2string[o.Kind])
		default:
			return false
		}
		return true
	})
}

func (a *fastAnswer) listing(sel ast.SelectionSet, l *store.ListingView) bool {
	fields, ok := a.fields(sel, listingImplementors)
	if !ok {
		return false
	}
	return a.object(fields, func(f *graphql.CollectedField) bool {
		switch f.Name {
		case "__typename":
			a.str("Listing")
		case "cid":
			a.id(l.CID)
		case "seller":
			a.id(l.Seller)
		case "price":
			a.amount(l.Price)
		case "currency":
			a.instrument(l.Currency)
		case "expiresAt":
			if l.ExpiresAt == nil {
				a.null()
			} else {
				a.time(*l.ExpiresAt)
			}
		default:
			return false
		}
		return true
	})
}

func (a *fastAnswer) pageInfo(sel ast.SelectionSet, pi *PageInfo) bool {
	fields, ok := a.fields(sel, pageInfoImplementors)
	if !ok || pi == nil {
		return false
	}
	return a.object(fields, func(f *graphql.CollectedField) bool {
		switch f.Name {
		case "__typename":
			a.str("PageInfo")
		case "hasNextPage":
			a.boolean(pi.HasNextPage)
		case "hasPreviousPage":
			a.boolean(pi.HasPreviousPage)
		case "startCursor":
			a.optString(pi.StartCursor)
		case "endCursor":
			a.optString(pi.EndCursor)
		default:
			return false
		}
		return true
	})
}
