package graph

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"marketd/store"
)

// A websocket (graphql-transport-ws) lives longer than the session it was opened with, so
// it acts as that session only while the session is live, and each socket is bounded:
//
//   - Every operation on a socket that carries a token (the Authorization header or the
//     session cookie of the upgrade request) authenticates that token again as it starts;
//     after logout, revocation, expiry or the end of a rotated token's grace, the operation
//     is refused with an error message whose extensions.code is the store's
//     (token_revoked, invalid_token, token_rotated).
//   - A subscription that reads the caller's own data (it asked who the caller is, as
//     intentStatus does) checks the session every SocketLimits.SessionCheck while it runs;
//     when the session ends it ends with an error message carrying that code (an error
//     message ends an operation in graphql-transport-ws: no complete follows). Public
//     subscriptions run on.
//   - No connection_init within InitTimeout: the socket is closed with 4408, the protocol's
//     code for it.
//   - At most MaxSubscriptions subscriptions run at once on a socket; one more is refused
//     with an error message whose code is too_many_subscriptions, and the socket stays open.
//   - A socket with no operation running, none started or ended for IdleTimeout, is closed
//     with closeIdle (4410). Pings and pongs are not activity.

// Close codes a socket may end with, besides the protocol's own.
const (
	closeInitTimeout = 4408 // graphql-transport-ws: connection initialisation timeout
	closeIdle        = 4410 // ours: no operation for SocketLimits.IdleTimeout
)

// SocketLimits bounds each websocket; a zero field picks its default.
type SocketLimits struct {
	InitTimeout      time.Duration // from the upgrade to connection_init; 10 s by default
	IdleTimeout      time.Duration // with no operation running; 5 min by default
	MaxSubscriptions int           // running at once on one socket; 20 by default
	SessionCheck     time.Duration // how often a subscription that reads the caller's data checks its session; 1 s by default
}

func (l SocketLimits) withDefaults() SocketLimits {
	if l.InitTimeout <= 0 {
		l.InitTimeout = 10 * time.Second
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = 5 * time.Minute
	}
	if l.MaxSubscriptions <= 0 {
		l.MaxSubscriptions = 20
	}
	if l.SessionCheck <= 0 {
		l.SessionCheck = time.Second
	}
	return l
}

// websocketTransport is gqlgen's websocket transport with a socket per connection that
// keeps the limits; callerPerOperation (wallet.go) keeps the session rule.
func websocketTransport(limits SocketLimits, keepAlive time.Duration) transport.Websocket {
	return transport.Websocket{
		Implementation:        sockets{limits},
		KeepAlivePingInterval: keepAlive,
		InitFunc: func(ctx context.Context, _ transport.InitPayload) (context.Context, *transport.InitPayload, error) {
			if src, _ := ctx.Value(callerKey{}).(*callerSource); src != nil && src.sock != nil {
				src.sock.initialised()
			}
			return ctx, nil, nil
		},
	}
}

// sockets accepts websockets as gqlgen's default implementation does, and gives each the
// socket that keeps its limits.
type sockets struct{ limits SocketLimits }

func (ss sockets) Accept(w http.ResponseWriter, r *http.Request, opts transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	conn, err := transport.CoderWebsocketImplementation{}.Accept(w, r, opts)
	if err != nil {
		return nil, err
	}
	src, _ := r.Context().Value(callerKey{}).(*callerSource)
	if src == nil {
		return conn, nil // outside withCaller no operation has a caller: there is nothing to keep
	}
	s := &socket{conn: conn, limits: ss.limits}
	s.timer = time.AfterFunc(s.limits.InitTimeout, s.initExpired)
	// The request's context ends when the transport is done with the connection.
	context.AfterFunc(r.Context(), s.stop)
	src.sock = s
	return conn, nil
}

// socket is one websocket's state: whether it was initialised, what runs on it, and the one
// timer that closes it (the init timeout, then the idle timeout).
type socket struct {
	conn   transport.WebsocketConn
	limits SocketLimits

	mu         sync.Mutex
	closed     bool
	ready      bool      // connection_init arrived
	running    int       // operations running
	subs       int       // of which subscriptions
	lastActive time.Time // when an operation last started or ended
	timer      *time.Timer
}

func (s *socket) initialised() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.ready {
		return
	}
	s.ready = true
	s.lastActive = time.Now()
	s.timer.Stop()
	s.timer = time.AfterFunc(s.limits.IdleTimeout, s.idleExpired)
}

func (s *socket) initExpired() {
	s.mu.Lock()
	ready := s.ready
	s.mu.Unlock()
	if !ready {
		s.close(closeInitTimeout, "connection initialisation timeout")
	}
}

func (s *socket) idleExpired() {
	s.mu.Lock()
	if s.closed || s.running > 0 {
		s.mu.Unlock()
		return // the last operation to end arms the timer again
	}
	if rest := s.limits.IdleTimeout - time.Since(s.lastActive); rest > 0 {
		s.timer.Reset(rest)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.close(closeIdle, "idle")
}

// close ends the connection with code; gqlgen's read loop then ends and tears the rest down.
func (s *socket) close(code int, reason string) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.timer.Stop()
	s.mu.Unlock()
	s.conn.WriteClose(code, reason)
	s.conn.Close()
}

// stop forgets the timers of a connection the transport is done with.
func (s *socket) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.timer.Stop()
}

// begin counts an operation in, or refuses a subscription past the limit.
func (s *socket) begin(subscription bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if subscription && s.subs >= s.limits.MaxSubscriptions {
		return store.Errorf(store.CodeTooManySubscriptions, "this socket already runs %d subscriptions, the most one socket may; complete one, or open another socket", s.subs)
	}
	s.running++
	if subscription {
		s.subs++
	}
	s.lastActive = time.Now()
	return nil
}

func (s *socket) end(subscription bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running--
	if subscription {
		s.subs--
	}
	s.lastActive = time.Now()
	if s.running == 0 && s.ready && !s.closed {
		s.timer.Reset(s.limits.IdleTimeout)
	}
}

// operate runs one operation of the socket: it checks the socket's session first, counts the
// operation, and ends a subscription that reads the caller's data when the session ends.
func (s *socket) operate(ctx context.Context, c *caller, next graphql.OperationHandler, every time.Duration) graphql.ResponseHandler {
	auth, err := c.identity()
	if err != nil && store.ErrorCode(err) != store.CodeUnauthenticated {
		return refuse(ctx, err) // the socket's token no longer names a live session
	}
	subscription := false
	if op := graphql.GetOperationContext(ctx).Operation; op != nil {
		subscription = op.Operation == ast.Subscription
	}
	if err := s.begin(subscription); err != nil {
		return refuse(ctx, err)
	}
	// The operation ends at its last answer or, however else it ends (a panic), when the
	// transport cancels its context.
	var ended sync.Once
	end := func() { ended.Do(func() { s.end(subscription) }) }
	context.AfterFunc(ctx, end)
	ctx, cancel := context.WithCancelCause(ctx)
	if subscription && auth != nil {
		go watchSession(ctx, c, cancel, every)
	}
	responses := next(ctx)
	return func(rctx context.Context) *graphql.Response {
		if resp := responses(rctx); resp != nil {
			return resp
		}
		if e := c.ended.Load(); e != nil {
			transport.AddSubscriptionError(ctx, operationError(e))
		}
		cancel(nil)
		end()
		return nil
	}
}

// watchSession ends a subscription when its session ends, once the subscription has asked
// who its caller is: public feeds do not depend on the session.
func watchSession(ctx context.Context, c *caller, end context.CancelCauseFunc, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !c.asked.Load() {
			continue
		}
		if _, err := c.read(); sessionEnded(err) {
			e := &store.Error{Code: store.ErrorCode(err), Message: store.ErrorMessage(err)}
			c.ended.Store(e)
			end(e)
			return
		}
	}
}

// sessionEnded tells whether err says the token no longer names a live session (and not,
// say, that the database is out of reach for a moment).
func sessionEnded(err error) bool {
	switch store.ErrorCode(err) {
	case store.CodeInvalidToken, store.CodeTokenRevoked, store.CodeTokenRotated, store.CodeUnauthenticated:
		return err != nil
	}
	return false
}

// refuse answers an operation refused before it ran with the protocol's error message.
func refuse(ctx context.Context, err error) graphql.ResponseHandler {
	transport.AddSubscriptionError(ctx, operationError(err))
	return func(context.Context) *graphql.Response { return nil }
}

func operationError(err error) *gqlerror.Error {
	gerr := &gqlerror.Error{Message: store.ErrorMessage(err)}
	setCode(gerr, string(store.ErrorCode(err)))
	return gerr
}
