package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"

	"marketd/store"
	"marketd/store/metrics"
	"marketd/store/ratelimit"
	"marketd/store/storetest"
)

// reuseMarket is one collection of two minted NFTs behind the GraphQL endpoint, on a store
// that keeps pages for an hour: only a write or an expiry ends a page, so a test sees exactly
// when an answer may be served again. Its metrics tell a reused answer from a run one.
type reuseMarket struct {
	*testGraph
	clock   *storetest.Clock
	metrics *metrics.Metrics
	seller  *minter
	col     *store.Collection
	nfts    []string
}

func newReuseMarket(t *testing.T, b storetest.Backend, ttl time.Duration) *reuseMarket {
	t.Helper()
	ctx := context.Background()
	clock := storetest.NewClock(storetest.Epoch)
	cfg := storetest.Config(clock)
	cfg.PageCacheTTL = ttl
	s := b.Open(t, cfg)
	seller := newMinter(t, s, "seller")
	col, err := s.CreateCollection(ctx, store.CollectionSpec{Slug: "apes", Name: "Apes", Creator: seller.ID, Currency: store.CC, Supply: 2})
	if err != nil {
		t.Fatal(err)
	}
	now := clock.Now()
	if _, err := s.AddPhase(ctx, store.PhaseSpec{Collection: col.ID, Name: "free", Price: "0", Start: now.Add(-time.Hour), End: now.Add(time.Hour), PerPartyLimit: 2}); err != nil {
		t.Fatal(err)
	}
	m := &reuseMarket{testGraph: &testGraph{t: t, store: s}, clock: clock, seller: seller, col: col}
	var minted struct {
		ContractIDs []string `json:"contractIds"`
	}
	prep, err := s.PrepareMint(ctx, seller.ID, col.ID, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(m.seller.execute(store.KindNFTMint, prep), &minted); err != nil || len(minted.ContractIDs) != 2 {
		t.Fatalf("mint receipt: %v %+v", err, minted)
	}
	m.nfts = minted.ContractIDs
	m.metrics = metrics.New(s, ratelimit.NewMemory(time.Minute, s.Now))
	s.AddQueryHook(m.testGraph)
	m.http = httptest.NewServer(NewHandler(s, Options{Logger: slog.New(slog.DiscardHandler), Metrics: m.metrics}))
	t.Cleanup(m.http.Close)
	return m
}

// list lists the first NFT at price until expires (nil: until cancelled) and returns the
// listing's cid.
func (m *reuseMarket) list(price string, expires *time.Time) string {
	m.t.Helper()
	prep, err := m.store.PrepareList(context.Background(), m.seller.ID, []store.ListingTerms{{ContractID: m.nfts[0], Price: price, ExpiresAt: expires}})
	if err != nil {
		m.t.Fatal(err)
	}
	var listed struct {
		CIDs []string `json:"cids"`
	}
	if err := json.Unmarshal(m.seller.execute(store.KindNFTList, prep), &listed); err != nil || len(listed.CIDs) != 1 {
		m.t.Fatalf("list receipt: %v %+v", err, listed)
	}
	return listed.CIDs[0]
}

func (m *reuseMarket) cancel(cid string) {
	m.t.Helper()
	prep, err := m.store.PrepareCancel(context.Background(), m.seller.ID, []string{cid})
	if err != nil {
		m.t.Fatal(err)
	}
	m.seller.execute(store.KindNFTCancel, prep)
}

// ask posts q and returns the answer's bytes and whether it was served again from memory.
func (m *reuseMarket) ask(q string) (string, bool) {
	m.t.Helper()
	const reused = "marketd_graphql_reused_answers_total"
	before := scrape(m.t, m.metrics)[reused]
	body, _ := json.Marshal(map[string]any{"query": q})
	res, err := http.Post(m.http.URL+"/graphql", "application/json", bytes.NewReader(body))
	if err != nil {
		m.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/json" {
		m.t.Fatalf("%d %s: %s", res.StatusCode, res.Header.Get("Content-Type"), raw)
	}
	after := scrape(m.t, m.metrics)[reused]
	return string(raw), after-before == 1
}

// want asks q and fails unless the answer is want and was (or was not) served again.
func (m *reuseMarket) want(step, q, want string, reused bool) {
	m.t.Helper()
	got, wasReused := m.ask(q)
	if got != want || wasReused != reused {
		m.t.Fatalf("%s: got %s (reused %v), want %s (reused %v)", step, got, wasReused, want, reused)
	}
}

// settle asks q until its answer, which must be want, is served again: the pages it reads go
// into the store's cache, then the answer into the endpoint's. (A first read of the service's
// cursor keys is a write, which ends the pages read beside it: that can take one more ask.)
func (m *reuseMarket) settle(step, q, want string) {
	m.t.Helper()
	for range 4 {
		got, reused := m.ask(q)
		if got != want {
			m.t.Fatalf("%s: got %s, want %s", step, got, want)
		}
		if reused {
			return
		}
	}
	m.t.Fatalf("%s: the answer is never served again", step)
}

func TestResponseCache_AnAnswerIsServedAgainUntilAWriteOrAnExpiryChangesIt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newReuseMarket(t, b, time.Hour)
		// Global ids read nothing but their object: asking for them keeps the answer reusable.
		// The NFT's id is the same listed or not, though listing gives it a new contract.
		ids := strings.NewReplacer("$col", globalID(nodeCollection, m.col.ID), "$nft", globalID(nodeNFT, m.col.ID+"#1"))
		const q = `{ collections(sort: FLOOR, first: 5) { edges { node { id slug floorPrice listedCount nfts(sort: PRICE_ASC, first: 1) { edges { node { id serial listing { price } } } } } } } }`
		unlisted := ids.Replace(`{"data":{"collections":{"edges":[{"node":{"id":"$col","slug":"apes","floorPrice":null,"listedCount":0,"nfts":{"edges":[{"node":{"id":"$nft","serial":1,"listing":null}}]}}}]}}}`)
		listed := ids.Replace(`{"data":{"collections":{"edges":[{"node":{"id":"$col","slug":"apes","floorPrice":"3","listedCount":1,"nfts":{"edges":[{"node":{"id":"$nft","serial":1,"listing":{"price":"3"}}}]}}}]}}}`)

		const one = `{ collection(slug: "apes") { floorPrice listedCount nfts(sort: PRICE_ASC, first: 1) { edges { node { id serial listing { price } } } } } }`
		oneUnlisted := ids.Replace(`{"data":{"collection":{"floorPrice":null,"listedCount":0,"nfts":{"edges":[{"node":{"id":"$nft","serial":1,"listing":null}}]}}}}`)
		oneListed := ids.Replace(`{"data":{"collection":{"floorPrice":"3","listedCount":1,"nfts":{"edges":[{"node":{"id":"$nft","serial":1,"listing":{"price":"3"}}}]}}}}`)

		m.settle("before any listing", q, unlisted)
		m.want("asked again", q, unlisted, true)
		m.settle("one collection, before any listing", one, oneUnlisted)

		expires := m.clock.Now().Add(time.Minute)
		m.list("3", &expires)
		m.want("after a listing", q, listed, false)
		m.want("one collection, after a listing", one, oneListed, false)
		m.settle("after a listing", q, listed)
		m.want("after a listing, asked again", q, listed, true)
		m.settle("one collection, after a listing", one, oneListed)

		m.clock.Advance(time.Minute - time.Second)
		m.want("a second before the listing expires", q, listed, true)
		m.want("one collection, a second before the listing expires", one, oneListed, true)
		m.clock.Advance(time.Second)
		m.want("once the listing has expired", q, unlisted, false)
		m.want("one collection, once the listing has expired", one, oneUnlisted, false)
	})
}

func TestResponseCache_NeverKeepsWhatReadsTheClockTheDatabaseOrFails(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newReuseMarket(t, b, time.Hour)
		m.settle("the pages, into the cache", `{ collections(first: 5) { edges { node { slug } } } }`, `{"data":{"collections":{"edges":[{"node":{"slug":"apes"}}]}}}`)
		// A phase's active is the clock's: its answer changes with no write.
		const phases = `{ collections(first: 5) { edges { node { phases { name active } } } } }`
		active := `{"data":{"collections":{"edges":[{"node":{"phases":[{"name":"free","active":true}]}}]}}}`
		for i := range 3 {
			m.want(fmt.Sprintf("phases, asked %d times", i+1), phases, active, false)
		}
		m.clock.Advance(2 * time.Hour)
		m.want("phases once the phase has ended", phases, `{"data":{"collections":{"edges":[{"node":{"phases":[{"name":"free","active":false}]}}]}}}`, false)

		// An NFT by its contract id is a statement, not a cached page.
		byID := `{ nft(contractId: "` + m.nfts[0] + `") { serial } }`
		for i := range 3 {
			m.want(fmt.Sprintf("an NFT, asked %d times", i+1), byID, `{"data":{"nft":{"serial":1}}}`, false)
		}

		// A count is a statement too, even beside a cached page.
		counted := `{ collections(first: 5) { totalCount edges { node { slug } } } }`
		for i := range 3 {
			m.want(fmt.Sprintf("counted, asked %d times", i+1), counted, `{"data":{"collections":{"totalCount":1,"edges":[{"node":{"slug":"apes"}}]}}}`, false)
		}

		// An answer holding an error is not kept, even when all it read was cached pages.
		refused := `{ collections(first: 5) { edges { node { slug } } } big: collections(first: 101) { edges { cursor } } }`
		for range 3 {
			if got, reused := m.ask(refused); reused || !bytes.Contains([]byte(got), []byte(`"code":"invalid_request"`)) {
				t.Fatalf("a refused query: %s (reused %v)", got, reused)
			}
		}
		// Nor one that asked for the caller.
		failing := `{ collections(first: 5) { edges { node { slug } } } wallet(partyId: "` + m.seller.ID + `") { partyId } }`
		for range 2 {
			if got, reused := m.ask(failing); reused || !bytes.Contains([]byte(got), []byte(`"code":"unauthenticated"`)) {
				t.Fatalf("a failing query: %s (reused %v)", got, reused)
			}
		}
	})
}

// The guard reads the query, not the fields that happen to run: a resolver that reads the
// clock spoils the answer wherever the query names it, in a fragment, an inline fragment, or
// under a collection that is not there; fragments of plain fields and kept pages are kept.
func TestResponseCache_AResolverAnywhereInTheQuerySpoilsItsAnswer(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newReuseMarket(t, b, time.Hour)
		plain := `query { collection(slug: "apes") { ...C } } fragment C on Collection { slug ... on Collection { phases { name } } }`
		m.settle("plain fields through fragments", plain, `{"data":{"collection":{"slug":"apes","phases":[{"name":"free"}]}}}`)
		for name, q := range map[string]string{
			"a fragment":               `query { collection(slug: "apes") { ...C } } fragment C on Collection { slug phases { active } }`,
			"an inline fragment":       `{ collection(slug: "apes") { slug ... on Collection { phases { active } } } }`,
			"a fragment in a fragment": `query { collection(slug: "apes") { ...C } } fragment C on Collection { slug phases { ...P } } fragment P on MintPhase { active }`,
		} {
			for i := range 3 {
				m.want(fmt.Sprintf("%s, asked %d times", name, i+1), q, `{"data":{"collection":{"slug":"apes","phases":[{"active":true}]}}}`, false)
			}
		}
		missing := `{ collection(slug: "none") { phases { active } } }`
		for i := range 3 {
			m.want(fmt.Sprintf("a missing collection, asked %d times", i+1), missing, `{"data":{"collection":null}}`, false)
		}
	})
}

func TestResponseCache_OffWithThePageCache(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newReuseMarket(t, b, -1)
		const q = `{ collections(first: 5) { edges { node { slug } } } }`
		for range 3 {
			m.want("asked", q, `{"data":{"collections":{"edges":[{"node":{"slug":"apes"}}]}}}`, false)
		}
	})
}

// Readers hammer one query while a writer lists and cancels: the answer right after each
// write shows it, however many answers the readers had kept just before.
func TestResponseCache_EachWriteShowsInTheNextAnswerWhileOthersReadAtOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newReuseMarket(t, b, time.Hour)
		const q = `{ collections(sort: FLOOR, first: 5) { edges { node { floorPrice nfts(sort: PRICE_ASC, first: 1) { edges { node { listing { price } } } } } } } }`
		answer := func(price string) string {
			if price == "" {
				return `{"data":{"collections":{"edges":[{"node":{"floorPrice":null,"nfts":{"edges":[{"node":{"listing":null}}]}}}]}}}`
			}
			return `{"data":{"collections":{"edges":[{"node":{"floorPrice":"` + price + `","nfts":{"edges":[{"node":{"listing":{"price":"` + price + `"}}}]}}}]}}}`
		}
		post := func() (string, error) {
			res, err := http.Post(m.http.URL+"/graphql", "application/json", bytes.NewReader([]byte(`{"query":"`+strings.ReplaceAll(q, `"`, `\"`)+`"}`)))
			if err != nil {
				return "", err
			}
			defer res.Body.Close()
			raw, err := io.ReadAll(res.Body)
			return string(raw), err
		}
		stop := make(chan struct{})
		var readers sync.WaitGroup
		for range 8 {
			readers.Add(1)
			go func() {
				defer readers.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if got, err := post(); err != nil || !strings.HasPrefix(got, `{"data":{"collections":`) {
						t.Errorf("a reader got %s, %v", got, err)
						return
					}
				}
			}()
		}
		stopReaders := sync.OnceFunc(func() { close(stop); readers.Wait() })
		defer stopReaders() // before the server closes, should the writer fail
		const reused = "marketd_graphql_reused_answers_total"
		before := scrape(t, m.metrics)[reused]
		for i := 1; i <= 15; i++ {
			price := strconv.Itoa(i)
			cid := m.list(price, nil)
			if got, err := post(); err != nil || got != answer(price) {
				t.Fatalf("right after listing at %s: %s, %v", price, got, err)
			}
			time.Sleep(20 * time.Millisecond) // the readers keep the answer again
			m.cancel(cid)
			if got, err := post(); err != nil || got != answer("") {
				t.Fatalf("right after cancelling the listing at %s: %s, %v", price, got, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		stopReaders()
		if n := scrape(t, m.metrics)[reused] - before; n == 0 {
			t.Fatal("no answer was served again: the test did not exercise kept answers")
		} else {
			t.Logf("%v answers served again", n)
		}
	})
}

// resolverRecorder records every field the executor runs through a resolver or a model's
// method, as the executor itself reports it.
type resolverRecorder struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (*resolverRecorder) ExtensionName() string                   { return "ResolverRecorder" }
func (*resolverRecorder) Validate(graphql.ExecutableSchema) error { return nil }
func (r *resolverRecorder) InterceptField(ctx context.Context, next graphql.Resolver) (any, error) {
	if fc := graphql.GetFieldContext(ctx); fc != nil && (fc.IsResolver || fc.IsMethod) && !strings.HasPrefix(fc.Field.Name, "__") {
		r.mu.Lock()
		r.seen[fc.Object+"."+fc.Field.Name] = true
		r.mu.Unlock()
	}
	return next(ctx)
}

// The guard's list of resolver fields, made by go generate from the generated executor, holds
// every field the executor reports running through a resolver or method, and only those.
func TestResolverFields_AreWhatTheExecutorRunsThroughResolvers(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		g := newTestGraph(t, b, 20)
		rec := &resolverRecorder{seen: map[string]bool{}}
		gql := handler.New(NewExecutableSchema(config(g.store)))
		gql.AddTransport(postJSON{})
		gql.Use(rec)
		h := withCaller(nil, withLoaders(g.store, gql))
		for _, q := range []string{
			`{ collections(first: 2) { totalCount edges { node { slug phases { name active } nfts(first: 2) { totalCount edges { node { contractId serial traits { type value } listing { cid price } collection { slug } history(first: 2) { edges { node { kind at } } } } } } } } } }`,
			`{ collection(slug: "ledger-apes") { name } }`,
			`{ pools(first: 2) { totalCount edges { node { poolId } } } }`,
		} {
			body, _ := json.Marshal(map[string]any{"query": q})
			r := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if bytes.Contains(w.Body.Bytes(), []byte(`"errors"`)) {
				t.Fatalf("%s: %s", q, w.Body)
			}
		}
		for f := range rec.seen {
			if !resolverFields[f] {
				t.Errorf("the executor ran %s through a resolver; resolverFields does not list it", f)
			}
		}
		for _, f := range []string{"Collection.nfts", "Collection.phases", "MintPhase.active", "NFT.collection", "NFT.history", "Query.collections", "Query.collection", "CollectionConnection.totalCount", "PoolConnection.totalCount", "Query.pools"} {
			if !rec.seen[f] {
				t.Errorf("the queries never ran %s", f)
			}
			if !resolverFields[f] {
				t.Errorf("resolverFields does not list %s", f)
			}
		}
		for _, f := range []string{"NFT.contractId", "NFT.traits", "Trait.type", "NFT.listing", "Listing.price", "NFTConnection.edges"} {
			if resolverFields[f] || rec.seen[f] {
				t.Errorf("%s reads a struct field, yet is counted as a resolver", f)
			}
		}
	})
}
