package rest

import (
	"testing"

	"marketd/store"
	"marketd/store/storetest"
)

// BenchmarkLogServing is the rate of the transparency log's reads over HTTP, through the
// middleware every route passes, on a log of 300 updates: the signed checkpoint, a full hash
// tile of level 0 and a full entry bundle. Run:
//
//	TEST_DATABASE_URL=postgres://... go test -run '^$' -bench LogServing -benchtime 3s ./rest/
func BenchmarkLogServing(b *testing.B) {
	eachBackend(b, func(b *testing.B, be storetest.Backend) {
		a := newBenchAPI(b, be)
		p := a.onboard(b, "alice")
		for range 300 {
			p.Tap(b, a.store, store.CC, "1")
		}
		for _, path := range []string{"/log/checkpoint", "/log/tile/0/000", "/log/tile/entries/000"} {
			b.Run(path, func(b *testing.B) {
				b.SetParallelism(benchClients / 2)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						a.call(b, "GET", path, "", nil, nil)
					}
				})
				perSecond(b, "requests/s")
			})
		}
	})
}
