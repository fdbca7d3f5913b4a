package store_test

import (
	"context"
	"testing"

	"marketd/store"
	"marketd/store/storetest"
)

// BenchmarkSeedDemo measures the demo seed of the default 3,000 NFTs (marketd seed --demo)
// into a fresh store, on every backend.
func BenchmarkSeedDemo(b *testing.B) {
	for _, be := range storetest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				s := be.Open(b, storetest.Config(storetest.NewClock(storetest.Epoch)))
				b.StartTimer()
				if _, err := s.SeedDemo(context.Background(), store.DemoOptions{Seed: 1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
