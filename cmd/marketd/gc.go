package main

import (
	"os"
	"runtime/debug"
)

// serveGOGC is the garbage collector's target for `marketd serve` when GOGC is not set. The
// service's live heap is small (bounded caches, sessions) while every request allocates its
// response (a page of NFTs is about 15 KB of JSON), so at Go's default of 100 it collects
// every few milliseconds under load and the collections show in the latency's tail. At 400 the
// heap grows to five times the live data between collections. GOGC and GOMEMLIMIT, when set,
// are the runtime's as usual.
const serveGOGC = 400

func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(serveGOGC)
	}
}
