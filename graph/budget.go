package graph

import (
	"context"
	"net/http"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"marketd/store"
	"marketd/store/ratelimit"
)

// maxQueryTokens bounds the tokens the parser reads of one query: about 1,000 aliased
// lookups, far more than any dashboard's query, far less than a body of MaxRequestBody bytes
// could make it parse. A longer query is refused with invalid_request before it is parsed
// whole.
const maxQueryTokens = 15_000

// operationBudget is the extension every operation passes through, whatever its transport
// (POST, GET, each operation and subscription start on a websocket). Before it is parsed, it
// charges one read to the read budget of the request's client, which REST's reads spend too:
// as every GET under /api/ counts, a query that does not parse or validate counts. After it
// is parsed and validated and before anything runs, it refuses an operation whose cost
// (cost.go) passes the absolute limit with invalid_request, and charges the rest of its reads,
// readsFor(cost) in all. Over the budget, rate_limited.
type operationBudget struct {
	model *costModel
	limit int           // MaxComplexity
	seen  *atomic.Int64 // when set, told each operation's cost (tests)
}

func (*operationBudget) ExtensionName() string                   { return "OperationBudget" }
func (*operationBudget) Validate(graphql.ExecutableSchema) error { return nil }

func (b *operationBudget) MutateOperationParameters(ctx context.Context, _ *graphql.RawParams) *gqlerror.Error {
	return spenderOf(ctx).spend(1)
}

func (b *operationBudget) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	if oc.Operation == nil {
		return nil
	}
	cost := b.model.cost(oc)
	if b.seen != nil {
		b.seen.Store(int64(cost))
	}
	if cost > b.limit {
		err := gqlerror.Errorf("the query costs %d (the SQL statements it may run); the limit is %d", cost, b.limit)
		setCode(err, string(store.CodeInvalidRequest))
		return err
	}
	if rest := readsFor(cost) - 1; rest > 0 {
		return spenderOf(ctx).spend(rest)
	}
	return nil
}

// spender charges the operations of one request (one over HTTP, each of a websocket's) to
// its client's read budget.
type spender struct {
	charge func(*http.Request, int) (ratelimit.Decision, error)
	r      *http.Request   // the request (or websocket upgrade) that names the client
	w      *refusingWriter // over HTTP; nil on a websocket
	// Over HTTP, the reads charged for the request's operation, and whether it was refused:
	// what serving its kept answer again charges.
	reads   int
	refused bool
}

var _ interface {
	graphql.OperationParameterMutator
	graphql.OperationContextMutator
} = (*operationBudget)(nil)

type spenderKey struct{}

func spenderOf(ctx context.Context) *spender {
	s, _ := ctx.Value(spenderKey{}).(*spender)
	return s
}

// spend charges n reads; over HTTP it writes the RateLimit headers, and a refusal's 429.
func (s *spender) spend(n int) *gqlerror.Error {
	if s == nil || s.charge == nil {
		return nil
	}
	d, err := s.charge(s.r, n)
	if s.w != nil {
		d.SetHeaders(s.w.Header())
		if d.Allowed {
			s.reads += n
		}
	}
	if err == nil {
		return nil
	}
	gerr := problemError(http.StatusTooManyRequests, err)
	gerr.Extensions["retryAfter"] = d.ResetSeconds()
	if s.w != nil {
		s.refused, s.w.status = true, http.StatusTooManyRequests
	}
	return gerr
}

// admit is where a request to /graphql that is not for the GraphiQL page starts: a body over
// store.MaxRequestBody is refused with 413 before it is read (by its Content-Length, or
// when a chunked body passes the cap), and the request gets the spender its operations are
// charged through. False means it was answered.
func admit(charge func(*http.Request, int) (ratelimit.Decision, error), w http.ResponseWriter, r *http.Request, upgrade bool) (http.ResponseWriter, *http.Request, bool) {
	if upgrade {
		// The upgrade costs nothing; each operation on the socket is charged.
		return w, r.WithContext(context.WithValue(r.Context(), spenderKey{}, &spender{charge: charge, r: r})), true
	}
	if r.ContentLength > store.MaxRequestBody {
		writeRequestError(w, http.StatusRequestEntityTooLarge, bodyTooLarge())
		return w, r, false
	}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = http.MaxBytesReader(w, r.Body, store.MaxRequestBody)
	}
	rw := &refusingWriter{ResponseWriter: w}
	return rw, r.WithContext(context.WithValue(r.Context(), spenderKey{}, &spender{charge: charge, r: r, w: rw})), true
}

func bodyTooLarge() error {
	return store.Errorf(store.CodePayloadTooLarge, "the body is larger than %d bytes", store.MaxRequestBody)
}

// refusingWriter answers with status (429) whatever status the transport writes, once an
// operation was refused for its budget: the transports write a refusal before it runs as 200.
type refusingWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
}

func (w *refusingWriter) WriteHeader(code int) {
	if w.wroteHeader {
		return
	}
	w.wroteHeader = true
	if w.status != 0 {
		code = w.status
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *refusingWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

func (w *refusingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// problemError is err as a GraphQL error whose extensions carry, besides its code, the
// fields of REST's problem+json body for the same failure: type, title, status and detail.
func problemError(status int, err error) *gqlerror.Error {
	code, detail := store.ErrorCode(err), store.ErrorMessage(err)
	return &gqlerror.Error{Message: detail, Err: err, Extensions: map[string]any{
		"code":   string(code),
		"type":   code.ProblemType(),
		"title":  http.StatusText(status),
		"status": status,
		"detail": detail,
	}}
}

// writeRefusal answers a request whose operation spend refused, as the transports do.
func writeRefusal(w http.ResponseWriter, gerr *gqlerror.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTooManyRequests)
	writeResponse(w, &graphql.Response{Errors: gqlerror.List{gerr}})
}

// writeRequestError answers a request refused before it ran, in GraphQL's response shape,
// its error carrying the problem fields (problemError).
func writeRequestError(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	writeResponse(w, &graphql.Response{Errors: gqlerror.List{problemError(status, err)}})
}
