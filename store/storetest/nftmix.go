package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"marketd/store"
)

// BenchNFTs is the demo market's size for the NFT benchmarks: MARKETD_BENCH_NFTS, else
// 100,000.
func BenchNFTs(b testing.TB) int {
	v := os.Getenv("MARKETD_BENCH_NFTS")
	if v == "" {
		return 100_000
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		b.Fatalf("MARKETD_BENCH_NFTS=%q: %v", v, err)
	}
	return n
}

// NFTPageRequest is one request for a page of a collection's NFTs.
type NFTPageRequest struct {
	Collection store.Collection
	Filter     store.NFTFilter
	Sort       store.NFTSort
	Page       store.PageRequest
}

// NFTPageMix draws n distinct page requests of the kind a dApp's shoppers send, from the
// store's own collections and the traits its NFTs carry: per request a collection, 1 to 3
// trait types with 1 or 2 values each, often listed only, sometimes a price floor, one of the
// three sorts. The same seed draws the same mix.
func NFTPageMix(ctx context.Context, s *store.Store, n int, seed uint64) ([]NFTPageRequest, error) {
	type traitSet struct {
		col    store.Collection
		values map[string][]string // type -> values, in the order first seen
		prices []string            // listing prices seen
	}
	var sets []traitSet
	cols, err := s.Collections(ctx, store.SortNewest, store.PageRequest{Limit: store.MaxPageSize})
	if err != nil {
		return nil, err
	}
	for _, c := range cols.Items {
		ts := traitSet{col: c, values: map[string][]string{}}
		// The traits of a few hundred NFTs name nearly every value a collection has.
		r := store.PageRequest{Limit: store.MaxPageSize}
		for range 5 {
			page, err := s.NFTs(ctx, c.ID, store.NFTFilter{}, store.SortSerial, r)
			if err != nil {
				return nil, err
			}
			for _, it := range page.Items {
				for _, t := range it.Traits {
					if !slices.Contains(ts.values[t.Type], t.Value) {
						ts.values[t.Type] = append(ts.values[t.Type], t.Value)
					}
				}
				if it.Listing != nil {
					ts.prices = append(ts.prices, it.Listing.Price.String())
				}
			}
			if page.Cursor == "" {
				break
			}
			r.Cursor = page.Cursor
		}
		if len(ts.values) > 0 {
			sets = append(sets, ts)
		}
	}
	if len(sets) == 0 {
		return nil, fmt.Errorf("no collection has NFTs with traits")
	}
	rng := rand.New(rand.NewPCG(seed, 0x6d6978))
	seen := map[string]bool{}
	var out []NFTPageRequest
	for tries := 0; len(out) < n; tries++ {
		if tries > 100*n {
			return out, fmt.Errorf("only %d distinct requests in %d tries", len(out), tries)
		}
		ts := sets[rng.IntN(len(sets))]
		types := make([]string, 0, len(ts.values))
		for typ := range ts.values {
			types = append(types, typ)
		}
		slices.Sort(types)
		rng.Shuffle(len(types), func(a, b int) { types[a], types[b] = types[b], types[a] })
		f := store.NFTFilter{Traits: map[string][]string{}}
		for _, typ := range types[:min(len(types), 1+rng.IntN(3))] {
			values := slices.Clone(ts.values[typ])
			rng.Shuffle(len(values), func(a, b int) { values[a], values[b] = values[b], values[a] })
			f.Traits[typ] = values[:min(len(values), 1+rng.IntN(2))]
		}
		f.Listed = rng.IntN(2) == 0
		if len(ts.prices) > 0 && rng.IntN(3) == 0 {
			f.MinPrice = ts.prices[rng.IntN(len(ts.prices))]
		}
		req := NFTPageRequest{Collection: ts.col, Filter: f, Sort: []store.NFTSort{store.SortSerial, store.SortPriceAsc, store.SortPriceDesc}[rng.IntN(3)],
			Page: store.PageRequest{Limit: store.DefaultPageSize}}
		key := fmt.Sprintf("%s %v %v %s %s %s", ts.col.ID, f.Traits, f.Listed, f.MinPrice, req.Sort, "")
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, req)
	}
	return out, nil
}

// NFTPageQuery asks for a page of a collection's NFTs as a dApp's grid shows it: the NFT's
// fields, its traits, its listing and its best offer. NFTPageRequest.GraphQLBody sends it.
const NFTPageQuery = `query($id: ID!, $f: NFTFilter, $s: NFTSort) { collection(id: $id) { nfts(filter: $f, sort: $s, first: 20) { edges { node { contractId serial name image owner traits { type value } listing { cid price currency expiresAt } bestOffer { price kind } } } pageInfo { hasNextPage endCursor } } } }`

// RESTPath is the request's page as REST's path and query, 20 NFTs a page.
func (r NFTPageRequest) RESTPath() string {
	q := url.Values{"sort": {string(r.Sort)}, "limit": {strconv.Itoa(store.DefaultPageSize)}}
	for _, typ := range slices.Sorted(maps.Keys(r.Filter.Traits)) {
		for _, v := range r.Filter.Traits[typ] {
			q.Add("trait", typ+":"+v)
		}
	}
	if r.Filter.Listed {
		q.Set("listed", "true")
	}
	if r.Filter.MinPrice != "" {
		q.Set("minPrice", r.Filter.MinPrice)
	}
	return "/api/nft/collection/" + r.Collection.ID + "/nfts?" + q.Encode()
}

// NFTPageShape is a way a client writes the query for a page of the mix: the query, using
// the mix's variables $id, $f and $s, and the variables it adds.
type NFTPageShape struct {
	Name  string
	Query string
	Vars  map[string]any
}

// NFTPageShapes are the ways a dashboard asks for the mix's pages: the mix's own query (grid),
// the collection's header with the page written out (plain), the same as Apollo Client sends
// it (__typename and id on every object), and through fragments with the page size a variable;
// each asks for every NFT's best offer, as REST's page answers it.
var NFTPageShapes = []NFTPageShape{
	{Name: "grid", Query: NFTPageQuery},
	{Name: "plain", Query: `query($id: ID!, $f: NFTFilter, $s: NFTSort) { collection(id: $id) { id name floorPrice nfts(filter: $f, sort: $s, first: 20) { totalCount edges { cursor node { id contractId serial name image owner traits { type value } listing { cid seller price currency expiresAt } bestOffer { cid price kind } } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } } }`},
	{Name: "apollo", Query: `query NFTGrid($id: ID!, $f: NFTFilter, $s: NFTSort) { collection(id: $id) { __typename id name floorPrice listedCount nfts(filter: $f, sort: $s, first: 20) { __typename totalCount edges { __typename cursor node { __typename id contractId serial name image owner traits { __typename type value } listing { __typename cid seller price currency expiresAt } bestOffer { __typename cid price kind } } } pageInfo { __typename hasNextPage endCursor } } } }`},
	{Name: "fragments", Query: `query NFTGrid($id: ID!, $f: NFTFilter, $s: NFTSort, $n: Int) { collection(id: $id) { ...Header nfts(filter: $f, sort: $s, first: $n) { edges { node { ...Card } } pageInfo { ...Page } } } }
fragment Header on Collection { id collectionId name slug floorPrice listedCount owners }
fragment Card on NFT { id serial name image owner traits { type value } listing { ...Price } bestOffer { price kind } }
fragment Price on Listing { cid price currency expiresAt }
fragment Page on PageInfo { hasNextPage endCursor }`, Vars: map[string]any{"n": 20}},
}

// GraphQLBody is the same page as RESTPath asked as NFTPageQuery, a POST body.
func (r NFTPageRequest) GraphQLBody() []byte { return r.GraphQLBodyAs(NFTPageShapes[0]) }

// GraphQLBodyAs is the same page as RESTPath asked in the shape's query, a POST body.
func (r NFTPageRequest) GraphQLBodyAs(sh NFTPageShape) []byte {
	type traitFilter struct {
		Type   string   `json:"type"`
		Values []string `json:"values"`
	}
	f := map[string]any{}
	var traits []traitFilter
	for _, typ := range slices.Sorted(maps.Keys(r.Filter.Traits)) {
		traits = append(traits, traitFilter{typ, r.Filter.Traits[typ]})
	}
	f["traits"] = traits
	if r.Filter.Listed {
		f["listed"] = true
	}
	if r.Filter.MinPrice != "" {
		f["minPrice"] = r.Filter.MinPrice
	}
	vars := map[string]any{"id": r.Collection.ID, "f": f, "s": strings.ToUpper(string(r.Sort))}
	maps.Copy(vars, sh.Vars)
	body, _ := json.Marshal(map[string]any{"query": sh.Query, "variables": vars})
	return body
}
