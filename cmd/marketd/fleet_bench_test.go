package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"marketd/store/storetest"
)

// BenchmarkFleet measures, from clients' side, authenticated reads (GET /api/auth/me) and
// cc-transfer pairs (prepare + execute) per second through one marketd process and through
// three on the same PostgreSQL and Redis, side by side in one run. Every process runs the
// Redis limiter at a limit never reached (a fourth, counting in memory, prices the Redis
// limiter per request); 32 keep-alive clients share the machine with them. Beside the rates,
// the read benchmarks report the CPU each read cost the serving processes and Redis's server
// (from /proc and Redis's INFO), which the other processes of a shared machine do not move.
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
	rdb := redisClient(b)
	b.Run("Reads/instances=1/limiter=memory", func(b *testing.B) {
		var next atomic.Int64
		b.SetParallelism(16)
		cpu := startCPU(rdb, memory)
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
		cpu.report(b)
	})
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("Reads/instances=%d", n), func(b *testing.B) {
			var next atomic.Int64
			b.SetParallelism(16) // 32 clients on 2 cores
			cpu := startCPU(rdb, fleet[:n]...)
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
			cpu.report(b)
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

// cpuMeter is the CPU time a benchmark's serving processes and Redis's server used from its
// start.
type cpuMeter struct {
	rdb     *redis.Client
	ins     []*instance
	servers time.Duration
	redis   time.Duration
}

func startCPU(rdb *redis.Client, ins ...*instance) *cpuMeter {
	m := &cpuMeter{rdb: rdb, ins: ins}
	m.servers, m.redis = m.serversCPU(), redisCPU(rdb)
	return m
}

func (m *cpuMeter) serversCPU() time.Duration {
	var d time.Duration
	for _, in := range m.ins {
		d += cpuTime(in.cmd.Process.Pid)
	}
	return d
}

// report reports the servers' and Redis's CPU per op of b since the meter started.
func (m *cpuMeter) report(b *testing.B) {
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
	b.ReportMetric(per(m.serversCPU()-m.servers), "server-cpu-µs/op")
	b.ReportMetric(per(redisCPU(m.rdb)-m.redis), "redis-cpu-µs/op")
}

func redisClient(b *testing.B) *redis.Client {
	opt, err := redis.ParseURL(storetest.RedisURL(b))
	if err != nil {
		b.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	b.Cleanup(func() { rdb.Close() })
	return rdb
}

// redisCPU is the CPU time Redis's server reports it has used (user and system).
func redisCPU(rdb *redis.Client) time.Duration {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		return 0
	}
	var d time.Duration
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, _ := strconv.ParseFloat(v, 64)
			d += time.Duration(f * float64(time.Second))
		}
	}
	return d
}
