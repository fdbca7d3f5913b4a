package main

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"marketd/store/storetest"
)

// BenchmarkFleet measures, from clients' side, authenticated reads (GET /api/auth/me) and
// cc-transfer pairs (prepare + execute) per second through one marketd process and through
// three on the same PostgreSQL and Redis, side by side in one run. Every process runs the
// Redis limiter at a limit never reached (a fourth, counting in memory, prices the Redis
// limiter per request); 32 keep-alive clients share the machine with them.
func BenchmarkFleet(b *testing.B) {
	dsn := postgresDSN(b)
	env := []string{"MARKETD_DB=" + dsn, "MARKETD_REDIS=" + storetest.RedisURL(b), "MARKETD_RATE_READ=1000000000", "MARKETD_LOG_LEVEL=error"}
	fleet := []*instance{startInstance(b, env...), startInstance(b, env...), startInstance(b, env...)}
	// A fourth process on the same store counts in memory: the Redis limiter's cost per request.
	memory := startInstance(b, "MARKETD_DB="+dsn, "MARKETD_RATE_READ=1000000000", "MARKETD_LOG_LEVEL=error")
	c := newClient(b)
	const parties = 64
	ps := make([]*party, parties)
	for i := range ps {
		ps[i] = c.onboard(fleet[0].url, fmt.Sprintf("b%d", i))
		for range 4 {
			c.tap(fleet[0].url, ps[i], "1000000")
		}
	}
	b.Run("Reads/instances=1/limiter=memory", func(b *testing.B) {
		var next atomic.Int64
		b.SetParallelism(16)
		b.ResetTimer()
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			p := ps[int(next.Add(1))%parties]
			for pb.Next() {
				if r := c.do("GET", memory.url+"/api/auth/me", p.tok, nil); r.status != 200 {
					b.Fatalf("read: %d %s", r.status, r.raw)
				}
			}
		})
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "reads/s")
	})
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("Reads/instances=%d", n), func(b *testing.B) {
			var next atomic.Int64
			b.SetParallelism(16) // 32 clients on 2 cores
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				i := int(next.Add(1))
				p := ps[i%parties]
				for pb.Next() {
					i++
					if r := c.do("GET", fleet[i%n].url+"/api/auth/me", p.tok, nil); r.status != 200 {
						b.Fatalf("read: %d %s", r.status, r.raw)
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "reads/s")
		})
		b.Run(fmt.Sprintf("CCTransfer/instances=%d", n), func(b *testing.B) {
			var next atomic.Int64
			b.SetParallelism(16)
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				// Each client its own sender, so pairs are independent (no stale inputs).
				w := int(next.Add(1)) - 1
				me, to := ps[w%parties], ps[(w+1)%parties]
				for i := w; pb.Next(); i++ {
					base := fleet[i%n].url
					h := c.ok("POST", base+"/api/wallet/cc-transfer/prepare", me.tok, map[string]string{"receiver": to.ID, "amount": "0.01"}).str("preparedTransactionHash")
					c.ok("POST", base+"/api/wallet/cc-transfer/execute", me.tok, map[string]string{"preparedTransactionHash": h, "signature": me.SignHash(c.t, h)})
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "pairs/s")
		})
	}
}
