package graph

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"marketd/store"
)

// logEvent is an event of a made-up log: several per offset, ordered by seq.
type logEvent struct{ offset, seq int64 }

func (e *logEvent) Position() store.LogPosition {
	return store.LogPosition{Offset: e.offset, After: strconv.FormatInt(e.seq, 10)}
}

// madeUpLog is a log that grows while it is read, and counts its reads.
type madeUpLog struct {
	mu     sync.Mutex
	events []logEvent
	reads  atomic.Int64
}

func (l *madeUpLog) append(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	off := int64(1)
	if len(l.events) > 0 {
		off = l.events[len(l.events)-1].offset + 1
	}
	for range n {
		l.events = append(l.events, logEvent{offset: off, seq: int64(len(l.events)) + 1})
	}
}

func (l *madeUpLog) read(_ context.Context, _ string, pos store.LogPosition) ([]logEvent, error) {
	l.reads.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []logEvent
	for i := range l.events {
		if before(pos, l.events[i].Position()) {
			out = append(out, l.events[i])
			if len(out) == followBatch {
				break
			}
		}
	}
	return out, nil
}

func (l *madeUpLog) end(context.Context) (store.LogPosition, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.events) == 0 {
		return store.LogPosition{}, nil
	}
	return store.LogPosition{Offset: l.events[len(l.events)-1].offset}, nil
}

// Subscriptions of one shared feed, started at random places in a log that grows while they
// run (from the start, from the middle, at the end), some reading slower than events arrive
// so the follower lets them go: each sees every event after its start exactly once, in
// order, and the follower's reads do not grow with the subscriptions.
func TestFeeds_EverySubscriptionSeesEachEventAfterItsStartOnceInOrder(t *testing.T) {
	lg := &madeUpLog{}
	lg.append(1500)
	fs := &feeds[logEvent, *logEvent]{every: 5 * time.Millisecond, read: lg.read, start: lg.end}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	const subscriptions, more = 40, 3000
	type run struct {
		from int64 // the seq after which it starts; -1 for the end of the log
		slow bool
		got  []int64
	}
	runs := make([]*run, subscriptions)
	var wg sync.WaitGroup
	for i := range runs {
		r := &run{from: int64(rand.IntN(1500)), slow: i%4 == 0}
		if i%5 == 0 {
			r.from = -1
		}
		runs[i] = r
		var from *store.LogPosition
		if r.from >= 0 {
			p := store.LogPosition{} // before the first event
			if r.from > 0 {
				lg.mu.Lock()
				p = lg.events[r.from-1].Position()
				lg.mu.Unlock()
			}
			from = &p
		}
		ch, err := fs.subscribe(ctx, "feed", from)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := range ch {
				r.got = append(r.got, e.seq)
				if r.slow && len(r.got)%50 == 0 {
					time.Sleep(20 * time.Millisecond)
				}
				if e.seq == 1500+more {
					return
				}
			}
		}()
	}
	for range more / 30 {
		lg.append(30)
		time.Sleep(time.Millisecond)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the subscriptions did not see the log's last event within 30 s")
	}
	for i, r := range runs {
		if len(r.got) == 0 {
			t.Fatalf("subscription %d saw nothing", i)
		}
		start := r.from + 1
		if r.from < 0 {
			start = r.got[0] // from the end: where the follower was as it joined
		}
		for j, seq := range r.got {
			if seq != start+int64(j) {
				t.Fatalf("subscription %d (slow %v, from %d): event %d is %d, want %d", i, r.slow, r.from, j, seq, start+int64(j))
			}
		}
	}
	cancel()
	// Every subscription ended: the follower stops.
	deadline := time.Now().Add(5 * time.Second)
	for {
		fs.mu.Lock()
		n := len(fs.running)
		fs.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the follower runs on after its last subscription ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The follower's reads of an idle feed do not grow with its subscriptions.
func TestFeeds_SubscriptionsOfAFeedShareItsReads(t *testing.T) {
	lg := &madeUpLog{}
	lg.append(10)
	fs := &feeds[logEvent, *logEvent]{every: 10 * time.Millisecond, read: lg.read, start: lg.end}
	readsOver := func(n int) int64 {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for range n {
			if _, err := fs.subscribe(ctx, "feed", nil); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(50 * time.Millisecond)
		before := lg.reads.Load()
		time.Sleep(500 * time.Millisecond)
		return lg.reads.Load() - before
	}
	one, sixty := readsOver(1), readsOver(60)
	if one == 0 || sixty > 2*one {
		t.Fatalf("reads in 0.5 s: %d with one subscription, %d with 60", one, sixty)
	}
}
