package rest

import (
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"marketd/store"
)

// storeCodes reads every error code the store declares (the constants of type Code in
// store/errors.go), so a code added there and forgotten here fails the test below.
func storeCodes(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(gotoken.NewFileSet(), "../store/errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || vs.Type == nil || len(vs.Values) != 1 {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
			return true
		}
		if lit, ok := vs.Values[0].(*ast.BasicLit); ok {
			code, _ := strconv.Unquote(lit.Value)
			codes = append(codes, code)
		}
		return true
	})
	if len(codes) < 20 {
		t.Fatalf("found %d codes in store/errors.go; the parse lost its way", len(codes))
	}
	slices.Sort(codes)
	return codes
}

// The introduction's error table, the Problem schema's code enum, the store's codes and the
// status each is answered with all agree.
func TestOpenAPI_ErrorTableListsEveryCodeWithItsStatus(t *testing.T) {
	doc := openAPIKinDoc(t)
	row := regexp.MustCompile("(?m)^\\| ([0-9]{3}) \\| `([a-z_]+)` \\|")
	var table []string
	for _, m := range row.FindAllStringSubmatch(doc.Info.Description, -1) {
		status, _ := strconv.Atoi(m[1])
		table = append(table, m[2])
		if got := statusOf(store.Code(m[2])); got != status {
			t.Errorf("the table answers %s with %d; the API answers it with %d", m[2], status, got)
		}
	}
	slices.Sort(table)
	var enum []string
	for _, v := range doc.Components.Schemas["Problem"].Value.Properties["code"].Value.Enum {
		enum = append(enum, v.(string))
	}
	slices.Sort(enum)
	codes := storeCodes(t)
	if !slices.Equal(table, codes) {
		t.Errorf("error table codes\n  %v\nstore codes\n  %v", table, codes)
	}
	if !slices.Equal(enum, codes) {
		t.Errorf("Problem.code enum\n  %v\nstore codes\n  %v", enum, codes)
	}
}
