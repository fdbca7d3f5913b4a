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
// their variables), each field's arguments through the unmarshalers the executor coerces them
// with, the resolvers and model fields the executor reads, every value written as the scalar
// and enum marshalers the executor uses write it, in the order the executor writes them.
//
// This file holds the machinery: the extension, the walk's checks, and fastAnswer's writers of
// objects, lists and each scalar. The per-type part, a method per type that writes an object
// of it field by field (writeNFTFields, writeCollection, ...) and the Query root's fields
// (writeQuery), is nftpage_fast_gen.go, which graph/internal/fastpathgen writes from the schema
// and gqlgen's bindings in the same run as the executor (`go generate ./graph`): a field added
// to one of these types is written with no edit here, and one of a scalar with no writer here
// fails the generation. The generator's tables hold the exceptions (NFT.history left to the
// executor; Collection.nfts read through collectionNFTs, without the histories Nfts primes).
//
// A field outside
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
	es      graphql.ExecutableSchema
	r       *Resolver
	answers *atomic.Int64   // when set, counts the queries it answered
	fields  map[string]bool // Type.field of every field it writes
}

func newFastPath(es graphql.ExecutableSchema, r *Resolver, answers *atomic.Int64) *fastPath {
	return &fastPath{es: es, r: r, answers: answers, fields: fastFields}
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
	a := &fastAnswer{ctx: ctx, oc: oc, es: p.es, r: p.r, w: w}
	if !a.writeQuery(oc.Operation.SelectionSet) {
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
	es  graphql.ExecutableSchema
	ec  fastExec // made when an argument is first coerced
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
