package admin_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/admin"
	"marketd/store/storetest"
)

func sum(xs []int64) (n int64) {
	for _, x := range xs {
		n += x
	}
	return n
}

func TestRefusalsPerMinute_AddsEveryFlushByScopeAndMinute(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		clock := storetest.NewClock(storetest.Epoch.Add(30 * time.Second))
		s := b.Open(t, storetest.Config(clock))
		count := func(scope string, n int) {
			for range n {
				s.CountRefusal(scope)
			}
		}
		count("read", 3)
		count("prepare", 2)
		if err := s.FlushRefusals(ctx); err != nil {
			t.Fatal(err)
		}
		count("read", 4) // the same minute again: the flush adds to the row, as another instance's would
		clock.Advance(2 * time.Minute)
		count("read", 1)
		if err := s.FlushRefusals(ctx); err != nil {
			t.Fatal(err)
		}
		c, err := admin.New(s).RefusalsPerMinute(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		if want := storetest.Epoch.Add(-7 * time.Minute); !c.Start.Equal(want) || c.N != 10 || c.Width != time.Minute {
			t.Fatalf("buckets from %v, %d of %v; want from %v, 10 of 1m", c.Start, c.N, c.Width, want)
		}
		want := map[string][]int64{"read": {0, 0, 0, 0, 0, 0, 0, 7, 0, 1}, "prepare": {0, 0, 0, 0, 0, 0, 0, 2, 0, 0}}
		if len(c.Count) != len(want) || !slices.Equal(c.Count["read"], want["read"]) || !slices.Equal(c.Count["prepare"], want["prepare"]) {
			t.Fatalf("refusals per minute: %v, want %v", c.Count, want)
		}
		// Counted but not flushed yet: not in the store, and not lost.
		count("prepare", 5)
		if c, _ := admin.New(s).RefusalsPerMinute(ctx, 10); sum(c.Count["prepare"]) != 2 {
			t.Fatalf("before the flush: %v", c.Count["prepare"])
		}
		if err := s.FlushRefusals(ctx); err != nil {
			t.Fatal(err)
		}
		if c, _ := admin.New(s).RefusalsPerMinute(ctx, 10); c.Count["prepare"][9] != 5 {
			t.Fatalf("after the flush: %v", c.Count["prepare"])
		}
	})
}

func TestMarketCharts_BucketSalesFillsAndSessionsOnTheStoreClock(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		clock := storetest.NewClock(storetest.Epoch.Add(10 * time.Minute))
		s := b.Open(t, storetest.Config(clock))
		demo, err := s.SeedDemo(ctx, store.DemoOptions{NFTs: 200, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		if demo.Sales == 0 || demo.Swaps == 0 {
			t.Fatalf("the demo market has %d sales and %d swaps; the test needs both", demo.Sales, demo.Swaps)
		}
		clock.Advance(3*time.Hour + 5*time.Minute) // 15:15: the seed's hour is 3 buckets back
		sales, err := admin.New(s).SalesPerHour(ctx, 24)
		if err != nil {
			t.Fatal(err)
		}
		if want := storetest.Epoch.Add(-20 * time.Hour); !sales.Start.Equal(want) || len(sales.Count) != 24 {
			t.Fatalf("sales buckets from %v (%d), want from %v (24)", sales.Start, len(sales.Count), want)
		}
		if sales.Count[20] != int64(demo.Sales) || sum(sales.Count) != int64(demo.Sales) {
			t.Fatalf("sales per hour %v: want all %d in bucket 20 (12:00)", sales.Count, demo.Sales)
		}
		if sales.Volume[store.CC][20]+sales.Volume[store.USDCx][20] <= 0 {
			t.Fatalf("sales volume at 12:00: %v", sales.Volume)
		}
		fills, err := admin.New(s).SwapFillsPerMinute(ctx, 240)
		if err != nil {
			t.Fatal(err)
		}
		if at := fills.At(240 - 1 - 185); !at.Equal(storetest.Epoch.Add(10*time.Minute)) || fills.Count[240-1-185] == 0 || fills.Count[240-1-185] != sum(fills.Count) {
			t.Fatalf("swap fills per minute: %d at %v, %d in all; want every fill at 12:10", fills.Count[240-1-185], at, sum(fills.Count))
		}
		if recent, _ := admin.New(s).SwapFillsPerMinute(ctx, 60); sum(recent.Count) != 0 {
			t.Fatalf("fills in the last hour: %v, want none", recent.Count)
		}
		if n, err := admin.New(s).OpenSessions(ctx); err != nil || n != 0 {
			t.Fatalf("open sessions: %d %v, want 0", n, err)
		}
		if c, err := admin.New(s).SignInsPerMinute(ctx, 60); err != nil || sum(c.Count) != 0 {
			t.Fatalf("sign-ins: %v %v", c, err)
		}
	})
}

// Two instances on one PostgreSQL add their refusals to the same rows, and an instance that
// closes writes what it had not flushed yet.
func TestRefusalsPerMinute_SumsTheFleetAndCloseFlushes(t *testing.T) {
	for _, b := range storetest.Backends() {
		if b.Dialect != store.Postgres {
			continue
		}
		ctx := context.Background()
		cfg := storetest.Config(storetest.NewClock(storetest.Epoch))
		a := b.Open(t, cfg)
		cfg.DB = a.Config().DB
		other, err := store.Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			a.CountRefusal("read")
		}
		for range 2 {
			other.CountRefusal("read")
		}
		if err := a.FlushRefusals(ctx); err != nil {
			t.Fatal(err)
		}
		if err := other.Close(); err != nil { // flushes its 2
			t.Fatal(err)
		}
		c, err := admin.New(a).RefusalsPerMinute(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Count["read"]; len(got) != 1 || got[0] != 5 {
			t.Fatalf("the fleet's refusals this minute: %v, want 5", got)
		}
		return
	}
	t.Skip("needs PostgreSQL (TEST_DATABASE_URL): SQLite is one instance's store")
}

// Refusals counted while flushes run are each written once: none lost, none twice.
func TestCountRefusal_ConcurrentWithFlushesLosesNone(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
		const workers, each = 8, 500
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for range each {
					s.CountRefusal("read")
				}
			})
		}
		flushing := make(chan struct{})
		go func() {
			defer close(flushing)
			for range 20 {
				if err := s.FlushRefusals(ctx); err != nil {
					t.Error(err)
				}
			}
		}()
		wg.Wait()
		<-flushing
		if err := s.FlushRefusals(ctx); err != nil {
			t.Fatal(err)
		}
		c, err := admin.New(s).RefusalsPerMinute(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Count["read"]; len(got) != 1 || got[0] != workers*each {
			t.Fatalf("refusals written: %v, want %d", got, workers*each)
		}
	})
}
