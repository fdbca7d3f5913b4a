package main

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// serveGOGC is the garbage collector's target for `marketd serve` when GOGC is not set. The
// service's live heap is small next to what requests allocate (a page of NFTs is about 15 KB
// of JSON), so at Go's default of 100 it collects every few milliseconds under load and the
// collections show in the latency's tail. At 400 the heap may grow to five times the live data
// between collections.
const serveGOGC = 400

// headroom is how far the heap may grow past the live data before a collection, whatever
// GOGC allows: the live heap is mostly the NFT index (about 300 bytes per NFT), and five times
// it would be memory the process holds for nothing.
const headroom = 64 << 20

// tuneGC sets the collector's target, and keeps a soft memory limit of the live heap plus the
// larger of itself and headroom, read again every second, until ctx ends. GOGC and GOMEMLIMIT,
// when set, are the runtime's as usual.
func tuneGC(ctx context.Context) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(serveGOGC)
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	limit := func() {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return
		}
		live := int64(sample[0].Value.Uint64())
		debug.SetMemoryLimit(live + max(live, headroom))
	}
	limit()
	go every(ctx, time.Second, limit)
}
