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
	"testing"

	"marketd/graph"
	"marketd/rest"
	"marketd/store"
	"marketd/store/storetest"
)

// frontDoorsAPI is REST and GraphQL mounted as `marketd serve` mounts them, over one store
// with a small demo market.
type frontDoorsAPI struct {
	t   *testing.T
	url string
}

func newFrontDoors(t *testing.T, b storetest.Backend) (*frontDoorsAPI, *store.Store) {
	t.Helper()
	s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
	if _, err := s.SeedDemo(context.Background(), store.DemoOptions{NFTs: 240, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	api, err := rest.New(s, rest.Config{PublicURL: "http://127.0.0.1", Dev: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(frontDoors(api, graph.NewHandler(s, graph.Options{Logger: quiet})))
	t.Cleanup(hs.Close)
	return &frontDoorsAPI{t: t, url: hs.URL}, s
}

// rest GETs path and decodes its JSON body.
func (a *frontDoorsAPI) rest(path string) map[string]any {
	a.t.Helper()
	res, err := http.Get(a.url + path)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusOK {
		a.t.Fatalf("GET %s: %d %v %v", path, res.StatusCode, out, err)
	}
	return out
}

// graph posts a query and returns its data.
func (a *frontDoorsAPI) graph(query string, vars map[string]any) map[string]any {
	a.t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	res, err := http.Post(a.url+"/graphql", "application/json", bytes.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out struct {
		Data   map[string]any
		Errors []any
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Errors) > 0 {
		a.t.Fatalf("graphql: %s %v", raw, err)
	}
	return out.Data
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

const collectionFields = `id slug name description image creator currency royaltyBps supply minted burned
	floorPrice listedCount owners volume createdAt
	phases { name price start end perPartyLimit supply minted allowList active }`

const nftFields = `contractId collectionId serial name image traits { type value } owner
	listing { cid seller price currency expiresAt }`

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
		nft := a.graph(`query($cid: ID!) { nft(contractId: $cid) { `+nftFields+` history(first: 100) { edges { node { updateId kind at from to price currency } } } } }`,
			map[string]any{"cid": cid})["nft"].(map[string]any)
		nft["history"] = nodes(nft["history"])
		if len(nft["history"].([]any)) < 2 {
			t.Fatalf("a listed NFT's history: %v", nft["history"])
		}
		sameFields(t, "NFT "+cid, detail, nft)
	})
}
