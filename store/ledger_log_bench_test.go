package store_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
					s.SkipTransparencyLog(b)
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
				if _, err := s.LogTree(context.Background()); err != nil { // the tree holds them all
					b.Fatal(err)
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "updates/s")
			})
		}
	}
}

// BenchmarkTransparencyLog_Interleaved is the write path's rate with the log against without
// it, measured so that the machine's slow drifts (a neighbour's load, a checkpoint) fall on
// both alike: two stores, one logging and one not, stay open side by side, and the same
// clients' taps run on them in turns of 256 updates, in the order log, nolog, nolog, log, and
// so on. The ratio reported (log/nolog) is the rate with the log over the rate without it over
// the whole run; each b.N is one update. A turn ends once the store's log holds its updates. It runs with 1, 4 and 16 clients: one client sees
// only the latency the log adds, sixteen on two cores also see its work under the lock that
// orders commits. Run:
//
//	TEST_DATABASE_URL=postgres://... go test -run '^$' -bench TransparencyLog_Interleaved -benchtime 20000x ./store/
func BenchmarkTransparencyLog_Interleaved(b *testing.B) {
	const turn = 256
	for _, be := range storetest.Backends() {
		for _, clients := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("%s/clients=%d", be.Name, clients), func(b *testing.B) {
				interleaved(b, be, clients, turn, [2]string{"log", "nolog"}, func(b *testing.B, i int, s *store.Store) {
					if i == 1 {
						s.SkipTransparencyLog(b)
					}
				})
			})
		}
	}
}

// interleaved runs b.N taps from clients at once, in turns of turn updates on two stores that
// setup makes differ (store 0 the one measured, store 1 the yardstick), and reports both rates,
// by names, and their ratio.
func interleaved(b *testing.B, be storetest.Backend, clients, turn int, names [2]string, setup func(b *testing.B, i int, s *store.Store)) {
	var stores [2]*store.Store
	var parties [2][]*storetest.Party
	for i := range stores {
		stores[i] = be.Open(b, storetest.Config(storetest.NewClock(storetest.Epoch)))
		setup(b, i, stores[i])
		for c := 0; c < clients; c++ {
			parties[i] = append(parties[i], storetest.Onboard(b, stores[i], fmt.Sprintf("p%d", c)))
		}
	}
	// run executes n taps on store i from the clients at once and answers how long they took.
	run := func(i, n int) time.Duration {
		var left atomic.Int64
		left.Store(int64(n))
		var wg sync.WaitGroup
		start := time.Now()
		for _, p := range parties[i] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for left.Add(-1) >= 0 {
					prep, err := stores[i].PrepareTap(context.Background(), p.ID, store.CC, store.MustAmount("1"))
					if err == nil {
						_, err = p.Execute(stores[i], store.KindTap, prep)
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		// On PostgreSQL the tree is built after the commits (integrateLog): the turn ends once
		// it holds them, so that work falls in its own turn. Both stores read their head alike.
		if _, err := stores[i].LogTree(context.Background()); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	run(0, turn) // warm both: connections, statements, caches
	run(1, turn)
	var took [2]time.Duration
	var done [2]int
	b.ResetTimer()
	for k := 0; done[0]+done[1] < b.N; k++ {
		i := k % 2
		if k/2%2 == 1 {
			i = 1 - i // log, nolog, nolog, log, ...
		}
		n := min(turn, b.N-done[0]-done[1])
		took[i] += run(i, n)
		done[i] += n
	}
	b.StopTimer()
	if done[0] == 0 || done[1] == 0 {
		return // too few updates to compare
	}
	rate := [2]float64{float64(done[0]) / took[0].Seconds(), float64(done[1]) / took[1].Seconds()}
	b.ReportMetric(rate[0], names[0]+"-updates/s")
	b.ReportMetric(rate[1], names[1]+"-updates/s")
	b.ReportMetric(rate[0]/rate[1], names[0]+"/"+names[1])

}
