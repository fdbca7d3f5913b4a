package store

import (
	"context"
	"database/sql"
	"time"

	"github.com/uptrace/bun"
)

// CommitObserver learns of every committed ledger update: its kind and how long its database
// transaction took, from begin to commit. Metrics use it; it must not block.
type CommitObserver func(kind string, took time.Duration)

// ObserveCommits sets the function told of every committed ledger update (nil for none).
// Set it before serving.
func (s *Store) ObserveCommits(fn CommitObserver) { s.commitObserver.Store(&fn) }

func (s *Store) observeCommit(kind string, took time.Duration) {
	if fn := s.commitObserver.Load(); fn != nil && *fn != nil {
		(*fn)(kind, took)
	}
}

// SQLDB is the read pool, for its connection statistics (on PostgreSQL reads and writes share it).
func (s *Store) SQLDB() *sql.DB { return s.db.DB }

// AddQueryHook observes every SQL statement the store runs (tests count them). It is safe
// while the store runs statements, the NFT index's among them: the hooks are one list,
// replaced whole, that a single hook installed at Open reads.
func (s *Store) AddQueryHook(h bun.QueryHook) {
	for {
		old := s.hooks.Load()
		next := []bun.QueryHook{h}
		if old != nil {
			next = append(append([]bun.QueryHook{}, (*old)...), h)
		}
		if s.hooks.CompareAndSwap(old, &next) {
			return
		}
	}
}

// queryHooks calls each hook AddQueryHook added.
type queryHooks struct{ s *Store }

func (q queryHooks) BeforeQuery(ctx context.Context, e *bun.QueryEvent) context.Context {
	if hs := q.s.hooks.Load(); hs != nil {
		for _, h := range *hs {
			ctx = h.BeforeQuery(ctx, e)
		}
	}
	return ctx
}

func (q queryHooks) AfterQuery(ctx context.Context, e *bun.QueryEvent) {
	if hs := q.s.hooks.Load(); hs != nil {
		for _, h := range *hs {
			h.AfterQuery(ctx, e)
		}
	}
}

type backgroundKey struct{}

// InBackground tells whether a statement runs for the store's own background work (building
// and following the NFT index), not for a request: query hooks that count a request's
// statements leave these out.
func InBackground(ctx context.Context) bool {
	b, _ := ctx.Value(backgroundKey{}).(bool)
	return b
}
