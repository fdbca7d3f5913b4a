package pagecache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// cacheProbe reads pages through a Cache and counts the reads that reached the "store".
type cacheProbe struct {
	c     *Cache[string, string]
	reads atomic.Int64
}

// get asks for page k of scope at now; a read answers "read k" (until, items as given).
func (p *cacheProbe) get(t *testing.T, k, scope string, now, until time.Time, items int) string {
	t.Helper()
	page, err := p.c.Get(context.Background(), k, scope, now, func(uint64) (string, time.Time, int, error) {
		p.reads.Add(1)
		return "read " + k, until, items, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return page
}

// hit tells whether page k of scope is served without a read.
func (p *cacheProbe) hit(t *testing.T, k, scope string, now time.Time) bool {
	t.Helper()
	before := p.reads.Load()
	p.get(t, k, scope, now, time.Time{}, 1)
	return p.reads.Load() == before
}

func TestPageCache_KeepsPagesUntilAWriteToTheirScopeOrAnExpiry(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	p := &cacheProbe{c: New[string, string](10, time.Hour)}
	p.get(t, "a1", "a", now, time.Time{}, 1)
	p.get(t, "b1", "b", now, time.Time{}, 1)
	if !p.hit(t, "a1", "a", now) || !p.hit(t, "b1", "b", now) {
		t.Fatal("a page read once is read again")
	}
	p.c.Invalidate("a")
	if p.hit(t, "a1", "a", now) {
		t.Error("a page of a scope written since is still served")
	}
	if !p.hit(t, "b1", "b", now) {
		t.Error("a write to scope a ended a page of scope b")
	}

	// A page ends when a listing on it expires, on the store's clock.
	p.get(t, "a3", "a", now, now.Add(time.Minute), 1)
	if !p.hit(t, "a3", "a", now.Add(59*time.Second)) {
		t.Error("a page ended before its listing expired")
	}
	if p.hit(t, "a3", "a", now.Add(time.Minute)) {
		t.Error("a page is served once its listing expired")
	}

	// Full: the cache starts over.
	p.get(t, "big", "b", now, time.Time{}, 10)
	if p.hit(t, "b1", "b", now) {
		t.Error("a page survived the cache starting over")
	}
	p.c.InvalidateAll()
	if p.hit(t, "big", "b", now) {
		t.Error("a page survived InvalidateAll")
	}
}

func TestPageCache_AReadThatAWriteOverlapsIsNotKept(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	c := New[string, string](10, time.Hour)
	_, err := c.Get(context.Background(), "a1", "a", now, func(uint64) (string, time.Time, int, error) {
		c.Invalidate("a") // a write commits while the page is read
		return "stale", time.Time{}, 1, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	p := &cacheProbe{c: c}
	if p.hit(t, "a1", "a", now) {
		t.Error("a page read across a write to its scope was kept")
	}
}

func TestPageCache_ConcurrentCallersShareOneReadUnlessAWriteCameBetween(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	c := New[string, string](10, time.Hour)
	var reads atomic.Int64
	release := make(chan struct{})
	started := make(chan struct{}, 100)
	read := func(uint64) (string, time.Time, int, error) {
		n := reads.Add(1)
		started <- struct{}{}
		<-release
		if n == 1 {
			return "first read", time.Time{}, 1, nil
		}
		return "after the write", time.Time{}, 1, nil
	}
	var wg sync.WaitGroup
	got := make([]string, 20)
	get := func(i int) {
		defer wg.Done()
		page, err := c.Get(context.Background(), "k", "a", now, read)
		if err != nil {
			t.Error(err)
		}
		got[i] = page
	}
	wg.Add(1)
	go get(0)
	<-started // the first read is under way; these join it
	for i := 1; i < 10; i++ {
		wg.Add(1)
		go get(i)
	}
	waitForWaiters(t, c, "k", 9)
	c.Invalidate("a") // a write commits: later callers must not share the read begun before it
	for i := 10; i < 20; i++ {
		wg.Add(1)
		go get(i)
	}
	<-started // the second read
	waitForWaiters(t, c, "k", 9)
	close(release)
	wg.Wait()
	if n := reads.Load(); n != 2 {
		t.Fatalf("%d reads for 20 callers in two groups; want 2", n)
	}
	for i, page := range got {
		want := "first read"
		if i >= 10 {
			want = "after the write"
		}
		if page != want {
			t.Errorf("caller %d got %q, want %q", i, page, want)
		}
	}
}

func TestPageCache_AFailedSharedReadIsReadAgainByEachCaller(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	c := New[string, string](10, time.Hour)
	release, started := make(chan struct{}), make(chan struct{})
	var reads atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err := c.Get(context.Background(), "k", "a", now, func(uint64) (string, time.Time, int, error) {
			reads.Add(1)
			close(started)
			<-release
			return "", time.Time{}, 0, errors.New("the first caller went away")
		})
		if err == nil {
			t.Error("the failed read answered no error")
		}
	}()
	<-started
	wg.Add(1)
	go func() {
		defer wg.Done()
		page, err := c.Get(context.Background(), "k", "a", now, func(uint64) (string, time.Time, int, error) {
			reads.Add(1)
			return "own read", time.Time{}, 1, nil
		})
		if err != nil || page != "own read" {
			t.Errorf("the second caller got %q %v after the shared read failed", page, err)
		}
	}()
	waitForWaiters(t, c, "k", 1)
	close(release)
	wg.Wait()
	if reads.Load() != 2 {
		t.Errorf("%d reads; want the failed one and the second caller's own", reads.Load())
	}
}

func TestPageCache_EndsAtItsTTLAndIsOffBelowZero(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	c := New[string, string](10, time.Hour)
	c.keep("k", "", 0, time.Now().Add(-2*time.Hour), time.Time{}, 1, "old")
	p := &cacheProbe{c: c}
	if p.hit(t, "k", "", now) {
		t.Error("a page older than the TTL is served")
	}
	off := &cacheProbe{c: New[string, string](10, -1)}
	off.get(t, "k", "", now, time.Time{}, 1)
	off.c.KeepHorizon("", 0, time.Now(), time.Time{})
	if off.hit(t, "k", "", now) {
		t.Error("a cache with a negative TTL serves pages")
	}
	if _, ok := off.c.Horizon("", now); ok {
		t.Error("a cache with a negative TTL serves horizons")
	}
}

// waitForWaiters waits until n callers share the read of page k under way.
func waitForWaiters(t *testing.T, c *Cache[string, string], k string, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		f := c.flights[k]
		got := 0
		if f != nil {
			got = f.waiters
		}
		c.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d callers share the read of %s, want %d", got, k, n)
		}
	}
}

func TestPageCache_AReadThatPanicsLeavesNoCallerWaiting(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	c := New[string, string](10, time.Hour)
	release, started := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() {
			if recover() == nil {
				t.Error("the panic did not reach the caller whose read it was")
			}
		}()
		c.Get(context.Background(), "k", "a", now, func(uint64) (string, time.Time, int, error) {
			close(started)
			<-release
			panic("a bug in the read")
		})
	}()
	<-started
	done := make(chan string)
	go func() {
		page, _ := c.Get(context.Background(), "k", "a", now, func(uint64) (string, time.Time, int, error) {
			return "own read", time.Time{}, 1, nil
		})
		done <- page
	}()
	waitForWaiters(t, c, "k", 1)
	close(release)
	select {
	case page := <-done:
		if page != "own read" {
			t.Errorf("the caller sharing a read that panicked got %q", page)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the caller sharing a read that panicked is still waiting")
	}
	wg.Wait()
}

// Reads tracked through the cache: a page served from memory is a dependency that ends with
// its scope's next write; a page read, or shared from another caller's read under way (which
// runs no statement of this caller's), spoils them.
func TestPageCache_TrackedReadsKeepOnlyWhatMemoryServed(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	c := New[string, string](10, time.Hour)
	release, started := make(chan struct{}), make(chan struct{}, 1)
	read := func(uint64) (string, time.Time, int, error) {
		started <- struct{}{}
		<-release
		return "page", time.Time{}, 1, nil
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Get(context.Background(), "k", "a", now, read)
	}()
	<-started
	ctx, shared := TrackReads(context.Background())
	joined := make(chan struct{})
	go func() {
		defer close(joined)
		c.Get(ctx, "k", "a", now, read)
	}()
	waitForWaiters(t, c, "k", 1)
	close(release)
	<-done
	<-joined
	if shared.Keepable() {
		t.Fatal("reads that shared another caller's read are keepable")
	}

	ctx, hit := TrackReads(context.Background())
	if page, err := c.Get(ctx, "k", "a", now, read); err != nil || page != "page" {
		t.Fatalf("hit: %q %v", page, err)
	}
	if !hit.Keepable() || len(hit.deps) != 1 || !hit.deps[0].cache.stillCurrent("a", hit.deps[0].seq, hit.deps[0].at, hit.deps[0].until, now) {
		t.Fatalf("a page served from memory: keepable %v, deps %+v", hit.Keepable(), hit.deps)
	}
	c.Invalidate("b")
	if !hit.deps[0].cache.stillCurrent("a", hit.deps[0].seq, hit.deps[0].at, hit.deps[0].until, now) {
		t.Fatal("a write to another scope ended the dependency")
	}
	c.Invalidate("a")
	if hit.deps[0].cache.stillCurrent("a", hit.deps[0].seq, hit.deps[0].at, hit.deps[0].until, now) {
		t.Fatal("the dependency outlives a write to its scope")
	}
}
