package graph

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"marketd/store/storetest"
)

// The schema the endpoint serves is the one graph/*.graphqls states: the files as they are on
// disk, loaded and printed the way GET /graphql/schema.graphql prints, give the served document
// byte for byte, and so does SchemaSDL, which a release publishes. The clients' breaking-change
// check reads those files, so a schema file the generated executor does not hold (a new file
// before go generate, one deleted after) fails here.
func TestSchemaSDL_ServedIsTheSchemaFilesAsPrinted(t *testing.T) {
	names, err := filepath.Glob("*.graphqls")
	if err != nil || len(names) == 0 {
		t.Fatalf("schema files: %v %v", names, err)
	}
	var sources []*ast.Source
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, &ast.Source{Name: name, Input: string(b)})
	}
	files, gerr := gqlparser.LoadSchema(sources...)
	if gerr != nil {
		t.Fatalf("graph/*.graphqls do not load: %v", gerr)
	}
	want := schemaSDL(files)

	g := newTestGraph(t, storetest.Backends()[0], 0) // the schema is the same on every store
	res, err := http.Get(g.http.URL + "/graphql/schema.graphql")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	served, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /graphql/schema.graphql: %d %.200s", res.StatusCode, served)
	}
	if line, got, exp := firstDifference(served, want); line != 0 {
		t.Errorf("the served SDL differs from graph/*.graphqls as printed at line %d:\nserved: %q\nfiles:  %q", line, got, exp)
	}
	if !bytes.Equal(SchemaSDL(), served) {
		t.Error("SchemaSDL, what a release publishes, differs from the served SDL")
	}
}

// firstDifference is the first line (from 1) where a and b differ, with both lines; 0 when
// they are equal.
func firstDifference(a, b []byte) (line int, lineA, lineB string) {
	if bytes.Equal(a, b) {
		return 0, "", ""
	}
	as, bs := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; ; i++ {
		var x, y string
		if i < len(as) {
			x = as[i]
		}
		if i < len(bs) {
			y = bs[i]
		}
		if x != y || i >= len(as) || i >= len(bs) {
			return i + 1, x, y
		}
	}
}
