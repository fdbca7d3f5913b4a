package graph

import (
	"time"

	"marketd/store"
)

// Resolver is the root of the resolvers; it holds the store and nothing else.
type Resolver struct {
	store       *store.Store
	followEvery time.Duration // how often a subscription with nothing new reads the log
}
