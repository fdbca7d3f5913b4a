package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"marketd/store/storetest"
)

// roundTrips counts the scripts a Redis client runs.
type roundTrips struct{ n atomic.Int64 }

func (c *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name == "evalsha" || name == "eval" {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (c *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A key many requests share at once costs about one round trip per share an instance may
// admit on its own (64 here), not one per request that arrives while a round trip is under
// way: those wait for its answer.
func TestRedis_ABusyKeyCostsARoundTripAShareNotARequest(t *testing.T) {
	r, err := NewRedis(storetest.RedisURL(t), time.Minute, time.Now, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	trips := &roundTrips{}
	r.client.AddHook(trips)
	tag := make([]byte, 8)
	rand.Read(tag)
	key := "read:busy-" + hex.EncodeToString(tag)

	const workers, each = 32, 400
	var wg sync.WaitGroup
	var refused atomic.Int64
	for range workers {
		wg.Go(func() {
			for range each {
				if !r.Allow(key, 1<<30).Allowed {
					refused.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if st := r.Status(); st.Fallback {
		t.Fatalf("Redis did not answer: %s", st.Error)
	}
	if refused.Load() != 0 {
		t.Fatalf("%d requests refused under a limit never reached", refused.Load())
	}
	// 12,800 requests at 64 a round trip are 200; the once-a-second report and the first
	// requests of the window (before any share is known) add a few.
	total := workers * each
	if got, most := trips.n.Load(), int64(total/64+2*workers); got > most {
		t.Fatalf("%d requests on one key made %d round trips to Redis; want at most %d", total, got, most)
	}
	t.Logf("%d requests, %d round trips", total, trips.n.Load())
}
