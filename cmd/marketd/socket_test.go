package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"marketd/store/storetest"
)

// A GraphQL socket opened with a token (as a Bearer header or as the session cookie) reads
// the token's wallet; after POST /api/auth/logout the socket closes with 4403 and
// token_revoked (an operation sent before it closes is refused with that code), as REST
// refuses the token.
func TestFrontDoors_ASocketActsAsItsSessionOnlyWhileTheSessionLives(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a, _ := newFrontDoors(t, b)
		for _, carrier := range []string{"Authorization", "Cookie"} {
			t.Run(carrier, func(t *testing.T) {
				party, tok := a.signedIn("holder")
				h := http.Header{}
				if carrier == "Authorization" {
					h.Set("Authorization", "Bearer "+tok)
				} else {
					h.Set("Cookie", "ledger_session="+tok)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				conn, send := graphQLSocket(ctx, t, a.url, h)
				// answer runs the wallet query as operation id and returns the first message
				// about it.
				answer := func(id string) map[string]any {
					send(map[string]any{"id": id, "type": "subscribe", "payload": map[string]any{
						"query":     `query($p: ID!) { wallet(partyId: $p) { balances { instrument amount } } }`,
						"variables": map[string]any{"p": party}}})
					for {
						_, raw, err := conn.Read(ctx)
						if err != nil {
							t.Fatal(err)
						}
						var m map[string]any
						json.Unmarshal(raw, &m)
						if m["id"] == id {
							return m
						}
					}
				}
				send(map[string]any{"type": "connection_init"})
				if m := answer("1"); m["type"] != "next" || dig(m, "payload", "data", "wallet") == nil {
					t.Fatalf("the wallet while the session lives: %v", m)
				}

				if res, _ := a.send("POST", "/api/auth/logout", tok, map[string]any{}); res.StatusCode != http.StatusNoContent {
					t.Fatalf("logout: %d", res.StatusCode)
				}
				if res, _ := a.send("GET", "/api/auth/me", tok, nil); res.StatusCode != http.StatusUnauthorized {
					t.Fatalf("me after logout: %d", res.StatusCode)
				}
				// The socket closes with 4403 and the code; an operation sent before it closes is
				// refused with that code.
				raw, _ := json.Marshal(map[string]any{"id": "2", "type": "subscribe", "payload": map[string]any{
					"query":     `query($p: ID!) { wallet(partyId: $p) { balances { instrument amount } } }`,
					"variables": map[string]any{"p": party}}})
				conn.Write(ctx, websocket.MessageText, raw) // fails when the socket closed already
				for {
					_, raw, err := conn.Read(ctx)
					if err != nil {
						var ce websocket.CloseError
						if !errors.As(err, &ce) || ce.Code != 4403 || ce.Reason != "token_revoked" {
							t.Fatalf("the socket after logout: %v; want close 4403 token_revoked", err)
						}
						break
					}
					var m map[string]any
					json.Unmarshal(raw, &m)
					errs, _ := m["payload"].([]any)
					if m["id"] == "2" && (m["type"] != "error" || len(errs) == 0 || dig(errs[0], "extensions", "code") != "token_revoked") {
						t.Fatalf("the wallet on the same socket after logout: %v", m)
					}
				}
			})
		}
	})
}

// graphQLSocket opens a graphql-transport-ws socket on base's /graphql with the upgrade's
// headers h, for as long as ctx lives (closed at the test's end), and returns it with a
// function that sends one message on it.
func graphQLSocket(ctx context.Context, t *testing.T, base string, h http.Header) (*websocket.Conn, func(any)) {
	t.Helper()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: h})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	return conn, func(v any) {
		raw, _ := json.Marshal(v)
		if err := conn.Write(ctx, websocket.MessageText, raw); err != nil {
			t.Fatal(err)
		}
	}
}
