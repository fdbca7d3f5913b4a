package store_test

import (
	"context"
	"testing"

	"marketd/store"
	"marketd/store/storetest"
)

// BenchmarkSeedDemo measures the demo seed of the default 3,000 NFTs (marketd seed --demo)
// into a fresh store, on every backend: with its offers (about one per NFT) and without them
// (--offers=false), one after the other, so the offers' share is read from one run.
func BenchmarkSeedDemo(b *testing.B) {
	for _, be := range storetest.Backends() {
		for _, v := range []struct {
			name   string
			offers bool
		}{{"offers", true}, {"nooffers", false}} {
			b.Run(be.Name+"/"+v.name, func(b *testing.B) {
				for range b.N {
					b.StopTimer()
					s := be.Open(b, storetest.Config(storetest.NewClock(storetest.Epoch)))
					b.StartTimer()
					if _, err := s.SeedDemo(context.Background(), store.DemoOptions{Seed: 1, Offers: v.offers}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
