package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// nftPageQueries are queries of the fast path's shape (and a few just outside it), each
// with the variables $id, $f and $s of storetest.NFTPageQuery.
var nftPageQueries = []string{
	storetest.NFTPageQuery,
	`query($id: ID!, $f: NFTFilter, $s: NFTSort) { collection(id: $id) { __typename collectionId slug name nfts(filter: $f, sort: $s, first: 7) { __typename totalCount edges { __typename cursor node { __typename id contractId collectionId serial name image owner traits { __typename type value } listing { __typename cid seller price currency expiresAt } } } pageInfo { __typename hasNextPage hasPreviousPage startCursor endCursor } } } }`,
	`query($id: ID!, $f: NFTFilter, $s: NFTSort) { c: collection(id: $id) { n: name all: nfts(sort: $s, first: 3) { totalCount edges { node { serial } } } page: nfts(filter: $f, sort: $s, last: 5) { edges { c: cursor n: node { l: listing { p: price } t: traits { v: value } } } info: pageInfo { hasPreviousPage startCursor } } } }`,
	`query($id: ID!, $f: NFTFilter, $s: NFTSort) { collection(id: $id) { nfts(filter: $f, sort: $s, first: 101) { edges { cursor } } } }`,                              // an error: the executor's
	`query($id: ID!, $f: NFTFilter, $s: NFTSort) { collection(id: $id) { floorPrice nfts(filter: $f, sort: $s, first: 4) { edges { node { serial owner } } } } }`,      // floorPrice is outside the shape
	`query($id: ID!, $f: NFTFilter, $s: NFTSort) { collection(id: $id) { nfts(filter: $f, sort: $s) { edges { node { ...N } } } } } fragment N on NFT { serial name }`, // a fragment
	`query($id: ID!, $f: NFTFilter, $s: NFTSort) { collection(id: $id) { nfts(filter: $f, sort: $s, first: 2) { edges { node { serial @include(if: true) } } } } }`,    // a directive
}

// TestNFTPageFastPath_AnswersByteForByteAsTheExecutor asks random pages of the demo market
// (filters, sorts, cursors both ways, an unknown collection, bad arguments) through a handler
// with the NFT page fast path and one without it, as the same requests, and wants the same
// status and the same bytes; and that the fast path answered the queries of its shape.
func TestNFTPageFastPath_AnswersByteForByteAsTheExecutor(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(storetest.NewClock(time.Now())))
		if _, err := s.SeedDemo(ctx, store.DemoOptions{NFTs: 600, Seed: 3}); err != nil {
			t.Fatal(err)
		}
		if err := s.AwaitNFTIndex(ctx); err != nil {
			t.Fatal(err)
		}
		mix, err := storetest.NFTPageMix(ctx, s, 60, 7)
		if err != nil {
			t.Fatal(err)
		}
		quiet := slog.New(slog.DiscardHandler)
		// Kept answers are off in both, so each request runs.
		var answered atomic.Int64
		fast := NewHandler(s, Options{Logger: quiet, RunEveryQuery: true, fastAnswers: &answered})
		exec := NewHandler(s, Options{Logger: quiet, RunEveryQuery: true, NoFastPath: true})
		ask := func(h http.Handler, body []byte) (int, []byte) {
			req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			return w.Code, w.Body.Bytes()
		}
		rng := rand.New(rand.NewPCG(7, 7))
		asked, cursors := 0, 0
		for _, r := range mix {
			var env map[string]any
			if err := json.Unmarshal(r.GraphQLBody(), &env); err != nil {
				t.Fatal(err)
			}
			vars := env["variables"].(map[string]any)
			switch rng.IntN(8) {
			case 0:
				vars["id"] = "col_00000000000000000000" // no such collection: null
			case 1:
				vars["f"] = map[string]any{"minPrice": "not a price"} // an error
			}
			for _, q := range nftPageQueries {
				body, _ := json.Marshal(map[string]any{"query": q, "variables": vars})
				codeF, gotF := ask(fast, body)
				codeE, gotE := ask(exec, body)
				if codeF != codeE || !bytes.Equal(gotF, gotE) {
					t.Fatalf("query %s with %v:\nfast path %d %s\nexecutor  %d %s", q, vars, codeF, gotF, codeE, gotE)
				}
				asked++
				// Follow the page's cursor forwards with the first query, as a client pages.
				if q == storetest.NFTPageQuery && bytes.Contains(gotF, []byte(`"hasNextPage":true`)) {
					var page struct {
						Data struct {
							Collection struct {
								Nfts struct {
									PageInfo struct{ EndCursor string }
								}
							}
						}
					}
					json.Unmarshal(gotF, &page)
					next := strings.Replace(q, "first: 20", fmt.Sprintf("first: 20, after: %q", page.Data.Collection.Nfts.PageInfo.EndCursor), 1)
					body, _ := json.Marshal(map[string]any{"query": next, "variables": vars})
					codeF, gotF := ask(fast, body)
					codeE, gotE := ask(exec, body)
					if codeF != codeE || !bytes.Equal(gotF, gotE) {
						t.Fatalf("next page %s:\nfast path %d %s\nexecutor  %d %s", next, codeF, gotF, codeE, gotE)
					}
					cursors++
				}
			}
		}
		// Three of the queries are of the shape; the fast path answers them unless their
		// arguments are refused (then the executor reports the error).
		if answered.Load() < int64(len(mix)) || cursors == 0 {
			t.Fatalf("the fast path answered %d of %d requests (%d next pages): it should answer most", answered.Load(), asked, cursors)
		}
		t.Logf("%d requests compared, %d answered by the fast path, %d next pages", asked, answered.Load(), cursors)
	})
}
