package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"marketd/graph"
	"marketd/rest"
	"marketd/store"
	"marketd/store/ratelimit"
	"marketd/store/storetest"
)

// frontDoorsAPI is REST and GraphQL mounted as `marketd serve` mounts them, over one store
// with a small demo market.
type frontDoorsAPI struct {
	t   *testing.T
	url string
}

func newFrontDoors(t *testing.T, b storetest.Backend) (*frontDoorsAPI, *store.Store) {
	return newFrontDoorsLimited(t, b, 0)
}

// newFrontDoorsLimited is newFrontDoors with a read limit per origin and minute (0: none).
func newFrontDoorsLimited(t *testing.T, b storetest.Backend, rateRead int) (*frontDoorsAPI, *store.Store) {
	t.Helper()
	return newFrontDoorsLimitedBy(t, b, rateRead, nil)
}

// newFrontDoorsLimitedBy is newFrontDoorsLimited counting with limiter (nil: REST's own).
func newFrontDoorsLimitedBy(t *testing.T, b storetest.Backend, rateRead int, limiter ratelimit.Limiter) (*frontDoorsAPI, *store.Store) {
	t.Helper()
	s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
	if _, err := s.SeedDemo(context.Background(), store.DemoOptions{NFTs: 240, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	api, err := rest.New(s, rest.Config{PublicURL: "http://127.0.0.1", Dev: true, RateRead: rateRead, Logger: quiet, Limiter: limiter})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(frontDoors(api, graph.NewHandler(s, graph.Options{Logger: quiet, Authenticate: api.Authenticate, ChargeRead: api.ChargeRead}), nil))
	t.Cleanup(hs.Close)
	return &frontDoorsAPI{t: t, url: hs.URL}, s
}

// send makes one request, with a bearer token unless tok is "", and returns the answer and
// its body.
func (a *frontDoorsAPI) send(method, path, tok string, body any) (*http.Response, []byte) {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, a.url+path, rd)
	req.Header.Set("Content-Type", "application/json")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res, raw
}

// rest GETs path and decodes its JSON body.
func (a *frontDoorsAPI) rest(path string) map[string]any {
	a.t.Helper()
	res, raw := a.send("GET", path, "", nil)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil || res.StatusCode != http.StatusOK {
		a.t.Fatalf("GET %s: %d %s %v", path, res.StatusCode, raw, err)
	}
	return out
}

// graph posts a query and returns its data.
func (a *frontDoorsAPI) graph(query string, vars map[string]any) map[string]any {
	a.t.Helper()
	data, errs := a.graphAs("", query, vars)
	if len(errs) > 0 {
		a.t.Fatalf("graphql: %v", errs)
	}
	return data
}

// graphAs posts a query with a bearer token (none when tok is "") and returns its data and
// the codes of its errors.
func (a *frontDoorsAPI) graphAs(tok, query string, vars map[string]any) (map[string]any, []string) {
	a.t.Helper()
	res, raw := a.send("POST", "/graphql", tok, map[string]any{"query": query, "variables": vars})
	var out struct {
		Data   map[string]any
		Errors []struct{ Extensions struct{ Code string } }
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		a.t.Fatalf("graphql: %d %s %v", res.StatusCode, raw, err)
	}
	var codes []string
	for _, e := range out.Errors {
		codes = append(codes, e.Extensions.Code)
	}
	return out.Data, codes
}

// post sends a JSON body, with a bearer token unless tok is "", and decodes a 200 answer.
func (a *frontDoorsAPI) post(path, tok string, body any) map[string]any {
	a.t.Helper()
	res, raw := a.send("POST", path, tok, body)
	if res.StatusCode == http.StatusNoContent {
		return nil
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil || res.StatusCode != http.StatusOK {
		a.t.Fatalf("POST %s: %d %s %v", path, res.StatusCode, raw, err)
	}
	return out
}

// signedIn onboards a new key through REST, signs it in, and returns its party and token.
func (a *frontDoorsAPI) signedIn(hint string) (party, tok string) {
	a.t.Helper()
	p := storetest.NewParty(hint)
	prep := a.post("/api/parties/onboard/prepare", "", map[string]string{"publicKey": p.PublicBase64(), "hint": hint})
	a.post("/api/parties/onboard/execute", "", map[string]string{"preparedTransactionHash": prep["preparedTransactionHash"].(string),
		"signature": p.SignHash(a.t, prep["preparedTransactionHash"].(string))})
	ch := a.post("/api/auth/nonce", "", map[string]string{"partyId": p.ID})
	v := a.post("/api/auth/verify", "", map[string]string{"partyId": p.ID, "nonce": ch["nonce"].(string),
		"signature": p.SignBase64([]byte(ch["message"].(string)))})
	return p.ID, v["token"].(string)
}

// nodes lists a connection's nodes.
func nodes(conn any) []any {
	var out []any
	for _, e := range conn.(map[string]any)["edges"].([]any) {
		out = append(out, e.(map[string]any)["node"])
	}
	return out
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		v = v.(map[string]any)[k]
	}
	return v
}

// sameFields fails unless REST's object and GraphQL's have the same fields and values.
func sameFields(t *testing.T, what string, fromREST, fromGraph any) {
	t.Helper()
	if !reflect.DeepEqual(fromREST, fromGraph) {
		r, _ := json.MarshalIndent(fromREST, "", " ")
		g, _ := json.MarshalIndent(fromGraph, "", " ")
		t.Fatalf("%s differs:\nREST    %s\nGraphQL %s", what, r, g)
	}
}

// REST's collection id is GraphQL's collectionId (GraphQL's id is the global id).
const collectionFields = `id: collectionId slug name description image creator currency royaltyBps supply minted burned
	floorPrice listedCount owners volume topOffer createdAt
	phases { name price start end perPartyLimit supply minted allowList active }`

const nftFields = `contractId collectionId serial name image traits { type value } owner
	listing { cid seller price currency expiresAt } bestOffer { cid price kind }`

func TestFrontDoors_RESTAndGraphQLShowTheSameData(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a, _ := newFrontDoors(t, b)

		// Collections, by volume, a page of 3 and the next.
		restPage := a.rest("/api/nft/collections?sort=volume&limit=3")
		gql := a.graph(`{ collections(sort: VOLUME, first: 3) { edges { node { `+collectionFields+` } } pageInfo { endCursor } } }`, nil)
		sameFields(t, "collections by volume", restPage["items"], nodes(gql["collections"]))
		// One list, one cursor: REST's next-page cursor is GraphQL's end cursor.
		if restPage["cursor"] != dig(gql, "collections", "pageInfo", "endCursor") {
			t.Fatalf("REST cursor %v, GraphQL endCursor %v", restPage["cursor"], dig(gql, "collections", "pageInfo", "endCursor"))
		}
		next := a.rest("/api/nft/collections?sort=volume&limit=3&cursor=" + url.QueryEscape(restPage["cursor"].(string)))
		gqlNext := a.graph(`query($after: String) { collections(sort: VOLUME, first: 3, after: $after) { edges { node { `+collectionFields+` } } } }`,
			map[string]any{"after": restPage["cursor"]})
		sameFields(t, "the next page of collections", next["items"], nodes(gqlNext["collections"]))

		// One collection by slug.
		slug := restPage["items"].([]any)[0].(map[string]any)["slug"].(string)
		col := a.rest("/api/nft/slug/" + slug)
		sameFields(t, "collection "+slug, col, a.graph(`query($slug: String) { collection(slug: $slug) { `+collectionFields+` } }`, map[string]any{"slug": slug})["collection"])

		// Its listed NFTs with two trait values, cheapest first.
		id := col["id"].(string)
		nftsREST := a.rest("/api/nft/collection/" + id + "/nfts?listed=true&sort=price_asc&limit=6")
		nftsGraph := a.graph(`query($id: ID) { collection(id: $id) { nfts(filter: {listed: true}, sort: PRICE_ASC, first: 6) { edges { node { `+nftFields+` } } } } }`,
			map[string]any{"id": id})
		items := nftsREST["items"].([]any)
		if len(items) == 0 {
			t.Fatal("no listed NFTs to compare")
		}
		sameFields(t, "listed NFTs by price", items, nodes(dig(nftsGraph, "collection", "nfts")))

		// One NFT's detail and history.
		cid := items[0].(map[string]any)["contractId"].(string)
		detail := a.rest("/api/nft/token/" + url.PathEscape(cid))
		nft := a.graph(`query($cid: ID!) { nft(contractId: $cid) { `+nftFields+` history(first: 100) { edges { node { updateId logIndex kind at from to price currency } } } } }`,
			map[string]any{"cid": cid})["nft"].(map[string]any)
		nft["history"] = nodes(nft["history"])
		for _, e := range nft["history"].([]any) {
			// GraphQL spells a kind as its enum value, REST in lowercase.
			e.(map[string]any)["kind"] = strings.ToLower(e.(map[string]any)["kind"].(string))
		}
		if len(nft["history"].([]any)) < 2 {
			t.Fatalf("a listed NFT's history: %v", nft["history"])
		}
		sameFields(t, "NFT "+cid, detail, nft)
	})
}

func TestFrontDoors_AWalletNeedsItsPartysTokenOnBothDoors(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a, _ := newFrontDoors(t, b)
		alice, aliceTok := a.signedIn("alice")
		bob, bobTok := a.signedIn("bob")
		a.post("/api/wallet/nft-preapproval/prepare", aliceTok, map[string]any{}) // exercises the token
		q := `query($p: ID!) { wallet(partyId: $p) { partyId balances { instrument amount locked holdings }
			preapprovals { cid kind active } rewards { balance instrument history(first: 5) { edges { cursor } pageInfo { hasNextPage } } } } }`
		data, errs := a.graphAs(aliceTok, q, map[string]any{"p": alice})
		if len(errs) > 0 {
			t.Fatalf("alice's own wallet: %v", errs)
		}
		w := data["wallet"].(map[string]any)
		// Field for field what REST's balance shows.
		_, raw := a.send("GET", "/api/wallet/balance/"+alice, aliceTok, nil)
		var bal map[string]any
		json.Unmarshal(raw, &bal)
		sameFields(t, "alice's balances", bal["balances"], w["balances"])

		for _, c := range []struct {
			name, tok, party, want string
		}{
			{"no token", "", alice, "unauthenticated"},
			{"another party's token", bobTok, alice, "party_mismatch"},
			{"a forged token", aliceTok + "x", alice, "invalid_token"},
		} {
			if _, errs := a.graphAs(c.tok, q, map[string]any{"p": c.party}); len(errs) == 0 || errs[0] != c.want {
				t.Errorf("%s: errors %v, want %s", c.name, errs, c.want)
			}
		}
		// Public reads need no token, and a bad token does not spoil them.
		if _, errs := a.graphAs("", `{ collections(first: 1) { edges { cursor } } }`, nil); len(errs) > 0 {
			t.Fatalf("public read: %v", errs)
		}
		// After logout the token is refused here too.
		a.post("/api/auth/logout", bobTok, map[string]any{})
		if _, errs := a.graphAs(bobTok, q, map[string]any{"p": bob}); len(errs) == 0 || errs[0] != "token_revoked" {
			t.Fatalf("after logout: %v", errs)
		}
	})
}

func TestFrontDoors_GraphQLQueriesShareRESTsReadBudget(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a, _ := newFrontDoorsLimited(t, b, 5)
		query := func() (*http.Response, []string) {
			res, err := http.Post(a.url+"/graphql", "application/json", bytes.NewReader([]byte(`{"query":"{ collections(first: 1) { edges { cursor } } }"}`)))
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var out struct {
				Errors []struct{ Extensions struct{ Code string } }
			}
			json.NewDecoder(res.Body).Decode(&out)
			var codes []string
			for _, e := range out.Errors {
				codes = append(codes, e.Extensions.Code)
			}
			return res, codes
		}
		for range 3 {
			a.rest("/api/nft/collections")
		}
		for i := range 2 {
			res, codes := query()
			if res.StatusCode != http.StatusOK || len(codes) > 0 || res.Header.Get("RateLimit-Remaining") != strconv.Itoa(1-i) {
				t.Fatalf("query %d: %d %v remaining %q", i, res.StatusCode, codes, res.Header.Get("RateLimit-Remaining"))
			}
		}
		res, codes := query()
		if res.StatusCode != http.StatusTooManyRequests || len(codes) != 1 || codes[0] != "rate_limited" || res.Header.Get("Retry-After") == "" {
			t.Fatalf("the sixth read, a query: %d %v Retry-After %q", res.StatusCode, codes, res.Header.Get("Retry-After"))
		}
		r2, err := http.Get(a.url + "/api/nft/collections")
		if err != nil {
			t.Fatal(err)
		}
		r2.Body.Close()
		if r2.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("REST after the budget went to queries: %d", r2.StatusCode)
		}
		// The GraphiQL page is not a read of the API.
		if page, err := http.Get(a.url + "/graphql"); err != nil || page.StatusCode != http.StatusOK {
			t.Fatalf("GraphiQL page: %v %v", page, err)
		}
	})
}

func TestFrontDoors_PoolsAreTheSameOnBothDoors(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a, _ := newFrontDoors(t, b)
		pools := a.rest("/api/swap/pools")["items"].([]any)
		if len(pools) == 0 {
			t.Fatal("the demo has no pool")
		}
		id := pools[0].(map[string]any)["poolId"].(string)
		gql := a.graph(`query($id: ID!) { pool(id: $id) { poolId base quote feeBps oraclePrice priceAt
			aggregates { tvl lpCount accruedFees { instrument amount } depthWeightedSpreadBps }
			outcomes(first: 3) { edges { node { intentCid updateId logIndex taker poolId sold { instrument amount } received { instrument amount } fee at } } pageInfo { endCursor } } } }`,
			map[string]any{"id": id})["pool"].(map[string]any)
		restPool := a.rest("/api/swap/pool/" + id)
		for k, v := range restPool {
			sameFields(t, "pool "+k, v, gql[k])
		}
		agg := a.rest("/api/swap/pool/" + id + "/aggregates")
		g := gql["aggregates"].(map[string]any)
		fees := map[string]any{}
		for _, f := range g["accruedFees"].([]any) {
			fees[f.(map[string]any)["instrument"].(string)] = f.(map[string]any)["amount"]
		}
		sameFields(t, "accrued fees", agg["accruedFees"], fees)
		for _, k := range []string{"tvl", "lpCount", "depthWeightedSpreadBps"} {
			sameFields(t, "aggregate "+k, agg[k], g[k])
		}
		outcomes := a.rest("/api/swap/pool/" + id + "/outcomes?limit=3")
		if len(outcomes["items"].([]any)) == 0 {
			t.Fatal("the demo pool has no outcomes to compare")
		}
		// Anonymous, neither door names who swapped: REST leaves the key out, GraphQL answers null.
		gnodes := nodes(gql["outcomes"])
		for _, n := range gnodes {
			if v, ok := n.(map[string]any)["taker"]; !ok || v != nil {
				t.Fatalf("GraphQL named an anonymous caller a taker: %v", n)
			}
			delete(n.(map[string]any), "taker")
		}
		sameFields(t, "outcomes", outcomes["items"], gnodes)
		if outcomes["cursor"] != dig(gql, "outcomes", "pageInfo", "endCursor") && outcomes["cursor"] != nil {
			t.Fatalf("REST cursor %v, GraphQL endCursor %v", outcomes["cursor"], dig(gql, "outcomes", "pageInfo", "endCursor"))
		}
		// A taker's history and intents need the taker's token.
		alice, tok := a.signedIn("alice")
		q := `query($p: ID!) { swapHistory(taker: $p) { edges { cursor } } intents(taker: $p) { edges { cursor } } }`
		if _, errs := a.graphAs(tok, q, map[string]any{"p": alice}); len(errs) > 0 {
			t.Fatalf("own history: %v", errs)
		}
		if _, errs := a.graphAs("", q, map[string]any{"p": alice}); len(errs) == 0 || errs[0] != "unauthenticated" {
			t.Fatalf("no token: %v", errs)
		}
		_, bobTok := a.signedIn("bob")
		if _, errs := a.graphAs(bobTok, q, map[string]any{"p": alice}); len(errs) == 0 || errs[0] != "party_mismatch" {
			t.Fatalf("another party's: %v", errs)
		}
	})
}
