package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/uptrace/bun"

	"marketd/store"
	"marketd/store/storetest"
)

// minter is a party made by storetest that mints from a collection through the store.
type minter struct {
	t testing.TB
	s *store.Store
	*storetest.Party
}

// newMinter onboards a party with hint on s and taps it 5000 of every instrument.
func newMinter(t testing.TB, s *store.Store, hint string) *minter {
	t.Helper()
	m := &minter{t: t, s: s, Party: storetest.Onboard(t, s, hint)}
	for _, inst := range store.Instruments {
		m.Tap(t, s, inst, "5000")
	}
	return m
}

func (m *minter) execute(kind string, prep *store.Prepared) store.Receipt {
	m.t.Helper()
	return m.MustExecute(m.t, m.s, kind, prep)
}

// mint mints n NFTs of the collection, one transaction each.
func (m *minter) mint(collectionID string, n int) {
	m.t.Helper()
	for range n {
		prep, err := m.s.PrepareMint(context.Background(), m.ID, collectionID, 1)
		if err != nil {
			m.t.Fatal(err)
		}
		m.execute(store.KindNFTMint, prep)
	}
}

// wsClient speaks graphql-transport-ws to one server.
type wsClient struct {
	t    *testing.T
	conn *websocket.Conn
}

func dialGraphQL(t *testing.T, url string) *wsClient {
	t.Helper()
	return dialGraphQLAs(t, url, "")
}

// dialGraphQLAs is dialGraphQL with the upgrade request carrying token ("" for none).
func dialGraphQLAs(t *testing.T, url, token string) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: h})
	if err != nil {
		t.Fatal(err)
	}
	c := &wsClient{t: t, conn: conn}
	c.send(map[string]any{"type": "connection_init"})
	if m := c.read(5 * time.Second); m["type"] != "connection_ack" {
		t.Fatalf("init: %v", m)
	}
	return c
}

func (c *wsClient) send(v any) {
	c.t.Helper()
	b, _ := json.Marshal(v)
	if err := c.conn.Write(context.Background(), websocket.MessageText, b); err != nil {
		c.t.Fatal(err)
	}
}

// read returns the next message other than a ping, or nil when none comes within d.
func (c *wsClient) read(d time.Duration) map[string]any {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		_, b, err := c.conn.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			c.t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		if m["type"] == "ping" {
			c.send(map[string]any{"type": "pong"})
			continue
		}
		return m
	}
}

func (c *wsClient) subscribe(id, query string, vars map[string]any) {
	c.send(map[string]any{"id": id, "type": "subscribe", "payload": map[string]any{"query": query, "variables": vars}})
}

// next waits for the subscription's next event and returns its data.
func (c *wsClient) next(d time.Duration) map[string]any {
	c.t.Helper()
	m := c.read(d)
	if m == nil {
		return nil
	}
	if m["type"] != "next" {
		c.t.Fatalf("expected an event, got %v", m)
	}
	payload := m["payload"].(map[string]any)
	if errs := payload["errors"]; errs != nil {
		c.t.Fatalf("event with errors: %v", errs)
	}
	return payload["data"].(map[string]any)
}

const activityQuery = `subscription($c: ID!, $after: String) {
  collectionActivity(collectionId: $c, after: $after) { position serial kind to updateId }
}`

func TestSubscription_CollectionActivityInOrderAndResumesFromItsPosition(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		// Two instances of the service on one database: commits go through the first, the
		// subscriber listens to the second.
		dsn := b.DSN(t)
		open := func() *store.Store {
			cfg := storetest.Config(storetest.NewClock(storetest.Epoch))
			cfg.DB = dsn
			s, err := store.Open(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			if _, err := s.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			s.StartNFTIndex()
			return s
		}
		writer, reader := open(), open()
		if _, err := writer.SeedDemo(context.Background(), store.DemoOptions{NFTs: 40, Seed: 2}); err != nil {
			t.Fatal(err)
		}
		col, err := writer.CollectionBySlug(context.Background(), "ledger-apes")
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(NewHandler(reader, Options{Logger: slog.New(slog.DiscardHandler)}))
		t.Cleanup(hs.Close)
		m := newMinter(t, writer, "minter")

		c := dialGraphQL(t, hs.URL)
		c.subscribe("1", activityQuery, map[string]any{"c": col.ID})
		time.Sleep(300 * time.Millisecond) // the subscription starts at the end of the log
		m.mint(col.ID, 3)
		var last string
		var serials []float64
		for i := range 3 {
			ev := c.next(10 * time.Second)
			if ev == nil {
				t.Fatalf("event %d did not arrive", i)
			}
			a := ev["collectionActivity"].(map[string]any)
			if a["kind"] != "MINTED" || a["to"] != m.ID {
				t.Fatalf("event %d: %v", i, a)
			}
			if pos := a["position"].(string); last != "" && !positionBefore(t, last, pos) {
				t.Fatalf("positions out of order: %s after %s", pos, last)
			}
			last = a["position"].(string)
			serials = append(serials, a["serial"].(float64))
		}
		if ev := c.next(600 * time.Millisecond); ev != nil {
			t.Fatalf("an event nobody committed: %v", ev)
		}
		c.conn.Close(websocket.StatusNormalClosure, "")

		// While nobody listens, two more commit; resuming from the last position gets
		// exactly those, once each.
		m.mint(col.ID, 2)
		c2 := dialGraphQL(t, hs.URL)
		c2.subscribe("1", activityQuery, map[string]any{"c": col.ID, "after": last})
		for i := range 2 {
			ev := c2.next(10 * time.Second)
			if ev == nil {
				t.Fatalf("missed event %d was not delivered", i)
			}
			a := ev["collectionActivity"].(map[string]any)
			for _, s := range serials {
				if a["serial"] == s {
					t.Fatalf("event for serial %v delivered twice", s)
				}
			}
			serials = append(serials, a["serial"].(float64))
		}
		if ev := c2.next(600 * time.Millisecond); ev != nil {
			t.Fatalf("more than the missed events: %v", ev)
		}
		c2.conn.Close(websocket.StatusNormalClosure, "")

		// Bad positions and unknown collections are refused.
		c3 := dialGraphQL(t, hs.URL)
		c3.subscribe("1", activityQuery, map[string]any{"c": col.ID, "after": "nope"})
		if msg := c3.read(5 * time.Second); msg["type"] != "error" && msg["type"] != "next" {
			t.Fatalf("bad position: %v", msg)
		} else if !strings.Contains(mustJSON(msg), "invalid_cursor") {
			t.Fatalf("bad position: %v", msg)
		}
		c3.subscribe("2", activityQuery, map[string]any{"c": "col_nope"})
		msg := c3.read(5 * time.Second)
		for msg != nil && msg["id"] == "1" { // the first subscription's completion
			msg = c3.read(5 * time.Second)
		}
		if !strings.Contains(mustJSON(msg), "not_found") {
			t.Fatalf("unknown collection: %v", msg)
		}
	})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// positionBefore tells whether position a comes before b in the log.
func positionBefore(t *testing.T, a, b string) bool {
	var ao, as, bo, bs int64
	if _, err := fmt.Sscanf(a, "%d.%d", &ao, &as); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Sscanf(b, "%d.%d", &bo, &bs); err != nil {
		t.Fatal(err)
	}
	return ao < bo || ao == bo && as < bs
}

// swap submits an intent selling amount CC for USDCx with no minimum: against the demo
// pool's open quotes it fills at once.
func (m *minter) swap(poolID, amount string) {
	m.t.Helper()
	prep, err := m.s.PrepareSwap(context.Background(), m.ID, store.SwapTerms{PoolID: poolID, Sell: "CC", Amount: amount, MinReceive: "0.000001",
		Deadline: m.s.Now().Add(time.Hour).Unix()})
	if err != nil {
		m.t.Fatal(err)
	}
	m.execute(store.KindSwapIntent, prep)
}

const outcomesQuery = `subscription($p: ID!, $after: String) {
  poolOutcomes(poolId: $p, after: $after) { position outcome { intentCid taker sold { instrument amount } received { amount } } }
}`

func TestSubscription_PoolOutcomesOnceEachInOrderAndResumable(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
		if _, err := s.SeedDemo(context.Background(), store.DemoOptions{NFTs: 40, Seed: 4}); err != nil {
			t.Fatal(err)
		}
		pools, err := s.Pools(context.Background())
		if err != nil || len(pools) == 0 {
			t.Fatalf("the demo has no pool: %v", err)
		}
		pool := pools[0].PoolID
		hs := httptest.NewServer(NewHandler(s, Options{Logger: slog.New(slog.DiscardHandler)}))
		t.Cleanup(hs.Close)
		taker := newMinter(t, s, "taker")

		c := dialGraphQL(t, hs.URL)
		c.subscribe("1", outcomesQuery, map[string]any{"p": pool})
		time.Sleep(300 * time.Millisecond)
		for range 3 {
			taker.swap(pool, "1")
		}
		seen := map[string]bool{}
		var last string
		for i := range 3 {
			ev := c.next(10 * time.Second)
			if ev == nil {
				t.Fatalf("outcome %d did not arrive", i)
			}
			o := ev["poolOutcomes"].(map[string]any)
			out := o["outcome"].(map[string]any)
			// An anonymous subscriber is shown no taker (the pool feeds' privacy rule).
			if out["taker"] != nil || seen[out["intentCid"].(string)] {
				t.Fatalf("outcome %d: %v (seen %v)", i, o, seen)
			}
			seen[out["intentCid"].(string)] = true
			if pos := o["position"].(string); last != "" && !textPositionBefore(t, last, pos) {
				t.Fatalf("outcomes out of log order: %s after %s", pos, last)
			}
			last = o["position"].(string)
		}
		if ev := c.next(600 * time.Millisecond); ev != nil {
			t.Fatalf("an outcome nobody filled: %v", ev)
		}
		c.conn.Close(websocket.StatusNormalClosure, "")

		for range 2 {
			taker.swap(pool, "1")
		}
		c2 := dialGraphQL(t, hs.URL)
		c2.subscribe("1", outcomesQuery, map[string]any{"p": pool, "after": last})
		for i := range 2 {
			ev := c2.next(10 * time.Second)
			if ev == nil {
				t.Fatalf("missed outcome %d was not delivered", i)
			}
			cid := ev["poolOutcomes"].(map[string]any)["outcome"].(map[string]any)["intentCid"].(string)
			if seen[cid] {
				t.Fatalf("outcome %s delivered twice", cid)
			}
			seen[cid] = true
		}
		if ev := c2.next(600 * time.Millisecond); ev != nil {
			t.Fatalf("more than the missed outcomes: %v", ev)
		}
		// Every fill of the pool by this taker came exactly once: the store agrees.
		page, err := s.SwapHistory(context.Background(), store.SwapHistoryFilter{Taker: taker.ID}, store.PageRequest{Limit: 100})
		if err != nil || len(page.Items) != 5 || len(seen) != 5 {
			t.Fatalf("history %d, delivered %d: %v", len(page.Items), len(seen), err)
		}
	})
}

// textPositionBefore tells whether position a ("offset.key") comes before b in the log.
func textPositionBefore(t *testing.T, a, b string) bool {
	ao, ak, _ := strings.Cut(a, ".")
	bo, bk, _ := strings.Cut(b, ".")
	var an, bn int64
	if _, err := fmt.Sscan(ao, &an); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Sscan(bo, &bn); err != nil {
		t.Fatal(err)
	}
	return an < bn || an == bn && ak < bk
}

// queryCount counts the statements a store runs.
type queryCount struct{ n atomic.Int64 }

func (q *queryCount) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }
func (q *queryCount) AfterQuery(context.Context, *bun.QueryEvent)                        { q.n.Add(1) }

// Sixty subscriptions of one collection's activity, on three sockets, cost the store the
// reads of one: one follower reads the feed and fans each event out to all of them, and each
// gets every event.
func TestSubscription_SixtySubscriptionsOfAFeedReadWhatOneDoes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s, _, url := socketGraph(t, b, SocketLimits{}, true)
		col, err := s.CollectionBySlug(ctx, "ledger-apes")
		if err != nil {
			t.Fatal(err)
		}
		reads := &queryCount{}
		s.AddQueryHook(reads)
		perSecond := func() float64 {
			time.Sleep(300 * time.Millisecond) // the subscriptions have started
			from := reads.n.Load()
			time.Sleep(2 * time.Second)
			return float64(reads.n.Load()-from) / 2
		}
		one := dialSession(t, url, "")
		one.subscribe("0", activityQuery, map[string]any{"c": col.ID})
		alone := perSecond()

		var socks []*wsClient
		for i := range 3 {
			c := dialSession(t, url, "")
			for j := range 20 {
				c.subscribe(fmt.Sprint(i*20+j+1), activityQuery, map[string]any{"c": col.ID})
			}
			socks = append(socks, c)
		}
		together := perSecond() // 61 subscriptions now
		if alone == 0 || together > 2*alone {
			t.Fatalf("the store's reads per second: %.1f with one subscription, %.1f with 61", alone, together)
		}
		newMinter(t, s, "minter").mint(col.ID, 1)
		for i, c := range socks {
			seen := map[any]bool{}
			for len(seen) < 20 {
				m := c.read(10 * time.Second)
				if m == nil {
					t.Fatalf("socket %d: %d of its 20 subscriptions saw the mint", i, len(seen))
				}
				if m["type"] == "next" && dig(m, "payload", "data", "collectionActivity", "kind") == "MINTED" {
					seen[m["id"]] = true
				}
			}
		}
	})
}

// With kinds, collectionActivity delivers the collection's offers made and cancelled too,
// with the offer's cid (serial 0 for a collection offer, which names no NFT); without, only
// the NFTs' events, as before offers.
func TestSubscription_CollectionActivityDeliversOffersWhenAsked(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s, _, url := socketGraph(t, b, SocketLimits{}, true)
		col, err := s.CollectionBySlug(ctx, "ledger-apes")
		if err != nil {
			t.Fatal(err)
		}
		const query = `subscription($c: ID!, $k: [NFTEventKind!]) {
		  collectionActivity(collectionId: $c, kinds: $k) { serial kind from price offerCid }
		}`
		c := dialSession(t, url, "")
		c.subscribe("offers", query, map[string]any{"c": col.ID, "k": []string{"OFFER_MADE", "OFFER_CANCELLED"}})
		c.subscribe("nfts", query, map[string]any{"c": col.ID})
		time.Sleep(300 * time.Millisecond) // from the end of the log

		bidder := newMinter(t, s, "bidder")
		prep, err := s.PrepareOffer(ctx, bidder.ID, store.OfferTerms{CollectionID: col.ID, Price: "0.001", Quantity: new(2), ExpiresAt: s.Now().Add(time.Hour).Unix()})
		if err != nil {
			t.Fatal(err)
		}
		var made struct {
			CID string `json:"cid"`
		}
		if err := json.Unmarshal(bidder.execute(store.KindNFTOffer, prep), &made); err != nil {
			t.Fatal(err)
		}
		cancel, err := s.PrepareOfferCancel(ctx, bidder.ID, []string{made.CID})
		if err != nil {
			t.Fatal(err)
		}
		bidder.execute(store.KindNFTOfferCancel, cancel)
		bidder.mint(col.ID, 1)

		got := map[any][]map[string]any{}
		for len(got["offers"]) < 2 || len(got["nfts"]) < 1 {
			m := c.read(10 * time.Second)
			if m == nil {
				t.Fatalf("the feeds delivered %v", got)
			}
			ev, _ := dig(m, "payload", "data", "collectionActivity").(map[string]any)
			got[m["id"]] = append(got[m["id"]], ev)
		}
		for i, want := range []string{"OFFER_MADE", "OFFER_CANCELLED"} {
			ev := got["offers"][i]
			if ev["kind"] != want || ev["offerCid"] != made.CID || ev["serial"] != float64(0) || ev["from"] != bidder.ID {
				t.Fatalf("%s: %v", want, ev)
			}
		}
		if k := got["nfts"][0]["kind"]; k != "MINTED" {
			t.Fatalf("the NFTs' feed delivered %v first, not the mint", got["nfts"])
		}
		if m := c.until("offers", 700*time.Millisecond); m != nil {
			t.Fatalf("the offers' feed delivered an NFT's event: %v", m)
		}
	})
}
