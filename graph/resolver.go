package graph

import "marketd/store"

// Resolver is the root of the resolvers; it holds the store and nothing else.
type Resolver struct {
	store *store.Store
}
