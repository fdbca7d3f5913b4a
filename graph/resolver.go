package graph

import (
	"context"
	"time"

	"marketd/store"
)

// Resolver is the root of the resolvers: the store, and the followers of the public feeds
// the subscriptions share (feed.go).
type Resolver struct {
	store       *store.Store
	followEvery time.Duration // how often a follower with nothing new reads the log
	activity    *feeds[store.CollectionEvent, *store.CollectionEvent]
	fills       *feeds[store.PoolOutcome, *store.PoolOutcome]
}

// newResolver is the root of the resolvers on s.
func newResolver(s *store.Store) *Resolver {
	return &Resolver{
		store:       s,
		followEvery: followEvery,
		activity: &feeds[store.CollectionEvent, *store.CollectionEvent]{every: followEvery, start: s.LatestPosition,
			read: func(ctx context.Context, collectionID string, pos store.LogPosition) ([]store.CollectionEvent, error) {
				return s.CollectionActivityAfter(ctx, collectionID, pos, followBatch)
			}},
		fills: &feeds[store.PoolOutcome, *store.PoolOutcome]{every: followEvery, start: s.LatestPosition,
			read: func(ctx context.Context, poolID string, pos store.LogPosition) ([]store.PoolOutcome, error) {
				return s.PoolOutcomesAfter(ctx, poolID, pos, followBatch)
			}},
	}
}
