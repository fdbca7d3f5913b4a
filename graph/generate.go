// Package graph is marketd's GraphQL read facade for dashboards: the schema in
// schema.graphqls, resolvers that call store operations only, dataloaders that batch every
// association, and the HTTP handler with its limits and the embedded GraphiQL page.
package graph

//go:generate sh -c "cd .. && go tool gqlgen generate --config gqlgen.yml"
//go:generate go run ./internal/resolverfields
