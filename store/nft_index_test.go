package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// randomNFTFilter draws a filter over the world's traits: 0 to 3 trait types with 1 or 2
// values each (now and then one no NFT has), listed or not, price bounds, an owner.
func (w *nftWorld) randomNFTFilter(rng *rand.Rand, col *store.Collection) store.NFTFilter {
	f := store.NFTFilter{Traits: map[string][]string{}}
	types := []string{"Hat", "Eyes", "Aura"}
	rng.Shuffle(len(types), func(a, b int) { types[a], types[b] = types[b], types[a] })
	for _, typ := range types[:rng.IntN(4)] {
		values := slices.Clone(worldTraits[typ])
		if rng.IntN(8) == 0 {
			values = append(values, "Nobody")
		}
		rng.Shuffle(len(values), func(a, b int) { values[a], values[b] = values[b], values[a] })
		f.Traits[typ] = values[:min(len(values), 1+rng.IntN(2))]
	}
	f.Listed = rng.IntN(3) == 0
	price := func() string {
		return unitsString(randomUnits(rng, 30*pow10(decimalsOf(col.Currency)), col.Currency), col.Currency)
	}
	if rng.IntN(4) == 0 {
		f.MinPrice = price()
	}
	if rng.IntN(5) == 0 {
		f.MaxPrice = price()
	}
	if rng.IntN(4) == 0 {
		f.Owner = w.traders[rng.IntN(len(w.traders))].ID
	}
	return f
}

// samePages reads a page through the index, by SQL and through the store's public read (the
// page cache over the index), and reports any difference. It returns the reference page.
func samePages(t *testing.T, s *store.Store, what string, col string, f store.NFTFilter, sort store.NFTSort, r store.PageRequest) (store.Page[store.NFTView], bool) {
	t.Helper()
	ctx := context.Background()
	want, err := s.ReferenceNFTs(ctx, col, f, sort, r)
	got, gerr := s.IndexedNFTs(ctx, col, f, sort, r)
	pub, perr := s.NFTs(ctx, col, f, sort, r)
	if store.ErrorCode(err) != store.ErrorCode(gerr) || store.ErrorCode(err) != store.ErrorCode(perr) {
		t.Errorf("%s: errors differ: SQL %v, index %v, public %v", what, err, gerr, perr)
		return want, false
	}
	if err != nil {
		return want, false
	}
	ok := true
	for _, p := range []struct {
		name string
		page store.Page[store.NFTView]
	}{{"index", got}, {"public read", pub}} {
		if !reflect.DeepEqual(pageSummary(want), pageSummary(p.page)) {
			t.Errorf("%s: the %s answers\n%s\nSQL answers\n%s", what, p.name, pageSummary(p.page), pageSummary(want))
			ok = false
		}
	}
	return want, ok
}

// pageSummary writes a page out whole: every field of every NFT and the cursors.
func pageSummary(p store.Page[store.NFTView]) string {
	out := fmt.Sprintf("cursor %q, item cursors %q\n", p.Cursor, p.ItemCursors)
	for _, n := range p.Items {
		out += fmt.Sprintf("  #%d %s %s owner=%s traits=%v", n.Serial, n.ContractID, n.Name, n.Owner, n.Traits)
		if l := n.Listing; l != nil {
			out += fmt.Sprintf(" listing=%s %s %s seller=%s", l.CID, l.Price, l.Currency, l.Seller)
			if l.ExpiresAt != nil {
				out += " until " + l.ExpiresAt.Format(time.RFC3339Nano)
			}
		}
		out += "\n"
	}
	return out
}

// checkPages reads a random query's pages forward, then back from where it stopped, through
// the index and by SQL, and compares every answer.
func (w *nftWorld) checkPages(rng *rand.Rand) {
	col := w.cols[rng.IntN(len(w.cols))]
	f := w.randomNFTFilter(rng, col)
	sort := []store.NFTSort{store.SortSerial, store.SortPriceAsc, store.SortPriceDesc}[rng.IntN(3)]
	r := store.PageRequest{Limit: 1 + rng.IntN(7), ItemCursors: rng.IntN(2) == 0, Backward: rng.IntN(4) == 0}
	what := fmt.Sprintf("%s %+v %s", col.Slug, f, sort)
	var cursors []string
	for range 8 {
		page, ok := samePages(w.t, w.s, fmt.Sprintf("%s %+v", what, r), col.ID, f, sort, r)
		if !ok || page.Cursor == "" {
			break
		}
		cursors = append(cursors, page.Cursor)
		r.Cursor = page.Cursor
	}
	if len(cursors) == 0 {
		return
	}
	// Any cursor serves the other way too.
	r.Cursor, r.Backward = cursors[rng.IntN(len(cursors))], !r.Backward
	for range 3 {
		page, ok := samePages(w.t, w.s, fmt.Sprintf("%s %+v (turned)", what, r), col.ID, f, sort, r)
		if !ok || page.Cursor == "" {
			return
		}
		r.Cursor = page.Cursor
	}
}

// nextExpiry is when the first listing still listed expires.
func (w *nftWorld) nextExpiry() (time.Time, bool) {
	var next time.Time
	for _, col := range w.cols {
		page, err := w.s.ReferenceNFTs(context.Background(), col.ID, store.NFTFilter{Listed: true}, store.SortSerial, store.PageRequest{Limit: store.MaxPageSize})
		if err != nil {
			w.t.Fatal(err)
		}
		for _, n := range page.Items {
			if at := n.Listing.ExpiresAt; at != nil && (next.IsZero() || at.Before(next)) {
				next = at.Time
			}
		}
	}
	return next, !next.IsZero()
}

// The NFT index answers every page as the SQL path does: random mints, listings (some
// expiring), cancels, buys, sweeps, transfers, burns and expiries, each followed by random
// queries (filters × sorts × cursors, both directions) read from the index and by SQL.
func TestNFTIndex_AnswersEveryPageAsTheSQLPathDoes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		seed := propertySeed(t)
		w := newNFTWorld(t, b, 4)
		rng := rand.New(rand.NewPCG(seed, 7))
		for range 30 { // a market to read first
			w.step(rng, rng.IntN(len(w.traders)))
		}
		unexercised := func() []string {
			var missing []string
			for _, what := range []string{"mint", "list", "buy"} {
				if w.stats[what] == 0 {
					missing = append(missing, what)
				}
			}
			return missing
		}
		// 80 rounds, and more (up to 400) while a seed has not yet committed a mint, a listing
		// and a buy.
		for round := 0; round < 80 || (round < 400 && len(unexercised()) > 0); round++ {
			w.step(rng, rng.IntN(len(w.traders)))
			switch rng.IntN(6) {
			case 0: // time passes: listings expire for every read before the sweeper runs
				w.clock.Advance(time.Duration(1+rng.IntN(30)) * time.Second)
			case 1: // to the very instant a listing expires
				if at, ok := w.nextExpiry(); ok {
					w.clock.Set(at)
				}
			case 2:
				if _, err := w.s.ExpireListings(context.Background(), 100); err != nil {
					t.Fatal(err)
				}
			}
			// Both ways the index finds a page by price: sorting the few candidates, or
			// walking the price order.
			w.s.SortNFTRunsUnder([]int{-1, 0, 3, 2048}[rng.IntN(4)])
			for range 4 {
				w.checkPages(rng)
			}
			if t.Failed() {
				t.Fatalf("round %d: the index and SQL disagree (%v)", round, w.stats)
			}
		}
		t.Logf("%v", w.stats)
		if missing := unexercised(); len(missing) > 0 {
			t.Errorf("no %v committed in 400 rounds: the run did not exercise the market (%v)", missing, w.stats)
		}
	})
}

// Two instances on one PostgreSQL store: a write through one shows in the other's index
// within 100 ms, by the notification its commit sends, and the index then answers as SQL does.
func TestNFTIndex_AWriteThroughAnotherInstanceShowsWithin100ms(t *testing.T) {
	for _, b := range storetest.Backends() {
		if b.Dialect != store.Postgres {
			continue // SQLite serves one process
		}
		t.Run(b.Name, func(t *testing.T) {
			seed := propertySeed(t)
			w := newNFTWorld(t, b, 3)
			other, err := store.Open(context.Background(), w.s.Config())
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			other.StartNFTIndex()
			rng := rand.New(rand.NewPCG(seed, 11))
			ctx := context.Background()
			// What both instances must agree on: every NFT of each collection, and the listed
			// ones by price.
			reads := func(s *store.Store, read func(*store.Store, context.Context, string, store.NFTFilter, store.NFTSort, store.PageRequest) (store.Page[store.NFTView], error)) string {
				out := ""
				for _, col := range w.cols {
					for _, q := range []struct {
						f    store.NFTFilter
						sort store.NFTSort
					}{{store.NFTFilter{}, store.SortSerial}, {store.NFTFilter{Listed: true}, store.SortPriceAsc}} {
						page, err := read(s, ctx, col.ID, q.f, q.sort, store.PageRequest{Limit: store.MaxPageSize})
						if err != nil {
							t.Fatal(err)
						}
						out += pageSummary(page)
					}
				}
				return out
			}
			var worst time.Duration
			writes := 0
			for step := 0; writes < 15 && step < 400; step++ {
				before := w.statsTotal()
				w.step(rng, rng.IntN(len(w.traders)))
				if w.statsTotal() == before {
					continue
				}
				committed := time.Now()
				want := reads(w.s, (*store.Store).ReferenceNFTs)
				for {
					got := reads(other, (*store.Store).IndexedNFTs)
					if got == want {
						break
					}
					if time.Since(committed) > 100*time.Millisecond {
						t.Fatalf("100 ms after a write, the other instance's index answers\n%s\nSQL answers\n%s", got, want)
					}
					time.Sleep(2 * time.Millisecond)
				}
				worst = max(worst, time.Since(committed))
				writes++
			}
			t.Logf("%d writes, the slowest seen by the other instance after %v (%v)", writes, worst, w.stats)
			if writes < 15 {
				t.Errorf("only %d writes committed in 400 steps", writes)
			}
		})
	}
}

// statsTotal counts the operations committed so far.
func (w *nftWorld) statsTotal() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for what, k := range w.stats {
		if !strings.Contains(what, "refused") {
			n += k
		}
	}
	return n
}
