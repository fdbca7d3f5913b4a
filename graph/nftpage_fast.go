package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"marketd/store"
)

// A page of a collection's NFTs is what dApp grids and dashboards ask for most, each with
// other filters, sorts and cursors, so its answers are rarely kept. gqlgen's executor resolves
// each of such a page's ~420 fields through a field context, a closure and the middleware, and
// marshals every element of a list in a goroutine of its own: most of a query's cost. A query
// of exactly the shape below is answered by nftPageAnswer instead: the same resolvers read the
// collection and the page (Query.collection and the NFT index behind Collection.nfts), the
// arguments go through the generated executor's own coercion, and every value through the
// scalar and enum marshalers the executor uses, written in the order the query asks. Anything
// else (another field, a fragment, a directive, a repeated response name) and any error go to
// the executor, and TestNFTPageFastPath_AnswersByteForByteAsTheExecutor holds the two equal.
//
//	query { collection(id|slug) { __typename collectionId slug name
//	  nfts(filter sort first after last before) { __typename totalCount
//	    edges { __typename cursor node { __typename id contractId collectionId serial name image owner
//	      traits { __typename type value } listing { __typename cid seller price currency expiresAt } } }
//	    pageInfo { __typename hasNextPage hasPreviousPage startCursor endCursor } } } }
//
// Aliases are answered under their names, as the executor does.

// nftPageFields is the shape: for each object type, the fields answered, and for those with
// a selection of their own, its type.
var nftPageFields = map[string]map[string]string{
	"Query":         {"collection": "Collection"},
	"Collection":    {"__typename": "", "collectionId": "", "slug": "", "name": "", "nfts": "NFTConnection"},
	"NFTConnection": {"__typename": "", "totalCount": "", "edges": "NFTEdge", "pageInfo": "PageInfo"},
	"NFTEdge":       {"__typename": "", "cursor": "", "node": "NFT"},
	"NFT": {"__typename": "", "id": "", "contractId": "", "collectionId": "", "serial": "", "name": "", "image": "",
		"owner": "", "traits": "Trait", "listing": "Listing"},
	"Trait":    {"__typename": "", "type": "", "value": ""},
	"Listing":  {"__typename": "", "cid": "", "seller": "", "price": "", "currency": "", "expiresAt": ""},
	"PageInfo": {"__typename": "", "hasNextPage": "", "hasPreviousPage": "", "startCursor": "", "endCursor": ""},
}

// nftPageShaped tells whether set, selected on typ, keeps to the shape.
func nftPageShaped(typ string, set ast.SelectionSet) bool {
	fields := nftPageFields[typ]
	seen := make(map[string]bool, len(set))
	for _, sel := range set {
		f, ok := sel.(*ast.Field)
		if !ok || len(f.Directives) > 0 || seen[f.Alias] {
			return false
		}
		seen[f.Alias] = true
		child, ok := fields[f.Name]
		if !ok || (len(f.Arguments) > 0 && f.Name != "collection" && f.Name != "nfts") {
			return false
		}
		if (child == "") != (len(f.SelectionSet) == 0) || child != "" && !nftPageShaped(child, f.SelectionSet) {
			return false
		}
	}
	return true
}

// nftPageFastPath is the extension that answers such queries. It intercepts the response
// innermost, so the extensions around it (metrics, the kept-answer verdict) see its answers as
// any other.
type nftPageFastPath struct {
	es      *executableSchema
	r       *Resolver
	answers *atomic.Int64 // when set, counts the queries it answered
}

func (*nftPageFastPath) ExtensionName() string                   { return "NFTPageFastPath" }
func (*nftPageFastPath) Validate(graphql.ExecutableSchema) error { return nil }

func (p *nftPageFastPath) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	if !graphql.HasOperationContext(ctx) { // a request refused before it parsed
		return next(ctx)
	}
	oc := graphql.GetOperationContext(ctx)
	if oc.Operation == nil || oc.Operation.Operation != ast.Query || len(oc.Operation.SelectionSet) != 1 ||
		!nftPageShaped("Query", oc.Operation.SelectionSet) {
		return next(ctx)
	}
	data, ok := p.answer(ctx, oc)
	if !ok {
		return next(ctx)
	}
	if p.answers != nil {
		p.answers.Add(1)
	}
	return &graphql.Response{Data: data}
}

var nftPageBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// answer reads and writes the query's data; false on any error, which the executor then
// meets and reports its way.
func (p *nftPageFastPath) answer(ctx context.Context, oc *graphql.OperationContext) (json.RawMessage, bool) {
	ec := newExecutionContext(oc, p.es, nil)
	root := oc.Operation.SelectionSet[0].(*ast.Field)
	args, err := ec.field_Query_collection_args(ctx, root.ArgumentMap(oc.Variables))
	if err != nil {
		return nil, false
	}
	id, _ := args["id"].(*string)
	slug, _ := args["slug"].(*string)
	c, err := p.r.Query().Collection(ctx, id, slug)
	if err != nil {
		return nil, false
	}
	w := nftPageBuffers.Get().(*bytes.Buffer)
	defer nftPageBuffers.Put(w)
	w.Reset()
	w.WriteString(`{"`)
	w.WriteString(root.Alias)
	w.WriteString(`":`)
	if c == nil {
		w.WriteString("null")
	} else if !p.collection(ctx, ec, oc, w, root.SelectionSet, c) {
		return nil, false
	}
	w.WriteByte('}')
	return bytes.Clone(w.Bytes()), true
}

// key opens the value of the i-th field of an object.
func key(w *bytes.Buffer, i int, f *ast.Field) {
	if i == 0 {
		w.WriteByte('{')
	} else {
		w.WriteByte(',')
	}
	w.WriteByte('"')
	w.WriteString(f.Alias)
	w.WriteString(`":`)
}

func (p *nftPageFastPath) collection(ctx context.Context, ec *executionContext, oc *graphql.OperationContext, w *bytes.Buffer, set ast.SelectionSet, c *store.Collection) bool {
	for i, sel := range set {
		f := sel.(*ast.Field)
		key(w, i, f)
		switch f.Name {
		case "__typename":
			graphql.MarshalString("Collection").MarshalGQL(w)
		case "collectionId":
			graphql.MarshalID(c.ID).MarshalGQL(w)
		case "slug":
			graphql.MarshalString(c.Slug).MarshalGQL(w)
		case "name":
			graphql.MarshalString(c.Name).MarshalGQL(w)
		case "nfts":
			args, err := ec.field_Collection_nfts_args(ctx, f.ArgumentMap(oc.Variables))
			if err != nil {
				return false
			}
			filter, _ := args["filter"].(*NFTFilter)
			sort, _ := args["sort"].(*NFTSort)
			first, _ := args["first"].(*int)
			after, _ := args["after"].(*string)
			last, _ := args["last"].(*int)
			before, _ := args["before"].(*string)
			conn, _, err := p.r.nftPage(ctx, c, filter, sort, first, after, last, before)
			if err != nil {
				return false
			}
			writeNFTConnection(w, f.SelectionSet, conn)
		}
	}
	w.WriteByte('}')
	return true
}

func writeNFTConnection(w *bytes.Buffer, set ast.SelectionSet, conn *NFTConnection) {
	for i, sel := range set {
		f := sel.(*ast.Field)
		key(w, i, f)
		switch f.Name {
		case "__typename":
			graphql.MarshalString("NFTConnection").MarshalGQL(w)
		case "totalCount":
			if conn.TotalCount == nil {
				w.WriteString("null")
			} else {
				graphql.MarshalInt(*conn.TotalCount).MarshalGQL(w)
			}
		case "edges":
			w.WriteByte('[')
			for j, e := range conn.Edges {
				if j > 0 {
					w.WriteByte(',')
				}
				writeNFTEdge(w, f.SelectionSet, e)
			}
			w.WriteByte(']')
		case "pageInfo":
			writePageInfo(w, f.SelectionSet, conn.PageInfo)
		}
	}
	w.WriteByte('}')
}

func writeNFTEdge(w *bytes.Buffer, set ast.SelectionSet, e *NFTEdge) {
	for i, sel := range set {
		f := sel.(*ast.Field)
		key(w, i, f)
		switch f.Name {
		case "__typename":
			graphql.MarshalString("NFTEdge").MarshalGQL(w)
		case "cursor":
			graphql.MarshalString(e.Cursor).MarshalGQL(w)
		case "node":
			writeNFT(w, f.SelectionSet, e.Node)
		}
	}
	w.WriteByte('}')
}

func writeNFT(w *bytes.Buffer, set ast.SelectionSet, n *store.NFTView) {
	for i, sel := range set {
		f := sel.(*ast.Field)
		key(w, i, f)
		switch f.Name {
		case "__typename":
			graphql.MarshalString("NFT").MarshalGQL(w)
		case "id":
			MarshalNFTGlobalID(n.Ref()).MarshalGQL(w)
		case "contractId":
			graphql.MarshalID(n.ContractID).MarshalGQL(w)
		case "collectionId":
			graphql.MarshalID(n.CollectionID).MarshalGQL(w)
		case "serial":
			graphql.MarshalInt(n.Serial).MarshalGQL(w)
		case "name":
			graphql.MarshalString(n.Name).MarshalGQL(w)
		case "image":
			graphql.MarshalString(n.Image).MarshalGQL(w)
		case "owner":
			graphql.MarshalID(n.Owner).MarshalGQL(w)
		case "traits":
			w.WriteByte('[')
			for j := range n.Traits {
				if j > 0 {
					w.WriteByte(',')
				}
				writeTrait(w, f.SelectionSet, &n.Traits[j])
			}
			w.WriteByte(']')
		case "listing":
			if n.Listing == nil {
				w.WriteString("null")
			} else {
				writeListing(w, f.SelectionSet, n.Listing)
			}
		}
	}
	w.WriteByte('}')
}

func writeTrait(w *bytes.Buffer, set ast.SelectionSet, t *store.Trait) {
	for i, sel := range set {
		f := sel.(*ast.Field)
		key(w, i, f)
		switch f.Name {
		case "__typename":
			graphql.MarshalString("Trait").MarshalGQL(w)
		case "type":
			graphql.MarshalString(t.Type).MarshalGQL(w)
		case "value":
			graphql.MarshalString(t.Value).MarshalGQL(w)
		}
	}
	w.WriteByte('}')
}

func writeListing(w *bytes.Buffer, set ast.SelectionSet, l *store.ListingView) {
	for i, sel := range set {
		f := sel.(*ast.Field)
		key(w, i, f)
		switch f.Name {
		case "__typename":
			graphql.MarshalString("Listing").MarshalGQL(w)
		case "cid":
			graphql.MarshalID(l.CID).MarshalGQL(w)
		case "seller":
			graphql.MarshalID(l.Seller).MarshalGQL(w)
		case "price":
			MarshalDecimal(l.Price).MarshalGQL(w)
		case "currency":
			graphql.MarshalString(marshalNInstrument2marketdᚋstoreᚐInstrument[l.Currency]).MarshalGQL(w)
		case "expiresAt":
			if l.ExpiresAt == nil {
				w.WriteString("null")
			} else {
				MarshalUnixTime(*l.ExpiresAt).MarshalGQL(w)
			}
		}
	}
	w.WriteByte('}')
}

func writePageInfo(w *bytes.Buffer, set ast.SelectionSet, pi *PageInfo) {
	opt := func(s *string) {
		if s == nil {
			w.WriteString("null")
		} else {
			graphql.MarshalString(*s).MarshalGQL(w)
		}
	}
	for i, sel := range set {
		f := sel.(*ast.Field)
		key(w, i, f)
		switch f.Name {
		case "__typename":
			graphql.MarshalString("PageInfo").MarshalGQL(w)
		case "hasNextPage":
			graphql.MarshalBoolean(pi.HasNextPage).MarshalGQL(w)
		case "hasPreviousPage":
			graphql.MarshalBoolean(pi.HasPreviousPage).MarshalGQL(w)
		case "startCursor":
			opt(pi.StartCursor)
		case "endCursor":
			opt(pi.EndCursor)
		}
	}
	w.WriteByte('}')
}
