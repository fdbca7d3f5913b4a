// Package fastpathgen is a gqlgen plugin that writes the per-type part of graph's fast path
// (graph/nftpage_fast_gen.go): for each type the fast path answers, the method that writes an
// object of it, field by field, and the Query root's fields it answers. Each field is written
// from gqlgen's own binding of it in the same generation run: a resolver, a method or a field
// of the model, under its Go name, its value through the writer of its scalar or enum, and its
// arguments through the unmarshalers gqlgen generates for them.
//
// The writers themselves (fastAnswer's object, list, str, integer, amount, ...) are written by
// hand in graph/nftpage_fast.go. A field of a fast type whose type has no writer here, or whose
// binding the generator cannot write (a map model, a directive, a field of a type the fast
// path does not answer), fails the generation: a new field is either written as the executor
// writes it or not generated at all.
package fastpathgen

import (
	"bytes"
	"fmt"
	"go/format"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/codegen"
	"github.com/99designs/gqlgen/codegen/config"
	"github.com/vektah/gqlparser/v2/ast"
)

// rootFields are the fields of the Query root the fast path answers.
var rootFields = []string{"collection", "collections", "nft"}

// fastTypes are the types the fast path writes every field of, those in excluded aside.
var fastTypes = []string{"Collection", "CollectionConnection", "CollectionEdge", "MintPhase",
	"NFTConnection", "NFTEdge", "NFT", "Trait", "Listing", "BestOffer", "PageInfo"}

// excluded are the fields of fast types the fast path leaves to the executor: NFT.history
// batches a statement per page across the NFTs' concurrent resolvers.
var excluded = map[string]bool{"NFT.history": true}

// calls are the fields the fast path reads through another function than gqlgen's binding:
// Collection.nfts reads its page with the resolver's collectionNFTs, without the NFTs'
// histories that Nfts primes for NFT.history, which the fast path never writes. Each function
// takes what the binding's resolver takes and returns, before its error, the field's value
// and discarded more values.
var calls = map[string]call{
	"Collection.nfts": {fn: "a.r.collectionNFTs", discarded: 1},
}

type call struct {
	fn        string
	discarded int
}

// writers are the fastAnswer methods that write a scalar's value, by the function gqlgen
// marshals it with: each writes the bytes that function's marshaler does.
var writers = map[string]string{
	"github.com/99designs/gqlgen/graphql.MarshalString":  "str",
	"github.com/99designs/gqlgen/graphql.MarshalID":      "id",
	"github.com/99designs/gqlgen/graphql.MarshalInt":     "integer",
	"github.com/99designs/gqlgen/graphql.MarshalBoolean": "boolean",
	"marketd/graph.MarshalDecimal":                       "amount",
	"marketd/graph.MarshalUnixTime":                      "time",
	"marketd/graph.MarshalNFTGlobalID":                   "nftID",
}

// Plugin writes the fast path's types to Filename, in the exec package's directory.
type Plugin struct {
	Filename string
}

// New is the plugin writing graph/nftpage_fast_gen.go.
func New() *Plugin { return &Plugin{Filename: "nftpage_fast_gen.go"} }

func (*Plugin) Name() string { return "fastpathgen" }

// GenerateCode writes the file from the data gqlgen built for its executor.
func (p *Plugin) GenerateCode(data *codegen.Data) error {
	if data.Config.UseFunctionSyntaxForExecutionContext {
		return fmt.Errorf("use_function_syntax_for_execution_context is set: the fast path calls the unmarshalers as methods of the execution context")
	}
	g := &gen{data: data, pkg: data.Config.Exec.ImportPath(), imports: map[string]string{}, objects: map[string]*codegen.Object{}, bySel: map[string]bool{}}
	for _, o := range data.Objects {
		g.objects[o.Name] = o
	}
	src, err := g.file()
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(data.Config.Exec.Dir(), p.Filename), src, 0o644)
}

type gen struct {
	data    *codegen.Data
	pkg     string            // the exec package's import path
	imports map[string]string // path to name
	objects map[string]*codegen.Object
	body    bytes.Buffer
	vars    int // for names of values unique within a method
	// bySel are the types whose objects a field writes from a selection set (write<Type>);
	// a type only ever written as a list's element needs write<Type>Fields alone.
	bySel map[string]bool
}

func (g *gen) printf(format string, args ...any) { fmt.Fprintf(&g.body, format, args...) }

func (g *gen) file() ([]byte, error) {
	g.imports["github.com/99designs/gqlgen/graphql"] = "graphql"
	g.imports["github.com/vektah/gqlparser/v2/ast"] = "ast"

	fields := []string{"Node.id"} // an NFT's or a collection's id asked through a fragment on Node
	for _, name := range rootFields {
		fields = append(fields, "Query."+name)
	}
	g.printf("// fastTypes are the types the fast path writes every field of, those it leaves to the\n// executor aside: %s.\n", strings.Join(sortedKeys(excluded), ", "))
	g.printf("var fastTypes = %#v\n\n", fastTypes)

	if err := g.root(); err != nil {
		return nil, err
	}
	methods := make([][]byte, len(fastTypes))
	for i, name := range fastTypes {
		o := g.objects[name]
		if o == nil {
			return nil, fmt.Errorf("fast type %s is not an object of the schema", name)
		}
		for _, f := range o.Fields {
			if !strings.HasPrefix(f.Name, "__") && !excluded[name+"."+f.Name] {
				fields = append(fields, name+"."+f.Name)
			}
		}
		body := g.body
		g.body = bytes.Buffer{}
		if err := g.object(o); err != nil {
			return nil, err
		}
		methods[i] = bytes.Clone(g.body.Bytes())
		g.body = body
	}
	for i, name := range fastTypes {
		o := g.objects[name]
		g.printf("var fast%sImplementors = %s\n\n", o.Name, o.Implementors())
		if g.bySel[name] {
			g.printf("func (a *fastAnswer) write%s(sel ast.SelectionSet, obj %s) bool {\n", o.Name, g.typ(o.Reference()))
			g.printf("fields, ok := a.fields(sel, fast%sImplementors)\nif !ok {\nreturn false\n}\nreturn a.write%sFields(fields, obj)\n}\n\n", o.Name, o.Name)
		}
		g.body.Write(methods[i])
	}
	for name := range excluded {
		typ, field, _ := strings.Cut(name, ".")
		if o := g.objects[typ]; o == nil || !o.HasField(field) {
			return nil, fmt.Errorf("excluded field %s is not in the schema", name)
		}
	}
	for name := range calls {
		if excluded[name] || !slices.Contains(fields, name) {
			return nil, fmt.Errorf("the call for %s names no field the fast path writes", name)
		}
	}
	sort.Strings(fields)

	var out bytes.Buffer
	out.WriteString("// Code generated by graph/internal/fastpathgen from the schema and gqlgen's bindings; DO NOT EDIT.\n\npackage " + g.data.Config.Exec.Package + "\n\nimport (\n")
	for _, path := range sortedKeys(g.imports) {
		fmt.Fprintf(&out, "\t%s %q\n", g.imports[path], path)
	}
	out.WriteString(")\n\n")
	out.WriteString("// fastFields are the fields (Type.field) the fast path writes.\nvar fastFields = map[string]bool{\n")
	for _, f := range fields {
		fmt.Fprintf(&out, "\t%q: true,\n", f)
	}
	out.WriteString("}\n\n")
	out.WriteString(`// fastExec is the executor's context a fast answer coerces arguments in, made at its first.
type fastExec struct{ ec *executionContext }

func (a *fastAnswer) exec() *executionContext {
	if a.ec.ec == nil {
		a.ec.ec = newExecutionContext(a.oc, a.es.(*executableSchema), nil)
	}
	return a.ec.ec
}

`)
	out.Write(g.body.Bytes())
	src, err := format.Source(out.Bytes())
	if err != nil {
		return nil, fmt.Errorf("formatting the generated fast path: %w\n%s", err, out.Bytes())
	}
	return src, nil
}

// root writes writeQuery, the Query root's fields the fast path answers.
func (g *gen) root() error {
	q := g.data.QueryRoot
	if q == nil {
		return fmt.Errorf("the schema has no Query")
	}
	g.printf("var fastQueryImplementors = %s\n\n", q.Implementors())
	g.printf("// writeQuery writes the data of a query whose fields are all Query's fast ones.\n")
	g.printf("func (a *fastAnswer) writeQuery(sel ast.SelectionSet) bool {\n")
	g.printf("fields, ok := a.fields(sel, fastQueryImplementors)\nif !ok {\nreturn false\n}\n")
	g.printf("return a.object(fields, func(f *graphql.CollectedField) bool {\nswitch f.Name {\n")
	g.printf("case \"__typename\":\na.str(%q)\n", q.Name)
	for _, name := range rootFields {
		var field *codegen.Field
		for _, f := range q.Fields {
			if f.Name == name {
				field = f
			}
		}
		if field == nil {
			return fmt.Errorf("Query has no field %s", name)
		}
		if err := g.field(field); err != nil {
			return err
		}
	}
	g.printf("default:\nreturn false\n}\nreturn true\n})\n}\n\n")
	return nil
}

// object writes write<Type>Fields, an object of o from its fields as collected (the elements
// of a list share them); write<Type> collects them from a selection set first.
func (g *gen) object(o *codegen.Object) error {
	if o.IsMap() {
		return fmt.Errorf("%s: a map model has no fast writer", o.Name)
	}
	obj := g.typ(o.Reference())
	g.printf("func (a *fastAnswer) write%sFields(fields []graphql.CollectedField, obj %s) bool {\n", o.Name, obj)
	g.printf("return a.object(fields, func(f *graphql.CollectedField) bool {\nswitch f.Name {\n")
	g.printf("case \"__typename\":\na.str(%q)\n", o.Name)
	for _, f := range o.Fields {
		if strings.HasPrefix(f.Name, "__") || excluded[o.Name+"."+f.Name] {
			continue
		}
		if err := g.field(f); err != nil {
			return err
		}
	}
	g.printf("default:\nreturn false\n}\nreturn true\n})\n}\n\n")
	return nil
}

// field writes the case of one field: its arguments, its value, and the value written.
func (g *gen) field(f *codegen.Field) error {
	name := f.Object.Name + "." + f.Name
	g.vars = 0
	switch {
	case f.IsBatch():
		return fmt.Errorf("%s: a batch resolver has no fast writer", name)
	case f.Stream:
		return fmt.Errorf("%s: a stream has no fast writer", name)
	case len(f.ImplDirectives()) > 0:
		return fmt.Errorf("%s: a field with directives has no fast writer", name)
	case f.IsMap():
		return fmt.Errorf("%s: a map model has no fast writer", name)
	case f.HasHaser:
		return fmt.Errorf("%s: a field with a haser has no fast writer", name)
	}
	g.printf("case %q:\n", f.Name)
	var args []string
	if len(f.Args) > 0 {
		g.printf("raw := f.ArgumentMap(a.oc.Variables)\n")
		for i, arg := range f.Args {
			if len(arg.ImplDirectives()) > 0 {
				return fmt.Errorf("%s(%s): an argument with directives has no fast writer", name, arg.Name)
			}
			v := fmt.Sprintf("arg%d", i)
			g.printf("%s, err := graphql.ProcessArgField(a.ctx, raw, %q, a.exec().%s)\nif err != nil {\nreturn false\n}\n", v, arg.Name, arg.TypeReference.UnmarshalFunc())
			args = append(args, v)
		}
	}
	value := "v"
	switch {
	case f.IsResolver:
		callee := fmt.Sprintf("a.r.%s().%s", f.Object.Name, f.GoFieldName)
		results := "v"
		if c, ok := calls[name]; ok {
			callee = c.fn
			results += strings.Repeat(", _", c.discarded)
		}
		in := []string{"a.ctx"}
		if !f.Object.Root {
			in = append(in, "obj")
		}
		g.printf("%s, err := %s(%s)\nif err != nil {\nreturn false\n}\n", results, callee, strings.Join(append(in, args...), ", "))
	case f.IsMethod():
		if f.VOkFunc {
			return fmt.Errorf("%s: a method of (value, ok) has no fast writer", name)
		}
		if _, ok := calls[name]; ok {
			return fmt.Errorf("%s: a call for a field that is not a resolver's", name)
		}
		var in []string
		if f.MethodHasContext {
			in = append(in, "a.ctx")
		}
		invocation := fmt.Sprintf("obj.%s(%s)", f.GoFieldName, strings.Join(append(in, args...), ", "))
		if f.NoErr {
			value = invocation
		} else {
			g.printf("v, err := %s\nif err != nil {\nreturn false\n}\n", invocation)
		}
	case f.IsVariable():
		if _, ok := calls[name]; ok {
			return fmt.Errorf("%s: a call for a field that is not a resolver's", name)
		}
		value = "obj." + f.GoFieldName
	default:
		return fmt.Errorf("%s: gqlgen binds it to nothing the fast path can read", name)
	}
	return g.value(name, f.TypeReference, value, "f.Selections")
}

// value writes the statements that write v, of type ref, returning false where the executor
// would answer with an error: a null where the schema says non-null, or an element's error.
func (g *gen) value(name string, ref *config.TypeReference, v, sel string) error {
	nullable := !ref.GQL.NonNull
	if ref.IsSlice() {
		if ref.IsPtrToSlice() {
			return fmt.Errorf("%s: a pointer to a list has no fast writer", name)
		}
		if nullable {
			g.printf("if %s == nil {\na.null()\n} else {\n", v)
		}
		if err := g.list(name, ref, v, sel); err != nil {
			return err
		}
		if nullable {
			g.printf("}\n")
		}
		return nil
	}
	if ref.Definition == nil {
		return fmt.Errorf("%s: a type with no definition", name)
	}
	ptr := ref.IsPtr()
	if ref.IsPtrToPtr() || ref.IsPtrToIntf() {
		return fmt.Errorf("%s: %s has no fast writer", name, ref.GO)
	}
	if ptr {
		v = g.addressable(v)
	}
	switch ref.Definition.Kind {
	case ast.Object:
		if _, ok := g.fast(ref.Definition.Name); !ok {
			return fmt.Errorf("%s: %s is not a type the fast path writes", name, ref.Definition.Name)
		}
		if !ptr {
			v = "&" + g.addressable(v)
		}
		g.bySel[ref.Definition.Name] = true
		write := fmt.Sprintf("a.write%s(%s, %s)", ref.Definition.Name, sel, v)
		switch {
		case !ptr:
			g.printf("if !%s {\nreturn false\n}\n", write)
		case nullable:
			g.printf("if %s == nil {\na.null()\n} else if !%s {\nreturn false\n}\n", v, write)
		default:
			g.printf("if %s == nil || !%s {\nreturn false\n}\n", v, write)
		}
		return nil
	case ast.Scalar, ast.Enum:
		write, err := g.scalar(name, ref)
		if err != nil {
			return err
		}
		switch {
		case !ptr:
			g.printf("%s\n", fmt.Sprintf(write, v))
		case nullable:
			g.printf("if %s == nil {\na.null()\n} else {\n%s\n}\n", v, fmt.Sprintf(write, "*"+v))
		default:
			g.printf("if %s == nil {\nreturn false\n}\n%s\n", v, fmt.Sprintf(write, "*"+v))
		}
		return nil
	default:
		return fmt.Errorf("%s: a field of an %s has no fast writer", name, ref.Definition.Kind)
	}
}

// list writes a list of v's elements; an object's fields are collected once for them all.
func (g *gen) list(name string, ref *config.TypeReference, v, sel string) error {
	elem := ref.Elem()
	if elem.IsSlice() || elem.Definition == nil {
		return fmt.Errorf("%s: a list of lists has no fast writer", name)
	}
	v = g.addressable(v)
	item := v + "[j]"
	if elem.Definition.Kind == ast.Object {
		o, ok := g.fast(elem.Definition.Name)
		if !ok {
			return fmt.Errorf("%s: %s is not a type the fast path writes", name, elem.Definition.Name)
		}
		fields := g.local("fields")
		g.printf("%s, ok := a.fields(%s, fast%sImplementors)\nif !ok {\nreturn false\n}\n", fields, sel, o.Name)
		write := fmt.Sprintf("a.write%sFields(%s, ", o.Name, fields)
		var each string
		switch {
		case !elem.IsPtr():
			each = "return " + write + "&" + item + ")"
		case elem.GQL.NonNull:
			each = fmt.Sprintf("return %s != nil && %s%s)", item, write, item)
		default:
			each = fmt.Sprintf("if %s == nil {\na.null()\nreturn true\n}\nreturn %s%s)", item, write, item)
		}
		g.printf("if !a.list(len(%s), func(j int) bool {\n%s\n}) {\nreturn false\n}\n", v, each)
		return nil
	}
	g.printf("if !a.list(len(%s), func(j int) bool {\n", v)
	if err := g.value(name, elem, item, "nil"); err != nil {
		return err
	}
	g.printf("return true\n}) {\nreturn false\n}\n")
	return nil
}

// scalar is the call (a format of the value) that writes a value of ref's scalar or enum as
// its marshaler does.
func (g *gen) scalar(name string, ref *config.TypeReference) (string, error) {
	if ref.IsMarshaler || ref.Marshaler == nil {
		return "", fmt.Errorf("%s: no fast writer for %s (%s marshals itself)", name, ref.Definition.Name, ref.GO)
	}
	if ref.CastType != nil {
		return "", fmt.Errorf("%s: no fast writer for %s cast to %s", name, ref.Definition.Name, ref.CastType)
	}
	marshaler := ref.Marshaler.Pkg().Path() + "." + ref.Marshaler.Name()
	writer, ok := writers[marshaler]
	if !ok {
		return "", fmt.Errorf("%s: no fast writer for %s (marshaled by %s): add one to fastAnswer and to fastpathgen's writers", name, ref.Definition.Name, marshaler)
	}
	if ref.HasEnumValues() {
		if writer != "str" {
			return "", fmt.Errorf("%s: no fast writer for the enum %s marshaled by %s", name, ref.Definition.Name, marshaler)
		}
		// The enum's value is the string its generated table maps the Go value to.
		return "a.str(" + ref.EnumMarshalVar(false) + "[%s])", nil
	}
	return "a." + writer + "(%s)", nil
}

// addressable is v, or a local holding it when v is a call.
func (g *gen) addressable(v string) string {
	if !strings.Contains(v, "(") {
		return v
	}
	local := g.local("x")
	g.printf("%s := %s\n", local, v)
	return local
}

func (g *gen) local(prefix string) string {
	g.vars++
	if g.vars == 1 {
		return prefix
	}
	return prefix + strconv.Itoa(g.vars)
}

func (g *gen) fast(name string) (*codegen.Object, bool) {
	if !slices.Contains(fastTypes, name) {
		return nil, false
	}
	o, ok := g.objects[name]
	return o, ok
}

// typ is t as the exec package spells it, its packages imported.
func (g *gen) typ(t types.Type) string {
	return types.TypeString(t, func(p *types.Package) string {
		if p.Path() == g.pkg {
			return ""
		}
		g.imports[p.Path()] = p.Name()
		return p.Name()
	})
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
