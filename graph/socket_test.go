package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"marketd/store"
	"marketd/store/admin"
	"marketd/store/storetest"
)

// dialSocket opens a graphql-transport-ws socket with a bearer token (none when token is
// "") and sends no connection_init.
func dialSocket(t *testing.T, url, token string) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	opts := &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: http.Header{}}
	if token != "" {
		opts.HTTPHeader.Set("Authorization", "Bearer "+token)
	}
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/graphql", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	return &wsClient{t: t, conn: conn}
}

// dialSession is dialSocket followed by connection_init and its ack.
func dialSession(t *testing.T, url, token string) *wsClient {
	t.Helper()
	c := dialSocket(t, url, token)
	c.send(map[string]any{"type": "connection_init"})
	if m := c.read(5 * time.Second); m["type"] != "connection_ack" {
		t.Fatalf("init: %v", m)
	}
	return c
}

// until returns the next message about operation id, skipping those about others; nil when
// none comes within d.
func (c *wsClient) until(id string, d time.Duration) map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for {
		m := c.read(time.Until(deadline))
		if m == nil || m["id"] == id {
			return m
		}
	}
}

// ask runs a query on the socket and returns its data, or the code of the error that
// refused it.
func (c *wsClient) ask(id, query string, vars map[string]any) (data map[string]any, code string) {
	c.t.Helper()
	c.subscribe(id, query, vars)
	m := c.until(id, 5*time.Second)
	switch {
	case m == nil:
		c.t.Fatalf("operation %s: no answer", id)
	case m["type"] == "error":
		return nil, errorCode(c.t, m)
	case m["type"] != "next":
		c.t.Fatalf("operation %s: %v", id, m)
	}
	payload := m["payload"].(map[string]any)
	if errs, _ := payload["errors"].([]any); len(errs) > 0 {
		code, _ = errs[0].(map[string]any)["extensions"].(map[string]any)["code"].(string)
		return nil, code
	}
	if done := c.until(id, 5*time.Second); done == nil || done["type"] != "complete" {
		c.t.Fatalf("operation %s: no complete after its answer: %v", id, done)
	}
	return payload["data"].(map[string]any), ""
}

// errorCode is the code of an error message's first error.
func errorCode(t *testing.T, m map[string]any) string {
	t.Helper()
	errs, _ := m["payload"].([]any)
	if len(errs) == 0 {
		t.Fatalf("an error message without errors: %v", m)
	}
	ext, _ := errs[0].(map[string]any)["extensions"].(map[string]any)
	code, _ := ext["code"].(string)
	return code
}

// closedWith waits up to d for the server to close the socket and returns its close code
// (-1 when it did not close). The socket is unusable afterwards: a read that times out
// closes it.
func (c *wsClient) closedWith(d time.Duration) websocket.StatusCode {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		_, _, err := c.conn.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return -1
			}
			return websocket.CloseStatus(err)
		}
	}
}

// closedWithReason is closedWith with the close frame's reason.
func (c *wsClient) closedWithReason(d time.Duration) (websocket.StatusCode, string) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		_, _, err := c.conn.Read(ctx)
		if err != nil {
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Code, ce.Reason
			}
			return -1, err.Error()
		}
	}
}

// refusedThenClosed sends an operation on a socket whose session ended: either the operation
// is refused with want and then the socket closes, or the socket closed already; it closes
// with 4403 and want as its reason.
func (c *wsClient) refusedThenClosed(id, query string, vars map[string]any, want store.Code) {
	c.t.Helper()
	// The write fails when the socket closed already; the read below sees why.
	b, _ := json.Marshal(map[string]any{"id": id, "type": "subscribe", "payload": map[string]any{"query": query, "variables": vars}})
	c.conn.Write(context.Background(), websocket.MessageText, b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		_, msg, err := c.conn.Read(ctx)
		if err != nil {
			var ce websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != closeSessionEnded || ce.Reason != string(want) {
				c.t.Fatalf("the socket after its session ended: %v; want close %d %q", err, closeSessionEnded, want)
			}
			return
		}
		var m map[string]any
		if err := json.Unmarshal(msg, &m); err != nil {
			c.t.Fatal(err)
		}
		if m["id"] == id && (m["type"] != "error" || errorCode(c.t, m) != string(want)) {
			c.t.Fatalf("an operation after the session ended: %v; want an error with %s", m, want)
		}
	}
}

// closing reads the socket in the background from now on, dropping what it reads, and
// delivers the close code when the server closes it.
func (c *wsClient) closing() <-chan websocket.StatusCode {
	ch := make(chan websocket.StatusCode, 1)
	go func() {
		for {
			if _, _, err := c.conn.Read(context.Background()); err != nil {
				ch <- websocket.CloseStatus(err)
				return
			}
		}
	}()
	return ch
}

const walletQuery = `query($p: ID!) { wallet(partyId: $p) { balances { instrument amount } } }`

// socketGraph is the endpoint over a fresh store with a test clock, taking bearer tokens.
func socketGraph(t *testing.T, b storetest.Backend, limits SocketLimits, demo bool) (*store.Store, *storetest.Clock, string) {
	t.Helper()
	clock := storetest.NewClock(storetest.Epoch)
	s := b.Open(t, storetest.Config(clock))
	if demo {
		if _, err := s.SeedDemo(context.Background(), store.DemoOptions{NFTs: 40, Seed: 6}); err != nil {
			t.Fatal(err)
		}
	}
	hs := httptest.NewServer(NewHandler(s, Options{Logger: slog.New(slog.DiscardHandler), Authenticate: bearer(s), Sockets: limits}))
	t.Cleanup(hs.Close)
	return s, clock, hs.URL
}

// A socket opened with a token reads the token's wallet while the session lives; once the
// session ends (logout, the console's revocation, expiry) the socket closes with 4403, the
// store's code as its reason; an operation sent before it closes is refused with that code.
func TestSocket_AnOperationAfterTheSessionEndsIsRefused(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		s, clock, url := socketGraph(t, b, SocketLimits{}, false)
		ctx := context.Background()
		for _, tc := range []struct {
			name string
			end  func(a *store.Auth)
			want store.Code
		}{
			{"logout", func(a *store.Auth) {
				if err := s.Logout(ctx, a); err != nil {
					t.Fatal(err)
				}
			}, store.CodeTokenRevoked},
			{"revoked from the console", func(a *store.Auth) {
				if err := admin.New(s).RevokeSession(ctx, a.SessionID, admin.AuditEntry{Actor: "admin"}); err != nil {
					t.Fatal(err)
				}
			}, store.CodeTokenRevoked},
			{"expiry", func(a *store.Auth) { clock.Set(a.ExpiresAt) }, store.CodeInvalidToken},
		} {
			t.Run(tc.name, func(t *testing.T) {
				m := newMinter(t, s, "holder")
				tok := m.signIn()
				a, err := s.Authenticate(ctx, tok)
				if err != nil {
					t.Fatal(err)
				}
				c := dialSession(t, url, tok)
				vars := map[string]any{"p": m.ID}
				if data, code := c.ask("1", walletQuery, vars); code != "" || len(dig(data, "wallet", "balances").([]any)) != 2 {
					t.Fatalf("while the session lives: %v %s", data, code)
				}
				tc.end(a)
				c.refusedThenClosed("2", walletQuery, vars, tc.want)
			})
		}
	})
}

// A rotation replaces the socket's token: the socket stops acting as the session at once
// (token_rotated) and closes, so it never presents the replaced token again, and the session
// and its newer token live on past the grace.
func TestSocket_ARotatedTokenEndsTheSocketsUseOfItNotTheSession(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		s, clock, url := socketGraph(t, b, SocketLimits{SessionCheck: 50 * time.Millisecond}, false)
		ctx := context.Background()
		m := newMinter(t, s, "holder")
		tok := m.signIn()
		c := dialSession(t, url, tok)
		vars := map[string]any{"p": m.ID}
		if _, code := c.ask("1", walletQuery, vars); code != "" {
			t.Fatalf("while the token is current: %s", code)
		}
		clock.Advance(31 * time.Minute)
		a, err := s.Authenticate(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		newer, err := s.RotateIfDue(ctx, a)
		if err != nil || newer == nil {
			t.Fatalf("rotation: %v %v", newer, err)
		}
		c.refusedThenClosed("2", walletQuery, vars, store.CodeTokenRotated)
		clock.Advance(10 * time.Minute) // past the grace
		time.Sleep(200 * time.Millisecond)
		if _, err := s.Authenticate(ctx, newer.Token); err != nil {
			t.Fatalf("the session's newer token after the socket's: %v", err)
		}
	})
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

// A subscription to the caller's own intent ends with an error carrying token_revoked soon
// after logout, and so does a public feed on the same socket; then the socket closes with
// 4403. The public feed goes on on a socket without a token.
func TestSocket_EverySubscriptionEndsWithItsSessionAndTheSocketCloses(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		s, _, url := socketGraph(t, b, SocketLimits{SessionCheck: 50 * time.Millisecond}, true)
		ctx := context.Background()
		pools, err := s.Pools(ctx)
		if err != nil || len(pools) == 0 {
			t.Fatalf("the demo has no pool: %v", err)
		}
		col, err := s.CollectionBySlug(ctx, "ledger-apes")
		if err != nil {
			t.Fatal(err)
		}
		m := newMinter(t, s, "taker")
		cid := m.wait(pools[0].PoolID)
		tok := m.signIn()
		a, err := s.Authenticate(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}

		c := dialSession(t, url, tok)
		c.subscribe("intent", `subscription($c: ID!) { intentStatus(intentCid: $c) { intentCid status } }`, map[string]any{"c": cid})
		if ev := c.until("intent", 5*time.Second); ev == nil || ev["type"] != "next" || dig(ev, "payload", "data", "intentStatus", "status") != "PENDING" {
			t.Fatalf("the intent's status: %v", ev)
		}
		c.subscribe("public", activityQuery, map[string]any{"c": col.ID})
		time.Sleep(300 * time.Millisecond) // the feed starts at the end of the log

		if err := s.Logout(ctx, a); err != nil {
			t.Fatal(err)
		}
		loggedOut := time.Now()
		ended := map[any]map[string]any{} // the last message of each subscription, in any order
		for len(ended) < 2 {
			m := c.read(5 * time.Second)
			if m == nil {
				t.Fatalf("after logout, only these subscriptions ended: %v", ended)
			}
			ended[m["id"]] = m
		}
		for _, id := range []string{"intent", "public"} {
			if ev := ended[id]; ev == nil || ev["type"] != "error" || errorCode(t, ev) != string(store.CodeTokenRevoked) {
				t.Fatalf("the %s subscription after logout: %v", id, ev)
			}
		}
		if took := time.Since(loggedOut); took > 2*time.Second {
			t.Fatalf("the subscriptions ended %v after logout", took)
		}
		if code, reason := c.closedWithReason(5 * time.Second); code != closeSessionEnded || reason != string(store.CodeTokenRevoked) {
			t.Fatalf("the socket after logout: close %d %q", code, reason)
		}

		anon := dialSession(t, url, "")
		anon.subscribe("public", activityQuery, map[string]any{"c": col.ID})
		time.Sleep(300 * time.Millisecond) // the feed starts at the end of the log
		newMinter(t, s, "minter").mint(col.ID, 1)
		ev := anon.until("public", 10*time.Second)
		if ev == nil || ev["type"] != "next" || dig(ev, "payload", "data", "collectionActivity", "kind") != "MINTED" {
			t.Fatalf("the public feed on a socket without a token: %v", ev)
		}
	})
}

// A private subscription ends as soon as the store tells the socket its session ended,
// whichever instance of the store ended it (on PostgreSQL, another one tells through its
// notifications): the socket's own session check is set far beyond the test, so nothing else
// can end it.
func TestSocket_APrivateSubscriptionEndsWhenTheStoreTellsOfTheLogout(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s, _, url := socketGraph(t, b, SocketLimits{SessionCheck: time.Hour}, true)
		loggingOut := map[string]*store.Store{"on the socket's instance": s}
		if b.Dialect == store.Postgres {
			other, err := store.Open(ctx, s.Config())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { other.Close() })
			loggingOut["on another instance"] = other
		}
		pools, err := s.Pools(ctx)
		if err != nil || len(pools) == 0 {
			t.Fatalf("the demo has no pool: %v", err)
		}
		for name, at := range loggingOut {
			t.Run(name, func(t *testing.T) {
				m := newMinter(t, s, "taker")
				cid := m.wait(pools[0].PoolID)
				tok := m.signIn()
				c := dialSession(t, url, tok)
				c.subscribe("intent", `subscription($c: ID!) { intentStatus(intentCid: $c) { intentCid status } }`, map[string]any{"c": cid})
				if ev := c.until("intent", 5*time.Second); ev == nil || ev["type"] != "next" {
					t.Fatalf("the intent's status: %v", ev)
				}
				a, err := at.Authenticate(ctx, tok)
				if err != nil {
					t.Fatal(err)
				}
				if err := at.Logout(ctx, a); err != nil {
					t.Fatal(err)
				}
				ev := c.until("intent", 30*time.Second)
				if ev == nil {
					t.Fatalf("the private subscription runs on 30 s after a logout %s", name)
				}
				if ev["type"] != "error" || errorCode(t, ev) != string(store.CodeTokenRevoked) {
					t.Fatalf("the private subscription after a logout %s: %v", name, ev)
				}
				if _, code := c.ask("after", walletQuery, map[string]any{"p": m.ID}); code != string(store.CodeTokenRevoked) {
					t.Fatalf("an operation after the logout: code %q, want token_revoked", code)
				}
			})
		}
	})
}

// A socket that sends no connection_init within the init timeout is closed with 4408.
func TestSocket_WithoutConnectionInitItClosesWith4408(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		_, _, url := socketGraph(t, b, SocketLimits{InitTimeout: 200 * time.Millisecond}, false)
		c := dialSocket(t, url, "")
		start := time.Now()
		if code := c.closedWith(5 * time.Second); code != closeInitTimeout {
			t.Fatalf("closed with %d, want %d", code, closeInitTimeout)
		}
		if took := time.Since(start); took < 150*time.Millisecond {
			t.Fatalf("closed after %v, before the timeout", took)
		}
		// A socket that does initialise stays open past the timeout.
		c = dialSession(t, url, "")
		if code := c.closedWith(500 * time.Millisecond); code != -1 {
			t.Fatalf("an initialised socket closed with %d", code)
		}
	})
}

// One subscription more than a socket may run is refused with too_many_subscriptions; when
// one completes, another may start.
func TestSocket_OneSubscriptionPastTheLimitIsRefused(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		s, _, url := socketGraph(t, b, SocketLimits{MaxSubscriptions: 2}, true)
		col, err := s.CollectionBySlug(context.Background(), "ledger-apes")
		if err != nil {
			t.Fatal(err)
		}
		c := dialSession(t, url, "")
		vars := map[string]any{"c": col.ID}
		// Three start at once: one, whichever the server takes last, is refused.
		running := map[string]bool{"1": true, "2": true, "3": true}
		for id := range running {
			c.subscribe(id, activityQuery, vars)
		}
		ev := c.read(5 * time.Second)
		if ev == nil || ev["type"] != "error" || errorCode(t, ev) != string(store.CodeTooManySubscriptions) {
			t.Fatalf("a third subscription: %v", ev)
		}
		delete(running, ev["id"].(string))
		// Queries are not subscriptions: they still run.
		if _, code := c.ask("q", `{ pools(first: 1) { totalCount } }`, nil); code != "" {
			t.Fatalf("a query beside two subscriptions: %s", code)
		}
		completed := ""
		for id := range running {
			c.send(map[string]any{"id": id, "type": "complete"})
			delete(running, id)
			completed = id
			break
		}
		time.Sleep(100 * time.Millisecond)
		c.subscribe("4", activityQuery, vars)
		running["4"] = true
		time.Sleep(300 * time.Millisecond) // the feed starts at the end of the log
		newMinter(t, s, "minter").mint(col.ID, 1)
		seen := map[string]bool{}
		for len(seen) < 2 {
			m := c.read(10 * time.Second)
			if m == nil {
				t.Fatalf("events reached only %v of %v", seen, running)
			}
			if m["id"] == completed {
				continue // what the completed one said on its way out
			}
			if m["type"] != "next" || !running[m["id"].(string)] {
				t.Fatalf("unexpected: %v", m)
			}
			seen[m["id"].(string)] = true
		}
	})
}

// A socket with nothing running for the idle timeout is closed with 4410, pings or not; a
// running subscription keeps it open.
func TestSocket_AnIdleSocketClosesWith4410(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		s, _, url := socketGraph(t, b, SocketLimits{IdleTimeout: 400 * time.Millisecond}, true)
		col, err := s.CollectionBySlug(context.Background(), "ledger-apes")
		if err != nil {
			t.Fatal(err)
		}
		c := dialSession(t, url, "")
		closed := c.closing()
		c.subscribe("1", activityQuery, map[string]any{"c": col.ID})
		select {
		case code := <-closed:
			t.Fatalf("closed with %d while a subscription ran", code)
		case <-time.After(time.Second):
		}
		c.send(map[string]any{"id": "1", "type": "complete"})
		ended := time.Now()
		// Pings (and the pongs they draw) are not activity.
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
					b, _ := json.Marshal(map[string]any{"type": "ping"})
					if c.conn.Write(context.Background(), websocket.MessageText, b) != nil {
						return
					}
				}
			}
		}()
		select {
		case code := <-closed:
			if code != closeIdle {
				t.Fatalf("closed with %d, want %d", code, closeIdle)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the idle socket stayed open")
		}
		if took := time.Since(ended); took < 350*time.Millisecond {
			t.Fatalf("closed %v after the last operation, before the idle timeout", took)
		}
	})
}

// Sockets and subscriptions are capped per client address and for the whole handler: a
// socket past a cap is refused before its upgrade, 429 too_many_sockets with Retry-After; a
// subscription past one with too_many_subscriptions; a closed socket and an ended
// subscription give their place back.
func TestSocket_CapsPerAddressAndForTheService(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
		if _, err := s.SeedDemo(context.Background(), store.DemoOptions{NFTs: 10, Seed: 6}); err != nil {
			t.Fatal(err)
		}
		col, err := s.CollectionBySlug(context.Background(), "ledger-apes")
		if err != nil {
			t.Fatal(err)
		}
		limits := SocketLimits{SocketsPerAddress: 2, SubscriptionsPerAddress: 3, ServiceSockets: 3, ServiceSubscriptions: 4}
		hs := httptest.NewServer(NewHandler(s, Options{Logger: slog.New(slog.DiscardHandler), Sockets: limits,
			ClientAddress: func(r *http.Request) string { return r.Header.Get("X-Test-Client") }}))
		t.Cleanup(hs.Close)
		type sock struct {
			*wsClient
			msgs chan map[string]any // read in the background: a read that times out closes a socket
		}
		dial := func(client string) (*sock, *http.Response, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			h := http.Header{"X-Test-Client": {client}}
			conn, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: h})
			if err != nil {
				return nil, resp, err
			}
			t.Cleanup(func() { conn.CloseNow() })
			c := &wsClient{t: t, conn: conn}
			c.send(map[string]any{"type": "connection_init"})
			if m := c.read(5 * time.Second); m["type"] != "connection_ack" {
				t.Fatalf("init: %v", m)
			}
			sc := &sock{c, make(chan map[string]any, 16)}
			go func() {
				for {
					_, b, err := conn.Read(context.Background())
					if err != nil {
						return
					}
					var m map[string]any
					json.Unmarshal(b, &m)
					sc.msgs <- m
				}
			}()
			return sc, resp, nil
		}
		mustDial := func(client string) *sock {
			c, _, err := dial(client)
			if err != nil {
				t.Fatalf("a socket of %s: %v", client, err)
			}
			return c
		}
		refused := func(client, why string) {
			t.Helper()
			_, resp, err := dial(client)
			if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("%s: a socket of %s was not refused with 429: %v %v", why, client, err, resp)
			}
			var body struct {
				Errors []struct {
					Extensions struct{ Code string }
				}
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || len(body.Errors) == 0 || body.Errors[0].Extensions.Code != string(store.CodeTooManySockets) {
				t.Fatalf("%s: the refusal's body: %+v %v", why, body, err)
			}
		}
		sub := func(c *sock, id string) string {
			t.Helper()
			c.subscribe(id, activityQuery, map[string]any{"c": col.ID})
			select {
			case m := <-c.msgs:
				if m["id"] != id || m["type"] != "error" {
					t.Fatalf("subscription %s: %v", id, m)
				}
				return errorCode(t, m)
			case <-time.After(500 * time.Millisecond):
				return "" // running
			}
		}

		a1, a2 := mustDial("a"), mustDial("a")
		refused("a", "the address's third socket")
		bSock := mustDial("b")
		refused("c", "the service's fourth socket")

		for i, c := range []*sock{a1, a1, a2} {
			if code := sub(c, fmt.Sprint("a", i)); code != "" {
				t.Fatalf("a's subscription %d: %s", i, code)
			}
		}
		if code := sub(a2, "a3"); code != string(store.CodeTooManySubscriptions) {
			t.Fatalf("a's fourth subscription: %q, want too_many_subscriptions", code)
		}
		if code := sub(bSock, "b0"); code != "" {
			t.Fatalf("b's subscription: %s", code)
		}
		if code := sub(bSock, "b1"); code != string(store.CodeTooManySubscriptions) {
			t.Fatalf("the service's fifth subscription: %q, want too_many_subscriptions", code)
		}

		// Ending a subscription and closing a socket give their places back.
		a1.send(map[string]any{"id": "a0", "type": "complete"})
		time.Sleep(200 * time.Millisecond)
		if code := sub(bSock, "b2"); code != "" {
			t.Fatalf("b's subscription after one of a's ended: %s", code)
		}
		a2.conn.Close(websocket.StatusNormalClosure, "")
		deadline := time.Now().Add(5 * time.Second)
		for {
			c, _, err := dial("c")
			if err == nil {
				c.conn.Close(websocket.StatusNormalClosure, "")
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a socket after one closed: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}
