package graph

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"marketd/store"
	"marketd/store/metrics"
)

// responseCache keeps the answers of queries built only from the store's page caches (the
// collections list, a collection, its NFT pages) and serves them again, byte for byte, while
// every page they were built from is current: no write to its collection has committed, none
// of its listings has expired, and the page cache's TTL has not passed. The dashboards polling
// the same few queries then cost what REST's cached pages cost, without gqlgen's work per
// field. An answer that read anything else (a statement on the database, the caller, the
// clock, a resolver not known to read only cached pages) or that holds an error is not kept.
type responseCache struct {
	store   *store.Store
	metrics *metrics.Metrics

	mu      sync.Mutex
	entries map[string]*cachedResponse
	bytes   int
}

type cachedResponse struct {
	body        []byte
	contentType string
	reads       *store.Reads
	charged     int // the reads of the budget its query was charged (budget.go), charged again
}

const (
	maxKeyBytes      = 16 << 10 // a request larger than this is not looked up or kept
	maxResponseBytes = 1 << 20  // nor an answer larger than this
	maxCachedBytes   = 64 << 20 // past this, the cache starts over
)

// reusableResolvers are the resolvers that read only through the store's page caches (whose
// other reads, a cache miss included, spoil the record themselves) or not at all. A query
// that selects any other resolver (or model method) is not kept: it may read the caller, the
// clock or the oracle.
var reusableResolvers = map[string]bool{
	"Query.collections": true, // Store.Collections: a cached page
	"Query.collection":  true, // Store.CollectionByID or BySlug: a cached page of one
	"Collection.phases": true, // the collection's own field
	"Collection.nfts":   true, // Store.NFTs: a cached page
	"NFT.collection":    true, // primed from the page's collection, else a statement
	// The global ids (node.go) read nothing but their object.
	"Collection.id": true,
	"NFT.id":        true,
	"Pool.id":       true,
	"LPQuote.id":    true,
	"Intent.id":     true,
}

// serve answers r from the cache when it can, else runs next and keeps what it answered if
// that may be reused. Subscriptions (WebSocket upgrades) never come here.
func (c *responseCache) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	key, ok := cacheKey(r)
	if !ok {
		next.ServeHTTP(w, r)
		return
	}
	start := time.Now()
	spent := spenderOf(r.Context())
	if e := c.get(key); e != nil {
		if e.reads.Current(c.store) {
			// A kept answer costs the reads its query costs when it runs: the budget counts
			// what a client asks, not what the service happens to have at hand.
			if gerr := spent.spend(e.charged); gerr != nil {
				writeRefusal(w, gerr)
				return
			}
			h := w.Header()
			h.Set("Content-Type", e.contentType)
			h.Set("Content-Length", strconv.Itoa(len(e.body)))
			w.Write(e.body)
			c.metrics.GraphQLAnswerReused(time.Since(start))
			return
		}
	}
	ctx, reads := store.TrackReads(r.Context())
	verdict := new(reuseVerdict)
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	next.ServeHTTP(rec, r.WithContext(context.WithValue(ctx, reuseVerdictKey{}, verdict)))
	if rec.status == http.StatusOK && !rec.overflow && verdict.keep() && reads.Keepable() && (spent == nil || !spent.refused) {
		e := &cachedResponse{body: rec.buf.Bytes(), contentType: rec.Header().Get("Content-Type"), reads: reads}
		if spent != nil {
			e.charged = spent.reads
		}
		c.put(key, e)
	}
}

// cacheKey names what a request asks: its method, URL query, the media types it sends and
// accepts, and its body, which it reads (and puts back for the handler). False means the
// request is not one to look up.
func cacheKey(r *http.Request) (string, bool) {
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		return "", false
	}
	var body []byte
	if r.Method == http.MethodPost {
		if r.ContentLength > maxKeyBytes {
			return "", false
		}
		b, err := io.ReadAll(io.LimitReader(r.Body, maxKeyBytes+1))
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), r.Body))
		if err != nil || len(b) > maxKeyBytes {
			return "", false
		}
		body = b
	}
	var k strings.Builder
	for _, part := range []string{r.Method, r.URL.RawQuery, r.Header.Get("Content-Type"), r.Header.Get("Accept")} {
		k.WriteString(strconv.Itoa(len(part)))
		k.WriteByte(':')
		k.WriteString(part)
	}
	k.Write(body)
	if k.Len() > maxKeyBytes+1024 {
		return "", false
	}
	return k.String(), true
}

func (c *responseCache) get(key string) *cachedResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[key]
}

func (c *responseCache) put(key string, e *cachedResponse) {
	size := len(key) + len(e.body)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.entries[key]; old != nil {
		c.bytes -= len(key) + len(old.body)
	}
	if c.entries == nil || c.bytes+size > maxCachedBytes {
		c.entries, c.bytes = map[string]*cachedResponse{}, 0
	}
	c.entries[key] = e
	c.bytes += size
}

// recorder passes an answer on to the client and keeps a copy, up to maxResponseBytes.
type recorder struct {
	http.ResponseWriter
	status   int
	buf      bytes.Buffer
	overflow bool
}

func (w *recorder) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

func (w *recorder) Write(p []byte) (int, error) {
	if !w.overflow {
		if w.buf.Len()+len(p) > maxResponseBytes {
			w.overflow, w.buf = true, bytes.Buffer{}
		} else {
			w.buf.Write(p)
		}
	}
	return w.ResponseWriter.Write(p)
}

func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// reuseVerdict is what the operation itself says of reusing its answer: yes when it ran as a
// query and gave one answer, without an error.
type reuseVerdict struct{ answers, clean atomic.Int32 }

func (v *reuseVerdict) keep() bool { return v.answers.Load() == 1 && v.clean.Load() == 1 }

type reuseVerdictKey struct{}

// reuseGuard is the extension that spoils an answer's reads when its query selects a field
// that runs a resolver or a model's method (resolverFields, listed from the generated executor
// by go generate) outside reusableResolvers, and gives the verdict on the answer. It reads the
// query once, before it runs, rather than intercepting each of its fields as they resolve: a
// page of NFTs is hundreds of fields. Introspection reads the schema only and is let through.
type reuseGuard struct{ schema *ast.Schema }

func (reuseGuard) ExtensionName() string                   { return "ReuseGuard" }
func (reuseGuard) Validate(graphql.ExecutableSchema) error { return nil }

func (g reuseGuard) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	if oc.Operation != nil && g.spoils(oc.Operation.SelectionSet) {
		store.Spoil(ctx)
	}
	return nil
}

// spoils tells whether set selects, at any depth, a field that may run code not known to read
// only cached pages. A field asked of an interface or a union counts for every type that can
// stand there; @skip and @include are not read, so a field they leave out still counts.
func (g reuseGuard) spoils(set ast.SelectionSet) bool {
	for _, sel := range set {
		switch sel := sel.(type) {
		case *ast.Field:
			if strings.HasPrefix(sel.Name, "__") {
				continue // __typename, __schema, __type
			}
			parent := sel.ObjectDefinition
			if parent == nil {
				return true
			}
			if strings.HasPrefix(parent.Name, "__") {
				continue
			}
			types := []*ast.Definition{parent}
			if parent.Kind != ast.Object {
				types = g.schema.GetPossibleTypes(parent)
			}
			for _, t := range types {
				if key := t.Name + "." + sel.Name; resolverFields[key] && !reusableResolvers[key] {
					return true
				}
			}
			if g.spoils(sel.SelectionSet) {
				return true
			}
		case *ast.InlineFragment:
			if g.spoils(sel.SelectionSet) {
				return true
			}
		case *ast.FragmentSpread:
			if sel.Definition == nil || g.spoils(sel.Definition.SelectionSet) {
				return true
			}
		default:
			return true
		}
	}
	return false
}

func (reuseGuard) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	v, _ := ctx.Value(reuseVerdictKey{}).(*reuseVerdict)
	if v == nil || resp == nil || !graphql.HasOperationContext(ctx) {
		return resp
	}
	v.answers.Add(1)
	if op := graphql.GetOperationContext(ctx).Operation; op != nil && op.Operation == ast.Query && len(resp.Errors) == 0 {
		v.clean.Add(1)
	}
	return resp
}
