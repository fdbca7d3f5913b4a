package store_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"marketd/store"
	"marketd/store/storetest"
)

// BenchmarkTransparencyLog_Taps is the write path's rate with the transparency log and
// without it, in the same run: 16 clients executing taps (prepare, sign, execute), each its own
// update and database transaction. Run:
//
//	TEST_DATABASE_URL=postgres://... go test -run '^$' -bench TransparencyLog -benchtime 3s ./store/
func BenchmarkTransparencyLog_Taps(b *testing.B) {
	for _, be := range storetest.Backends() {
		for _, logged := range []bool{true, false} {
			name := be.Name + "/log"
			if !logged {
				name = be.Name + "/nolog"
			}
			b.Run(name, func(b *testing.B) {
				s := be.Open(b, storetest.Config(storetest.NewClock(storetest.Epoch)))
				if !logged {
					s.SkipTransparencyLog()
				}
				parties := make([]*storetest.Party, 16)
				for i := range parties {
					parties[i] = storetest.Onboard(b, s, fmt.Sprintf("p%d", i))
				}
				var next atomic.Int64
				b.SetParallelism(8) // 16 goroutines on 2 cores
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					p := parties[next.Add(1)%int64(len(parties))]
					for pb.Next() {
						prep, err := s.PrepareTap(context.Background(), p.ID, store.CC, store.MustAmount("1"))
						if err == nil {
							_, err = p.Execute(s, store.KindTap, prep)
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "updates/s")
			})
		}
	}
}
