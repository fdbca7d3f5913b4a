package graph

import (
	"context"
	"errors"
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
//     after logout, revocation, expiry, or the token's replacement by a rotation, the
//     operation is refused with an error message whose extensions.code is the store's
//     (token_revoked, invalid_token, token_rotated), and so is every later one: the socket
//     no longer acts as anyone.
//   - While such a socket is open it reads its token again as soon as the store tells it the
//     session changed (store.WatchSession: a rotation, logout or revocation on this instance,
//     or on another one through PostgreSQL's notifications), when the token or the session
//     reaches its end, and, as a fallback for a change it is not told of (another process on
//     one SQLite file), every SocketLimits.SessionCheck. When the session has ended, a running subscription that reads the caller's own data (its
//     resolvers asked who the caller is, as intentStatus does) ends with an error message
//     carrying that code (an error message ends an operation in graphql-transport-ws: no
//     complete follows); public subscriptions run on. A token that a rotation replaced ends
//     the socket's session at once, within the rotation's grace: presenting a replaced token
//     after its grace is the sign of a stolen copy, which the store answers by ending the
//     session, and a socket must not do that to its user.
//   - No connection_init within InitTimeout: the socket is closed with 4408, the protocol's
//     code for it.
//   - When the socket's session has ended, every subscription of the socket ends with that
//     error message and the socket closes with closeSessionEnded (4403) and the code as its
//     reason: a socket opened with a token lives no longer than its session.
//   - At most MaxSubscriptions subscriptions run at once on a socket; one more is refused
//     with an error message whose code is too_many_subscriptions, and the socket stays open.
//   - One client address holds at most SocketsPerAddress sockets and runs at most
//     SubscriptionsPerAddress subscriptions over them, the handler at most ServiceSockets and
//     ServiceSubscriptions (census.go): a socket past a limit is refused before its upgrade,
//     429 too_many_sockets, a subscription with too_many_subscriptions.
//   - A socket with no operation running, none started or ended for IdleTimeout, is closed
//     with closeIdle (4410). Pings and pongs are not activity.

// Close codes a socket may end with, besides the protocol's own.
const (
	closeInitTimeout = 4408 // graphql-transport-ws: connection initialisation timeout
	closeIdle        = 4410 // ours: no operation for SocketLimits.IdleTimeout
	// closeSessionEnded is graphql-transport-ws's Forbidden: the socket's session ended.
	closeSessionEnded = 4403
)

// sessionEndGrace is how long a socket whose session ended waits for its subscriptions to
// send their last error message before it closes.
const sessionEndGrace = time.Second

// SocketLimits bounds each websocket; a zero field picks its default.
type SocketLimits struct {
	InitTimeout      time.Duration // from the upgrade to connection_init; 10 s by default
	IdleTimeout      time.Duration // with no operation running; 5 min by default
	MaxSubscriptions int           // running at once on one socket; 20 by default
	SessionCheck     time.Duration // how often a socket with a token checks its session besides the store's signals; 15 s by default

	SocketsPerAddress       int // open at once from one client address; 10 by default
	SubscriptionsPerAddress int // running at once over one client address's sockets; 100 by default
	ServiceSockets          int // open at once on the handler; 5,000 by default
	ServiceSubscriptions    int // running at once on the handler; 20,000 by default
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
		l.SessionCheck = 15 * time.Second
	}
	if l.SocketsPerAddress <= 0 {
		l.SocketsPerAddress = 10
	}
	if l.SubscriptionsPerAddress <= 0 {
		l.SubscriptionsPerAddress = 100
	}
	if l.ServiceSockets <= 0 {
		l.ServiceSockets = 5000
	}
	if l.ServiceSubscriptions <= 0 {
		l.ServiceSubscriptions = 20_000
	}
	return l
}

// websocketTransport is gqlgen's websocket transport with a socket per connection that
// keeps the limits; callerPerOperation (wallet.go) keeps the session rule, with what st tells
// of the sessions.
func websocketTransport(st *store.Store, limits SocketLimits, counts *census, keepAlive time.Duration) transport.Websocket {
	return transport.Websocket{
		Implementation:        sockets{limits: limits, store: st, census: counts},
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
type sockets struct {
	limits SocketLimits
	store  *store.Store // tells a socket when its session changed
	census *census      // counts each client address's subscriptions
}

// socketAddressKey is the context key of a websocket's client address, which the handler
// counted its socket in under.
type socketAddressKey struct{}

func (ss sockets) Accept(w http.ResponseWriter, r *http.Request, opts transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	conn, err := transport.CoderWebsocketImplementation{}.Accept(w, r, opts)
	if err != nil {
		return nil, err
	}
	src, _ := r.Context().Value(callerKey{}).(*callerSource)
	if src == nil {
		return conn, nil // outside withCaller no operation has a caller: there is nothing to keep
	}
	addr, _ := r.Context().Value(socketAddressKey{}).(string)
	s := &socket{conn: conn, limits: ss.limits, store: ss.store, census: ss.census, addr: addr, read: src.read, done: make(chan struct{}), private: map[*caller]context.CancelCauseFunc{}}
	s.mu.Lock() // the timer may fire before it is stored
	s.timer = time.AfterFunc(s.limits.InitTimeout, s.initExpired)
	s.mu.Unlock()
	// The request's context ends when the transport is done with the connection.
	context.AfterFunc(r.Context(), s.stop)
	src.sock = s
	return conn, nil
}

// socket is one websocket's state: whether it was initialised, what runs on it, the one
// timer that closes it (the init timeout, then the idle timeout), and its session.
type socket struct {
	conn   transport.WebsocketConn
	limits SocketLimits
	store  *store.Store
	census *census
	addr   string                      // the client's address
	read   func() (*store.Auth, error) // the upgrade request's token, authenticated again
	done   chan struct{}               // closed when the socket ends

	mu         sync.Mutex
	closed     bool
	ready      bool      // connection_init arrived
	running    int       // operations running
	subs       int       // of which subscriptions
	lastActive time.Time // when an operation last started or ended
	timer      *time.Timer
	watching   bool                                // the session check runs
	ended      *store.Error                        // why the socket's session is over; nil while it lives
	private    map[*caller]context.CancelCauseFunc // running subscriptions of a signed-in socket
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
	if s.ready || s.closed {
		s.mu.Unlock()
		return
	}
	s.finishLocked()
	s.mu.Unlock()
	s.shut(closeInitTimeout, "connection initialisation timeout")
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
	s.finishLocked()
	s.mu.Unlock()
	s.shut(closeIdle, "idle")
}

// shut closes the connection with code; gqlgen's read loop then ends and tears the rest down.
func (s *socket) shut(code int, reason string) {
	s.conn.WriteClose(code, reason)
	s.conn.Close()
}

// stop forgets the timers of a connection the transport is done with.
func (s *socket) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.finishLocked()
	}
}

func (s *socket) finishLocked() {
	s.closed = true
	s.timer.Stop()
	close(s.done)
}

// begin counts an operation in, or refuses a subscription past the limit.
func (s *socket) begin(subscription bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if subscription && s.subs >= s.limits.MaxSubscriptions {
		return store.Errorf(store.CodeTooManySubscriptions, "this socket already runs %d subscriptions, the most one socket may; complete one, or open another socket", s.subs)
	}
	if subscription {
		if err := s.census.startSubscription(s.addr); err != nil {
			return err
		}
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
		s.census.endSubscription(s.addr)
	}
	s.lastActive = time.Now()
	if s.running == 0 && s.ready && !s.closed {
		s.timer.Reset(s.limits.IdleTimeout)
	}
}

// sessionEnded is why the socket no longer acts as its session, or nil while it does.
func (s *socket) sessionEnded() *store.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended
}

// authenticate reads the socket's token again for an operation: its identity, nil for a
// socket without a token, or the error that refuses the operation.
func (s *socket) authenticate(c *caller) (*store.Auth, error) {
	if err := s.sessionEnded(); err != nil {
		return nil, err // the token is not presented again once its session is known to be over
	}
	a, err := c.identity()
	switch {
	case err == nil && !a.Current:
		err = errReplaced
	case err == nil:
		s.watch(a)
		return a, nil
	case store.ErrorCode(err) == store.CodeUnauthenticated:
		return nil, nil // no token: the operation runs as nobody
	}
	if isSessionEnd(err) {
		s.endSession(err)
	}
	return nil, err
}

var errReplaced = store.Errorf(store.CodeTokenRotated, "the socket's token was replaced by a newer one of its session; open a new socket with the newer token")

// isSessionEnd tells whether err says the token no longer names a live session (and not, say,
// that the database is out of reach for a moment).
func isSessionEnd(err error) bool {
	switch store.ErrorCode(err) {
	case store.CodeInvalidToken, store.CodeTokenRevoked, store.CodeTokenRotated, store.CodeUnauthenticated:
		return err != nil
	}
	return false
}

// endSession records that the socket's session is over, ends its running subscriptions
// with err's message and then closes the socket.
func (s *socket) endSession(err error) {
	e := &store.Error{Code: store.ErrorCode(err), Message: store.ErrorMessage(err)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended != nil {
		return
	}
	s.ended = e
	for _, cancel := range s.private {
		cancel(e)
	}
	go s.closeWhenQuiet(e)
}

// closeWhenQuiet closes the socket of an ended session once its subscriptions have sent
// their last message, or after sessionEndGrace.
func (s *socket) closeWhenQuiet(e *store.Error) {
	deadline := time.Now().Add(sessionEndGrace)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		quiet, closed := s.subs == 0, s.closed
		s.mu.Unlock()
		if closed {
			return
		}
		if quiet {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.finishLocked()
	s.mu.Unlock()
	s.shut(closeSessionEnded, string(e.Code))
}

// watch starts checking the socket's session, which a names, while the socket is open.
func (s *socket) watch(a *store.Auth) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watching || s.closed {
		return
	}
	s.watching = true
	changed, stop := s.store.WatchSession(a.SessionID)
	go func() {
		defer stop()
		// Time, not a signal, ends the token and the session: the first of the two ends the
		// socket's use of it.
		ends := a.ExpiresAt
		if a.SessionEndsAt.Before(ends) {
			ends = a.SessionEndsAt
		}
		end := time.NewTimer(ends.Sub(s.store.Now()))
		defer end.Stop()
		tick := time.NewTicker(s.limits.SessionCheck)
		defer tick.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-changed:
			case <-end.C:
			case <-tick.C:
			}
			if s.sessionEnded() != nil {
				return // an operation found it over: the token is never presented again
			}
			if s.checkSession() {
				return
			}
		}
	}()
}

// checkSession reads the socket's token again and ends the socket's session when it is over;
// it tells whether it is.
func (s *socket) checkSession() bool {
	a, err := s.read()
	if err == nil && !a.Current {
		err = errReplaced
	}
	if isSessionEnd(err) {
		s.endSession(err)
		return true
	}
	return false
}

// follow registers a subscription of a signed-in socket, to be ended with the session if it
// reads the caller's data; the returned func unregisters it.
func (s *socket) follow(c *caller, cancel context.CancelCauseFunc) (func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended != nil {
		return nil, s.ended
	}
	s.private[c] = cancel
	return func() {
		s.mu.Lock()
		delete(s.private, c)
		s.mu.Unlock()
	}, nil
}

// operate runs one operation of the socket: it checks the socket's session first, counts the
// operation, and ends a subscription that reads the caller's data when the session ends.
func (s *socket) operate(ctx context.Context, c *caller, next graphql.OperationHandler) graphql.ResponseHandler {
	auth, err := s.authenticate(c)
	if err != nil {
		return refuse(ctx, err)
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
	var once sync.Once
	end := func() { once.Do(func() { s.end(subscription) }) }
	context.AfterFunc(ctx, end)
	ctx, cancel := context.WithCancelCause(ctx)
	if subscription && auth != nil {
		unfollow, err := s.follow(c, cancel)
		if err != nil {
			cancel(nil)
			end()
			return refuse(ctx, err)
		}
		context.AfterFunc(ctx, unfollow)
	}
	responses := next(ctx)
	return func(rctx context.Context) *graphql.Response {
		if resp := responses(rctx); resp != nil {
			return resp
		}
		var ended *store.Error
		if errors.As(context.Cause(ctx), &ended) {
			transport.AddSubscriptionError(ctx, operationError(ended))
		}
		// The transport sends the last message, then cancels the operation's context: end
		// runs then, so a socket closing when quiet (closeWhenQuiet) has sent it.
		cancel(nil)
		return nil
	}
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
