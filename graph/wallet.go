package graph

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"

	"marketd/store"
)

// Wallet is a party's wallet; its fields load when asked for.
type Wallet struct {
	PartyID string
}

// Rewards is a party's reward balance; its history loads when asked for.
type Rewards struct {
	partyID    string
	Balance    store.Amount
	Instrument store.Instrument
}

// callerSource is how a request names its caller: the token it carries, read again for each
// operation. A websocket's request carries the socket (socket.go), whose every operation
// reads the token again; an HTTP request is one operation.
type callerSource struct {
	read func() (*store.Auth, error)
	sock *socket // set when the request became a websocket
}

// caller is the identity of one GraphQL operation, read from the request's token once and,
// over HTTP, only when a field needs it: public reads never look at the token. Over a
// websocket it is read as the operation starts, and it holds only while the socket's session
// lives (socket.go).
type caller struct {
	once  sync.Once
	read  func() (*store.Auth, error)
	auth  *store.Auth
	err   error
	sock  *socket     // the websocket the operation runs on; nil over HTTP
	asked atomic.Bool // a resolver asked who the caller is: the operation reads the caller's data
}

func (c *caller) identity() (*store.Auth, error) {
	c.once.Do(func() { c.auth, c.err = c.read() })
	return c.auth, c.err
}

type (
	callerKey          struct{}
	operationCallerKey struct{}
)

// withCaller lets the operations of a request name its caller; callerPerOperation gives each
// operation its own reading of the token.
func withCaller(authenticate func(*http.Request) (*store.Auth, error), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		src := &callerSource{read: func() (*store.Auth, error) {
			if authenticate == nil {
				return nil, store.Errorf(store.CodeUnauthenticated, "this server takes no tokens on GraphQL")
			}
			return authenticate(r)
		}}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, src)))
	})
}

// callerPerOperation establishes the caller of every operation, whatever its transport: the
// one place a resolver's callerParty gets its answer from, and, on a websocket, where the
// socket's session is checked again and its limits kept (socket.go). Without it no operation
// has a caller, and callerParty answers unauthenticated.
type callerPerOperation struct{}

func (callerPerOperation) ExtensionName() string                   { return "CallerPerOperation" }
func (callerPerOperation) Validate(graphql.ExecutableSchema) error { return nil }

func (e callerPerOperation) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	src, _ := ctx.Value(callerKey{}).(*callerSource)
	if src == nil {
		return next(ctx)
	}
	c := &caller{read: src.read, sock: src.sock}
	ctx = context.WithValue(ctx, operationCallerKey{}, c)
	if src.sock == nil {
		return next(ctx) // an HTTP request: one operation, its token read when a field needs it
	}
	return src.sock.operate(ctx, c, next)
}

// actAs returns nil when the request's token is partyID's, else the error REST would give.
func actAs(ctx context.Context, partyID string) error {
	p, err := callerParty(ctx)
	if err != nil {
		return err
	}
	if p != partyID {
		return store.Errorf(store.CodePartyMismatch, "the query names %s, the token is for %s", partyID, p)
	}
	return nil
}

// callerParty is the party the operation's token is for.
func callerParty(ctx context.Context) (string, error) {
	c, _ := ctx.Value(operationCallerKey{}).(*caller)
	// An answer that looked at the caller is that caller's: the response cache never keeps it.
	store.Spoil(ctx)
	if c == nil {
		return "", store.Errorf(store.CodeUnauthenticated, "sign in first")
	}
	c.asked.Store(true)
	if c.sock != nil {
		if err := c.sock.sessionEnded(); err != nil {
			return "", err
		}
	}
	a, err := c.identity()
	if err != nil {
		return "", err
	}
	return a.PartyID, nil
}
