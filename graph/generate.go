// Package graph is marketd's GraphQL read facade for dashboards: the schema in the
// *.graphqls files (queries, and subscriptions over WebSocket), resolvers that call store
// operations only, dataloaders that batch every association, the fast path that writes the
// pages of collections and NFTs without the executor (nftpage_fast.go, and its per-type
// writers in nftpage_fast_gen.go, which gqlgen writes with the plugin in internal/fastpathgen),
// and the HTTP handler with its limits, the embedded GraphiQL page and the schema as SDL. Collections, NFTs,
// offers, pools, LP quotes and intents are Relay nodes with global ids (node.go), so client
// caches normalise them with no configuration; closed sets of values are enums.
package graph

// gqlgen runs from the repository's top, through internal/gqlgen: gqlgen's generate with the
// fast path's plugin.
//
//go:generate sh -c "cd .. && go run ./graph/internal/gqlgen --config gqlgen.yml"
//go:generate go run ./internal/resolverfields
