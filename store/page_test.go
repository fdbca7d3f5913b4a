package store_test

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"marketd/store"
	"marketd/store/storetest"
)

// idPage is a page of any list, its items named by their ids.
type idPage struct {
	ids, cursors []string
	cursor       string
}

func idsOf[T any](id func(T) string) func(store.Page[T], error) (idPage, error) {
	return func(p store.Page[T], err error) (idPage, error) {
		out := idPage{cursors: p.ItemCursors, cursor: p.Cursor}
		for _, it := range p.Items {
			out.ids = append(out.ids, id(it))
		}
		return out, err
	}
}

// readAll pages through a list with limit n in one direction and returns its pages in the
// order read.
func readAll(t *testing.T, read func(store.PageRequest) (idPage, error), n int, backward bool) []idPage {
	t.Helper()
	var pages []idPage
	for r := (store.PageRequest{Limit: n, Backward: backward, ItemCursors: true}); ; {
		p, err := read(r)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.ids) != len(p.cursors) || len(p.ids) > n {
			t.Fatalf("a page of %d items with %d cursors, limit %d", len(p.ids), len(p.cursors), n)
		}
		pages = append(pages, p)
		if p.cursor == "" {
			return pages
		}
		if len(pages) > 1000 {
			t.Fatal("the list does not end")
		}
		r.Cursor = p.cursor
	}
}

func flatten(pages []idPage, reverse bool) (ids, cursors []string) {
	if reverse {
		pages = slices.Clone(pages)
		slices.Reverse(pages)
	}
	for _, p := range pages {
		ids = append(ids, p.ids...)
		cursors = append(cursors, p.cursors...)
	}
	return ids, cursors
}

func TestPageBackward_ReadsEveryListInReverseWithTheForwardCursors(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
		sum, err := s.SeedDemo(ctx, store.DemoOptions{NFTs: 120, Seed: 11})
		if err != nil {
			t.Fatal(err)
		}
		if len(sum.Pools) == 0 || sum.Swaps == 0 {
			t.Fatalf("the demo has no swaps: %+v", sum)
		}
		col, pool := sum.Collections[0], sum.Pools[0]
		// An NFT that traded has a history of several events.
		sold, err := s.NFTs(ctx, col, store.NFTFilter{}, store.SortSerial, store.PageRequest{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		nft := sold.Items[0].Ref()
		for _, it := range sold.Items {
			h, err := s.NFTHistory(ctx, it.Ref(), store.PageRequest{Limit: 3})
			if err != nil {
				t.Fatal(err)
			}
			if len(h.Items) == 3 {
				nft = it.Ref()
				break
			}
		}
		collection := func(c store.Collection) string { return c.ID }
		serial := func(v store.NFTView) string { return strconv.Itoa(v.Serial) }
		nfts := func(f store.NFTFilter, sort store.NFTSort) func(store.PageRequest) (idPage, error) {
			return func(r store.PageRequest) (idPage, error) {
				return idsOf(serial)(s.NFTs(ctx, col, f, sort, r))
			}
		}
		cases := []struct {
			name string
			n    int
			read func(store.PageRequest) (idPage, error)
		}{
			{"collections by volume", 2, func(r store.PageRequest) (idPage, error) {
				return idsOf(collection)(s.Collections(ctx, store.SortVolume, r))
			}},
			{"collections by floor", 2, func(r store.PageRequest) (idPage, error) {
				return idsOf(collection)(s.Collections(ctx, store.SortFloor, r))
			}},
			{"collections newest first", 2, func(r store.PageRequest) (idPage, error) {
				return idsOf(collection)(s.Collections(ctx, store.SortNewest, r))
			}},
			{"nfts by serial", 7, nfts(store.NFTFilter{}, store.SortSerial)},
			{"nfts by price ascending, two runs", 7, nfts(store.NFTFilter{}, store.SortPriceAsc)},
			{"nfts by price descending, two runs", 6, nfts(store.NFTFilter{}, store.SortPriceDesc)},
			{"listed nfts by price", 2, nfts(store.NFTFilter{Listed: true}, store.SortPriceAsc)},
			{"nft history", 1, func(r store.PageRequest) (idPage, error) {
				return idsOf(func(e store.NFTEvent) string { return e.UpdateID + e.Kind })(s.NFTHistory(ctx, nft, r))
			}},
			{"pool lp quotes", 2, func(r store.PageRequest) (idPage, error) {
				return idsOf(func(q store.LPQuote) string { return q.QuoteID })(s.PoolLPQuotes(ctx, pool, r))
			}},
			{"pool swap history", 1, func(r store.PageRequest) (idPage, error) {
				return idsOf(func(v store.IntentView) string { return v.IntentCID })(s.SwapHistory(ctx, store.SwapHistoryFilter{PoolID: pool}, r))
			}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				forward := readAll(t, c.read, c.n, false)
				backward := readAll(t, c.read, c.n, true)
				fids, fcursors := flatten(forward, false)
				bids, bcursors := flatten(backward, true)
				if len(fids) <= c.n {
					t.Fatalf("only %d items: the case pages nothing", len(fids))
				}
				if !slices.Equal(fids, bids) || !slices.Equal(fcursors, bcursors) {
					t.Fatalf("forward %v\nbackward, put back in order, %v", fids, bids)
				}
				// Backward from each forward page's first item gives the page before it, exactly.
				for i := len(forward) - 1; i > 0; i-- {
					p, err := c.read(store.PageRequest{Limit: c.n, Backward: true, ItemCursors: true, Cursor: forward[i].cursors[0]})
					if err != nil {
						t.Fatal(err)
					}
					want := forward[i-1]
					if !slices.Equal(p.ids, want.ids) || !slices.Equal(p.cursors, want.cursors) {
						t.Fatalf("before page %d: %v, want page %d %v", i, p.ids, i-1, want.ids)
					}
					if (p.cursor == "") != (i-1 == 0) {
						t.Fatalf("before page %d: continuing cursor %q, but page %d is the first: %v", i, p.cursor, i-1, i-1 == 0)
					}
				}
				// A backward page's cursors read forwards: after its first item comes the rest of the list.
				last := backward[0]
				p, err := c.read(store.PageRequest{Limit: c.n, ItemCursors: true, Cursor: last.cursors[0]})
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(p.ids, last.ids[1:]) || p.cursor != "" {
					t.Fatalf("after the last page's first item: %v (cursor %q), want %v and the end", p.ids, p.cursor, last.ids[1:])
				}
			})
		}
	})
}
