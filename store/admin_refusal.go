package store

import (
	"context"
	"sync"
	"time"

	"github.com/uptrace/bun"
)

// RefusalFlushEvery is how often an instance adds the refusals it counted to the store.
const RefusalFlushEvery = 5 * time.Second

// refusalTally counts rate-limit refusals in memory, per minute and scope, until the next
// flush adds them to rate_limit_refusals. A refusal costs a map increment under a mutex, never
// a write: a flood of them costs one upsert per minute and scope every RefusalFlushEvery.
type refusalTally struct {
	mu      sync.Mutex
	counts  map[refusalKey]int64
	stop    chan struct{} // closed by Close; nil until the first refusal starts the flusher
	stopped chan struct{}
	closed  bool // the store closed: count, but start no flusher
}

type refusalKey struct {
	minute int64 // Unix microseconds of the minute's start, store clock
	scope  string
}

// RateLimitRefusal is one row of rate_limit_refusals: how many requests of one scope were
// refused with 429 in one minute, summed over every instance. The console (store/admin)
// reads the rows for its chart and prunes them.
type RateLimitRefusal struct {
	bun.BaseModel `bun:"table:rate_limit_refusals"`

	Minute  int64  `bun:"minute,pk"`
	Scope   string `bun:"scope,pk"`
	Refused int64  `bun:"refused"`
}

// CountRefusal notes one request refused with 429 under scope (read, prepare, signin, execute, admin-login: a
// name from code, never from a client). It only counts in memory; the flusher it starts on
// first use adds the counts to the store every RefusalFlushEvery, and Close adds the rest.
func (s *Store) CountRefusal(scope string) {
	k := refusalKey{minute: s.now().Truncate(time.Minute).UnixMicro(), scope: scope}
	t := &s.refusals
	t.mu.Lock()
	if t.counts == nil {
		t.counts = make(map[refusalKey]int64)
	}
	t.counts[k]++
	if t.stop == nil && !t.closed {
		t.stop, t.stopped = make(chan struct{}), make(chan struct{})
		go s.flushRefusalsEvery(RefusalFlushEvery, t.stop, t.stopped)
	}
	t.mu.Unlock()
}

func (s *Store) flushRefusalsEvery(d time.Duration, stop, stopped chan struct{}) {
	defer close(stopped)
	tick := time.NewTicker(d)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			if err := s.FlushRefusals(context.Background()); err != nil {
				s.log.Warn("rate-limit refusals: flush failed; kept for the next one", "error", err.Error())
			}
		}
	}
}

// FlushRefusals adds the refusals counted since the last flush to the store, one statement
// for all of them. Counts a failed flush could not write are kept for the next.
func (s *Store) FlushRefusals(ctx context.Context) error {
	t := &s.refusals
	t.mu.Lock()
	counts := t.counts
	t.counts = nil
	t.mu.Unlock()
	if len(counts) == 0 {
		return nil
	}
	rows := make([]RateLimitRefusal, 0, len(counts))
	for k, n := range counts {
		rows = append(rows, RateLimitRefusal{Minute: k.minute, Scope: k.scope, Refused: n})
	}
	_, err := s.wdb.NewInsert().Model(&rows).
		On("CONFLICT (minute, scope) DO UPDATE").
		Set("refused = ?TableAlias.refused + EXCLUDED.refused").
		Exec(ctx)
	if err != nil {
		t.mu.Lock()
		if t.counts == nil {
			t.counts = make(map[refusalKey]int64, len(counts))
		}
		for k, n := range counts {
			t.counts[k] += n
		}
		t.mu.Unlock()
	}
	return err
}

// closeRefusals stops the flusher and writes what it had not written yet.
func (s *Store) closeRefusals(ctx context.Context) error {
	t := &s.refusals
	t.mu.Lock()
	stop, stopped := t.stop, t.stopped
	t.stop, t.closed = nil, true
	t.mu.Unlock()
	if stop != nil {
		close(stop)
		<-stopped
	}
	return s.FlushRefusals(ctx)
}
