package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"marketd/store/ratelimit"
	"marketd/store/storetest"
)

// One graphql-transport-ws socket cannot buy more reads than REST's budget of its address:
// each operation on it is charged, the ones past the budget are refused with rate_limited
// while the socket stays open, and REST's reads from the same address are refused as well.
func TestFrontDoors_OperationsOnOneSocketSpendTheAddresssReadBudget(t *testing.T) {
	for _, backend := range []string{"memory", "redis"} {
		t.Run(backend, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, b storetest.Backend) {
				var limiter ratelimit.Limiter
				if backend == "redis" {
					r, err := ratelimit.NewRedis(storetest.StartRedis(t).URL(), time.Minute, time.Now, slog.New(slog.DiscardHandler))
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { r.Close() })
					limiter = r
				}
				a, _ := newFrontDoorsLimitedBy(t, b, 300, limiter)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(a.url, "http")+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
				if err != nil {
					t.Fatal(err)
				}
				defer conn.CloseNow()
				conn.SetReadLimit(1 << 20)
				send := func(v any) {
					raw, _ := json.Marshal(v)
					if err := conn.Write(ctx, websocket.MessageText, raw); err != nil {
						t.Fatal(err)
					}
				}
				type message struct {
					ID      string
					Type    string
					Payload struct {
						Data   map[string]any
						Errors []struct{ Extensions map[string]any }
					}
				}
				read := func() message {
					for {
						_, raw, err := conn.Read(ctx)
						if err != nil {
							t.Fatalf("the socket closed: %v", err)
						}
						var m message
						json.Unmarshal(raw, &m)
						if m.Type == "ping" {
							send(map[string]any{"type": "pong"})
							continue
						}
						return m
					}
				}
				send(map[string]any{"type": "connection_init"})
				if m := read(); m.Type != "connection_ack" {
					t.Fatalf("init: %+v", m)
				}
				// Each costs 3 (a page of collections): one read.
				const ops = 1000
				for i := range ops {
					send(map[string]any{"id": strconv.Itoa(i), "type": "subscribe",
						"payload": map[string]any{"query": "{ collections(first: 1) { edges { cursor } } }"}})
				}
				answered, refused := 0, 0
				for completed := 0; completed < ops; {
					m := read()
					switch {
					case m.Type == "complete":
						completed++
					case m.Type == "next" && len(m.Payload.Errors) == 0 && m.Payload.Data["collections"] != nil:
						answered++
					case m.Type == "next" && len(m.Payload.Errors) == 1 && m.Payload.Errors[0].Extensions["code"] == "rate_limited" &&
						m.Payload.Errors[0].Extensions["retryAfter"] != nil:
						refused++
					default:
						t.Fatalf("operation %s: %+v", m.ID, m)
					}
				}
				if answered != 300 || refused != ops-300 {
					t.Fatalf("%d answered, %d refused of %d operations; the budget is 300 a minute", answered, refused, ops)
				}
				// The socket is still open, and its next operation still refused.
				send(map[string]any{"id": "last", "type": "subscribe", "payload": map[string]any{"query": "{ __typename }"}})
				if m := read(); m.ID != "last" || len(m.Payload.Errors) != 1 || m.Payload.Errors[0].Extensions["code"] != "rate_limited" {
					t.Fatalf("after the flood: %+v", m)
				}
				// One budget: REST's reads from the same address are spent too.
				res, err := http.Get(a.url + "/api/nft/collections")
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
					t.Fatalf("REST after the socket spent the budget: %d", res.StatusCode)
				}
			})
		})
	}
}
