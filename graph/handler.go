package graph

import (
	"context"
	"embed"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"marketd/store"
	"marketd/store/metrics"
	"marketd/store/ratelimit"
)

// Options is the GraphQL endpoint's part of the service configuration.
type Options struct {
	MaxDepth      int // deepest selection a query may make (introspection aside; fields and aliases: handler.go); 0 picks 12
	MaxComplexity int // the most an operation may cost (cost.go), whatever the budget; 0 picks 10,000
	// MaxAnswerBytes is the largest answer's data sent: a larger one is replaced by an error
	// with code payload_too_large; 0 picks 4 MiB.
	MaxAnswerBytes int
	Logger         *slog.Logger

	// Authenticate reads a request's token as REST does; nil means no query may act as a party.
	Authenticate func(*http.Request) (*store.Auth, error)
	// ChargeRead charges n reads at once to the read budget of r's client, the budget REST's
	// reads spend (rest.Server.ChargeRead); over the limit it returns rate_limited. Each
	// operation is charged by its cost (cost.go, budget.go). Nil means unlimited.
	ChargeRead func(r *http.Request, n int) (ratelimit.Decision, error)
	// Sockets bounds each websocket and the time it may act as its session, and the sockets
	// and subscriptions of each client address and of the handler (socket.go, census.go).
	Sockets SocketLimits
	// ClientAddress names a request's client, as REST's budgets do (rest.Server.ClientOrigin);
	// nil takes the connection's peer address.
	ClientAddress func(*http.Request) string
	// Metrics counts operations and their latency in the service's registry; nil counts nothing.
	Metrics *metrics.Metrics
	// RunEveryQuery runs each query, even one whose kept answer is current (response_cache.go):
	// for measuring the executor.
	RunEveryQuery bool
	// NoFastPath sends every query through gqlgen's executor, even the pages of collections
	// and NFTs that nftpage_fast.go answers itself: for tests that compare the two.
	NoFastPath bool

	fastAnswers *atomic.Int64 // when set, counts the fast path's answers (tests)
	lastCost    *atomic.Int64 // when set, holds the cost of the last operation charged (tests)
}

//go:embed graphiql
var graphiqlFiles embed.FS

// NewHandler serves POST /graphql (and GET with a query, for persisted queries), the GraphiQL
// page at GET /graphql, its assets under /graphql/assets/, and the schema as SDL at
// GET /graphql/schema.graphql.
func NewHandler(s *store.Store, cfg Options) http.Handler {
	if cfg.MaxDepth == 0 {
		cfg.MaxDepth = 12
	}
	if cfg.MaxComplexity == 0 {
		cfg.MaxComplexity = 10_000
	}
	if cfg.MaxAnswerBytes == 0 {
		cfg.MaxAnswerBytes = 4 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfgs := config(s)
	resolvers := cfgs.Resolvers.(*Resolver)
	es := NewExecutableSchema(cfgs)
	gql := handler.New(es)
	// Every operation's caller, and on a websocket its session and limits (socket.go).
	gql.Use(callerPerOperation{})
	gql.Use(operationSpans{}) // trace.go
	if cfg.ClientAddress == nil {
		cfg.ClientAddress = peerAddress
	}
	counts := &census{limits: cfg.Sockets.withDefaults()}
	gql.AddTransport(websocketTransport(s, counts.limits, counts, 15*time.Second))
	gql.AddTransport(transport.GET{})
	gql.AddTransport(postJSON{})
	gql.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	gql.Use(extension.Introspection{})
	gql.Use(extension.AutomaticPersistedQuery{Cache: lru.New[string](1000)})
	// Both limits are checked on the parsed query, before any resolver runs.
	gql.Use(depthLimit(cfg.MaxDepth))
	gql.Use(&operationBudget{model: newCostModel(es.Schema()), limit: cfg.MaxComplexity, seen: cfg.lastCost}) // budget.go
	gql.SetParserTokenLimit(maxQueryTokens)
	gql.Use(operationMetrics{cfg.Metrics})
	gql.Use(answerLimit(cfg.MaxAnswerBytes))
	gql.Use(reuseGuard{schema: es.Schema()})
	// Innermost: the extensions above see its answers as the executor's.
	if !cfg.NoFastPath {
		gql.Use(newFastPath(es, resolvers, cfg.fastAnswers))
	}
	gql.SetErrorPresenter(presentError(cfg.Logger))
	gql.SetRecoverFunc(func(ctx context.Context, v any) error {
		cfg.Logger.ErrorContext(ctx, "graphql resolver panicked", "panic", v)
		return store.Errorf(store.CodeInternal, "internal error")
	})

	assets, _ := fs.Sub(graphiqlFiles, "graphiql")
	page, _ := fs.ReadFile(assets, "index.html")
	mux := http.NewServeMux()
	mux.Handle("/graphql/assets/", http.StripPrefix("/graphql/assets/", http.FileServerFS(assets)))
	// The schema is fixed at build time: like the page's assets it is not a read of the store,
	// and costs no read budget.
	sdl := schemaSDL(es.Schema())
	mux.HandleFunc("GET /graphql/schema.graphql", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(sdl)))
		w.Write(sdl)
	})
	serve := withCaller(cfg.Authenticate, withLoaders(s, gql))
	answers := &responseCache{store: s, metrics: cfg.Metrics}
	mux.HandleFunc("/graphql", func(w http.ResponseWriter, r *http.Request) {
		upgrade := strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
		if r.Method == http.MethodGet && r.URL.RawQuery == "" && !upgrade {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write(page)
			return
		}
		// The body cap, and the spender each operation is charged through (budget.go).
		w, r, ok := admit(cfg.ChargeRead, w, r, upgrade)
		if !ok {
			return
		}
		if upgrade {
			addr := cfg.ClientAddress(r)
			if err := counts.openSocket(addr); err != nil {
				w.Header().Set("Retry-After", "60")
				writeRequestError(w, http.StatusTooManyRequests, err)
				return
			}
			defer counts.closeSocket(addr)
			r = r.WithContext(context.WithValue(r.Context(), socketAddressKey{}, addr))
			// A subscription outlives the server's per-request timeouts.
			rc := http.NewResponseController(w)
			rc.SetReadDeadline(time.Time{})
			rc.SetWriteDeadline(time.Time{})
		}
		if upgrade || cfg.RunEveryQuery {
			serve.ServeHTTP(w, r)
			return
		}
		answers.serve(w, r, serve)
	})
	return mux
}

// config wires the resolvers. An operation's cost is cost.go's, not gqlgen's complexity.
func config(s *store.Store) Config {
	return Config{Resolvers: newResolver(s)}
}

// presentError gives every error an extensions.code, the same codes REST's problem+json
// bodies carry (store.Code, one meaning each): the store's code, invalid_request for a query that does not parse, validate or fit the limits, and
// internal (with a generic message, the cause logged) for anything else.
func presentError(log *slog.Logger) graphql.ErrorPresenterFunc {
	return func(ctx context.Context, err error) *gqlerror.Error {
		gerr := graphql.DefaultErrorPresenter(ctx, err)
		var se *store.Error
		switch {
		case errors.As(err, &se):
			gerr.Message = se.Message
			if se.Code == store.CodeInternal && se.Err != nil {
				log.ErrorContext(ctx, "graphql", "err", err)
			}
			setCode(gerr, string(se.Code))
		case gerr.Extensions["code"] == "PERSISTED_QUERY_NOT_FOUND":
			// Kept as is: persisted-query clients send the full query when they see it.
		case gerr.Path == nil:
			// Errors of the request itself: its body, parsing, validation, the limits.
			setCode(gerr, string(store.CodeInvalidRequest))
		case store.ErrorCode(err) == store.CodeUnavailable:
			// The database cannot be reached: the caller can only retry.
			log.WarnContext(ctx, "graphql", "err", err)
			gerr.Message = store.ErrorMessage(err)
			setCode(gerr, string(store.CodeUnavailable))
		default:
			log.ErrorContext(ctx, "graphql", "err", err)
			gerr.Message = "internal error"
			setCode(gerr, string(store.CodeInternal))
		}
		return gerr
	}
}

func setCode(e *gqlerror.Error, code string) {
	if e.Extensions == nil {
		e.Extensions = map[string]any{}
	}
	e.Extensions["code"] = code
}

// operationMetrics counts every operation by type and outcome, with its latency: those that
// run, and those refused before they run (a syntax error, a limit).
type operationMetrics struct{ m *metrics.Metrics }

// countedKey marks a dispatched operation; a subscription, which answers once per event, is
// counted at its first answer only.
type countedKey struct{}

func (operationMetrics) ExtensionName() string                   { return "OperationMetrics" }
func (operationMetrics) Validate(graphql.ExecutableSchema) error { return nil }

func (operationMetrics) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	return next(context.WithValue(ctx, countedKey{}, new(atomic.Bool)))
}

func (e operationMetrics) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	if resp == nil {
		return nil
	}
	if counted, _ := ctx.Value(countedKey{}).(*atomic.Bool); counted != nil && counted.Swap(true) {
		return resp
	}
	typ := "invalid"
	if graphql.HasOperationContext(ctx) {
		if op := graphql.GetOperationContext(ctx).Operation; op != nil {
			typ = string(op.Operation)
		}
	}
	outcome := "ok"
	if len(resp.Errors) > 0 {
		// Every presented error has one of the store's codes, a bounded set.
		outcome, _ = resp.Errors[0].Extensions["code"].(string)
		if outcome == "" {
			outcome = string(store.CodeInternal)
		}
	}
	e.m.GraphQLOperation(typ, outcome, time.Since(graphql.GetStartTime(ctx)))
	return resp
}

// answerLimit replaces an answer whose data is larger than its value by an error: a client
// gets a clear refusal, not megabytes it did not mean to ask for.
type answerLimit int

func (answerLimit) ExtensionName() string                   { return "AnswerLimit" }
func (answerLimit) Validate(graphql.ExecutableSchema) error { return nil }
func (n answerLimit) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	if resp == nil || len(resp.Data) <= int(n) {
		return resp
	}
	err := gqlerror.Errorf("the answer is %d bytes; the limit is %d: ask for fewer fields or smaller pages", len(resp.Data), int(n))
	setCode(err, string(store.CodePayloadTooLarge))
	return &graphql.Response{Errors: gqlerror.List{err}}
}

// depthLimit refuses a query whose selections nest deeper than its value, or that selects more
// fields (maxFields) or aliases (maxAliases) than any dashboard asks, fragments expanded.
// Introspection fields are not counted in the depth (GraphiQL's schema query nests type
// references deeply), but they count as fields: a hundred aliases of a full __schema are
// refused by the field count before anything runs.
type depthLimit int

// maxFields and maxAliases bound what one operation selects, each spread of a fragment
// counting its fields again: GraphiQL's full schema query selects about 100, the largest
// dashboard page a few hundred.
const (
	maxFields  = 2000
	maxAliases = 100
)

func (depthLimit) ExtensionName() string                   { return "DepthLimit" }
func (depthLimit) Validate(graphql.ExecutableSchema) error { return nil }
func (d depthLimit) MutateOperationContext(_ context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	if oc.Operation == nil {
		return nil
	}
	var err *gqlerror.Error
	switch n := shapeOf(oc.Operation.SelectionSet, map[string]shape{}); {
	case n.depth > int(d):
		err = gqlerror.Errorf("the query nests %d levels deep; the limit is %d", n.depth, int(d))
	case n.fields > maxFields:
		err = gqlerror.Errorf("the query selects %d fields, fragments expanded; the limit is %d", n.fields, maxFields)
	case n.aliases > maxAliases:
		err = gqlerror.Errorf("the query names %d aliases, fragments expanded; the limit is %d", n.aliases, maxAliases)
	default:
		return nil
	}
	setCode(err, string(store.CodeInvalidRequest))
	return err
}

// shape is how deep a selection nests and how many fields and aliases it selects.
type shape struct{ depth, fields, aliases int }

// shapeOf is the shape of set; fragments holds the shape of each fragment seen, so one spread
// under many aliases is walked once (a query of 15,000 tokens could otherwise name millions).
// Counts stop at costCap.
func shapeOf(set ast.SelectionSet, fragments map[string]shape) shape {
	var all shape
	for _, sel := range set {
		var n shape
		switch sel := sel.(type) {
		case *ast.Field:
			n = shapeOf(sel.SelectionSet, fragments)
			n.fields++
			if sel.Alias != "" && sel.Alias != sel.Name {
				n.aliases++
			}
			if strings.HasPrefix(sel.Name, "__") {
				n.depth = 0
			} else {
				n.depth++
			}
		case *ast.InlineFragment:
			n = shapeOf(sel.SelectionSet, fragments)
		case *ast.FragmentSpread:
			if sel.Definition != nil {
				d, ok := fragments[sel.Name]
				if !ok {
					d = shapeOf(sel.Definition.SelectionSet, fragments)
					fragments[sel.Name] = d
				}
				n = d
			}
		}
		all.depth = max(all.depth, n.depth)
		all.fields = min(all.fields+n.fields, costCap)
		all.aliases = min(all.aliases+n.aliases, costCap)
	}
	return all
}
