package rest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// benchLatencies collects each request's latency across RunParallel goroutines.
type benchLatencies struct {
	mu sync.Mutex
	ds []time.Duration
}

func (l *benchLatencies) add(ds []time.Duration) {
	l.mu.Lock()
	l.ds = append(l.ds, ds...)
	l.mu.Unlock()
}

// report adds the p99 latency to the benchmark's metrics.
func (l *benchLatencies) report(b *testing.B) {
	if len(l.ds) == 0 {
		return
	}
	slices.Sort(l.ds)
	b.ReportMetric(float64(l.ds[len(l.ds)*99/100].Microseconds())/1000, "p99-ms")
}

// benchGets runs GET path from benchClients clients and reports its rate in unit and the p99.
func benchGets(b *testing.B, a *benchAPI, path, unit string) {
	var lat benchLatencies
	b.SetParallelism(benchClients / 2)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var ds []time.Duration
		for pb.Next() {
			start := time.Now()
			a.call(b, "GET", path, "", nil, nil)
			ds = append(ds, time.Since(start))
		}
		lat.add(ds)
	})
	perSecond(b, unit)
	lat.report(b)
}

// BenchmarkNFTPage is a collection's NFT page under load: 20 items, two trait filters,
// sorted by price ascending, on the 100,000-NFT demo market; at the first page and at a page
// 2,000 items deep (reached by following cursors), as the service answers them (from its page
// cache while nothing trades) and with the cache off, next to a bare net/http handler in the
// same run. Seeding takes about half a minute on PostgreSQL.
func BenchmarkNFTPage(b *testing.B) {
	eachBackend(b, func(b *testing.B, be storetest.Backend) {
		a := newBenchAPI(b, be)
		ctx := context.Background()
		if _, err := a.store.SeedDemo(ctx, store.DemoOptions{NFTs: 100_000, Seed: 1}); err != nil {
			b.Fatal(err)
		}
		col, err := a.store.CollectionBySlug(ctx, "ledger-apes")
		if err != nil {
			b.Fatal(err)
		}
		first := "/api/nft/collection/" + col.ID + "/nfts?trait=Background:Blue&trait=Fur:Brown&sort=price_asc&limit=20"
		deep := first
		for range 100 { // 100 pages of 20: the page after 2,000 items
			var page struct{ Cursor *string }
			a.call(b, "GET", deep, "", nil, &page)
			if page.Cursor == nil {
				b.Fatal("fewer than 2,000 NFTs match the filters")
			}
			deep = first + "&cursor=" + url.QueryEscape(*page.Cursor)
		}
		b.Run("first", func(b *testing.B) { benchGets(b, a, first, "pages/s") })
		b.Run("deep2000", func(b *testing.B) { benchGets(b, a, deep, "pages/s") })
		// The same pages from instances on the same database whose page cache is off, which is
		// what a page costs when the collection keeps trading: from the NFT index, and by SQL.
		for _, c := range []struct {
			name string
			off  bool
		}{{"uncached", false}, {"uncached-sql", true}} {
			cfg := a.store.Config()
			cfg.PageCacheTTL, cfg.NFTIndexOff = -1, c.off
			uncached := be.Reopen(b, cfg)
			if err := uncached.AwaitNFTIndex(ctx); err != nil {
				b.Fatal(err)
			}
			u := benchAPIOn(b, uncached)
			b.Run(c.name+"-first", func(b *testing.B) { benchGets(b, u, first, "pages/s") })
			b.Run(c.name+"-deep2000", func(b *testing.B) { benchGets(b, u, deep, "pages/s") })
		}
		b.Run("bare", func(b *testing.B) {
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"items":[],"cursor":null}` + "\n"))
			}))
			defer hs.Close()
			benchGets(b, &benchAPI{url: hs.URL, client: benchClient()}, "/", "pages/s")
		})
	})
}
