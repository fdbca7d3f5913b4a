package store_test

import (
	"testing"

	"marketd/store/storetest"
)

func BenchmarkCountRefusal(b *testing.B) {
	s := storetest.Backends()[0].Open(b, storetest.Config(storetest.NewClock(storetest.Epoch)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.CountRefusal("read")
		}
	})
}
