package graph

import (
	"bytes"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/formatter"
)

// SchemaSDL is the schema as GET /graphql/schema.graphql serves it (see schemaSDL); it is what a
// release publishes as its GraphQL contract (graph/internal/printschema). It reads the schema
// through the executable schema's own Schema method, not gqlgen's generated variables.
func SchemaSDL() []byte { return schemaSDL(NewExecutableSchema(Config{}).Schema()) }

// schemaSDL is the whole schema as one SDL document, descriptions included, for code
// generators: every type of the *.graphqls files with their extensions merged, in name order,
// after the schema's own description and root types. GraphQL's built-in types and
// directives are left out, as every tool knows them.
func schemaSDL(s *ast.Schema) []byte {
	var b bytes.Buffer
	if s.Description != "" {
		b.WriteString(`"""` + "\n" + strings.ReplaceAll(s.Description, `"""`, `\"""`) + "\n" + `"""` + "\n")
	}
	b.WriteString("schema {\n")
	for _, root := range []struct {
		op  string
		def *ast.Definition
	}{{"query", s.Query}, {"mutation", s.Mutation}, {"subscription", s.Subscription}} {
		if root.def != nil {
			b.WriteString("  " + root.op + ": " + root.def.Name + "\n")
		}
	}
	b.WriteString("}\n\n")
	formatter.NewFormatter(&b, formatter.WithIndent("  ")).FormatSchema(s)
	return b.Bytes()
}
