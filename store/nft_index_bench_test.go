package store_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// BenchmarkNFTIndex reads 20,000 distinct NFT pages of the demo market's own traits (see
// storetest.NFTPageMix) straight from the store, one core, no HTTP: from the NFT index and by
// SQL, the reference. It also reports what the index holds and how long it took to build.
func BenchmarkNFTIndex(b *testing.B) {
	for _, be := range storetest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			ctx := context.Background()
			cfg := storetest.Config(nil)
			cfg.PageCacheTTL = -1
			s := be.Open(b, cfg)
			start := time.Now()
			if _, err := s.SeedDemo(ctx, store.DemoOptions{NFTs: storetest.BenchNFTs(b), Seed: 1}); err != nil {
				b.Fatal(err)
			}
			b.Logf("seeded %d NFTs in %v", storetest.BenchNFTs(b), time.Since(start))
			mix, err := storetest.NFTPageMix(ctx, s, 20_000, 1)
			if err != nil {
				b.Fatal(err)
			}
			// A second instance builds its index from the seeded store, as marketd serve does.
			var before runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			other := be.Reopen(b, s.Config())
			if err := other.AwaitNFTIndex(ctx); err != nil {
				b.Fatal(err)
			}
			var after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&after)
			st := other.NFTIndexStats()
			b.Logf("index: %d NFTs (%d listed) built in %v; heap %.1f MB (%.0f bytes per NFT), bitmaps %d bytes",
				st.NFTs, st.Listed, st.BuiltIn, float64(after.HeapAlloc-before.HeapAlloc)/1e6, float64(after.HeapAlloc-before.HeapAlloc)/float64(st.NFTs), st.BitmapBytes)
			read := func(b *testing.B, page func(context.Context, string, store.NFTFilter, store.NFTSort, store.PageRequest) (store.Page[store.NFTView], error)) {
				items := 0
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					r := mix[i%len(mix)]
					p, err := page(ctx, r.Collection.ID, r.Filter, r.Sort, r.Page)
					if err != nil {
						b.Fatal(err)
					}
					items += len(p.Items)
				}
				b.ReportMetric(float64(items)/float64(b.N), "items/page")
			}
			b.Run("index", func(b *testing.B) { read(b, other.IndexedNFTs) })
			b.Run("sql", func(b *testing.B) { read(b, other.ReferenceNFTs) })
		})
	}
}
