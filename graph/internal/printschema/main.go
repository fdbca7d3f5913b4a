// Command printschema writes the GraphQL schema to stdout as one SDL document, exactly as
// GET /graphql/schema.graphql serves it. `.ci/contract publish` keeps its output as the
// release's published GraphQL contract, the baseline the next changes are diffed against.
package main

import (
	"log"
	"os"

	"marketd/graph"
)

func main() {
	if _, err := os.Stdout.Write(graph.SchemaSDL()); err != nil {
		log.Fatalf("printschema: %v", err)
	}
}
