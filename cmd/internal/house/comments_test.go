package house

import (
	"fmt"
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// A comment that names a Go identifier names one that exists. Comments outlive the code they
// describe: a renamed function leaves its old name in every comment that mentions it, and a
// reader who looks for it finds nothing. Three kinds of mention are checked in every comment of
// every package of the module (generated files aside):
//
//   - doc links, a name in square brackets (Name, Name.Member, pkg.Name, pkg.Name.Member) as
//     go/doc/comment reads them: the name must be declared in the package, or for pkg in the
//     package imported under that name, and the member must be a method or field of the type;
//   - names in backquotes that have the form of a Go identifier and not of a JSON field, a
//     column, a route or an environment variable: Type.Member or pkg.Name, where Type is a type
//     of the package or pkg a package it can name, and single words in camelCase or with two
//     capitals or more (readItems, PreparedState), which must be declared in the package as a
//     top-level name, a method or a field, or be a name of the function the comment documents
//     or sits in. A word the package also writes as a string (a JSON tag, a GraphQL field, a
//     query parameter) is taken for that and not checked;
//   - the first word of a declaration's doc comment, when it has the form of an identifier (a
//     lowercase first letter, or two capitals or more): it must be the declared name. Tests,
//     benchmarks, fuzz targets and examples are exempt: their comments state what they hold.
func TestComments_NameOnlyIdentifiersThatExist(t *testing.T) {
	m := loadModule(t, moduleRoot(t))
	if len(m.pkgs) < 10 {
		t.Fatalf("found %d packages; expected every package of the module", len(m.pkgs))
	}
	var problems []string
	for _, p := range m.pkgs {
		problems = append(problems, m.checkPackage(p)...)
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

// TestComments_TheCheckFindsEachKindOfStaleName runs the check on a small package of its own
// with one stale name of each kind, and one good name of each kind: it must report exactly the
// stale ones.
func TestComments_TheCheckFindsEachKindOfStaleName(t *testing.T) {
	dir := t.TempDir()
	src := `package sample

import "strings"

// Store keeps things; see [Store.Get], [strings.Builder], [limit] and [Store.putItem].
type Store struct {
	items map[string]int // read by ` + "`Store.Get`" + `, written by ` + "`putItem`" + `
	Max   int            ` + "`json:\"maxItems\"`" + `
}

const limit = 3

// PreparedState is where a thing stands: [Store.Fetch], [strings.Nope], [readAll] and
// [Store.fetch] are gone (s.items[key] is an index, [x](url) a link), and so are
// ` + "`readItems`" + ` and ` + "`Store.Lookup`" + `; ` + "`maxItems`" + ` is a JSON field and ` + "`user_id`" + ` a column.
func (s *Store) Get(key string) int { return s.items[key] }

// record stores an item under ` + "`key`" + `.
func (s *Store) putItem(key string, n int) { s.items[key] = n; _ = strings.ToUpper(key) }
`
	if err := os.WriteFile(filepath.Join(dir, "sample.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	m := loadModule(t, dir)
	var got []string
	for _, p := range m.pkgs {
		for _, problem := range m.checkPackage(p) {
			got = append(got, problem[strings.Index(problem, ": ")+2:])
		}
	}
	sort.Strings(got)
	want := []string{
		"`Store.Lookup` names no declared identifier",
		"`readItems` names no declared identifier",
		"doc comment of Get starts with PreparedState",
		"doc comment of putItem starts with record",
		"doc link [Store.Fetch] names no declared identifier",
		"doc link [Store.fetch] names no declared identifier",
		"doc link [readAll] names no declared identifier",
		"doc link [strings.Nope] names no declared identifier",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the check reported\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// goPackage is what the check knows of one package: its files and every name it declares.
type goPackage struct {
	name, dir, path string
	files           []*ast.File
	fileNames       []string
	top             map[string]bool            // top-level consts, vars, types and funcs
	types           map[string]bool            // the types among them
	members         map[string]map[string]bool // a type's methods and fields
	embeds          map[string][]string        // a type's embedded types of the same package
	open            map[string]bool            // types that embed another package's: any exported member
	literals        map[string]bool            // words the package writes in strings and tags
}

// module holds the module's packages and, loaded when a comment names them, others.
type module struct {
	root  string
	fset  *token.FileSet
	pkgs  []*goPackage
	paths map[string]*goPackage // by import path, the module's and the others loaded
	names map[string]string     // package names by import path, of every dependency
	dirs  map[string]string     // source folders by import path, of every dependency
}

// guessName is the name a package imported without one most likely has: its path's last
// element that is not a major version.
func guessName(importPath string) string {
	parts := strings.Split(importPath, "/")
	name := parts[len(parts)-1]
	if len(parts) > 1 && majorVersion.MatchString(name) {
		name = parts[len(parts)-2]
	}
	return strings.TrimPrefix(name, "go-")
}

// listDeps asks go list, once, for the name and folder of every package the module builds on.
func (m *module) listDeps() {
	m.names, m.dirs = map[string]string{}, map[string]string{}
	cmd := exec.Command("go", "list", "-e", "-test", "-deps", "-f", "{{.ImportPath}} {{.Name}} {{.Dir}}", "./...")
	cmd.Dir = m.root
	out, err := cmd.Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 3 {
			m.names[f[0]], m.dirs[f[0]] = f[1], f[2]
		}
	}
}

// loadModule parses every Go package under root (test files included, each external test
// package on its own), skipping generated files, testdata and dot folders.
func loadModule(t *testing.T, root string) *module {
	t.Helper()
	m := &module{root: root, fset: token.NewFileSet(), paths: map[string]*goPackage{}}
	modPath := "sample"
	if b, err := os.ReadFile(filepath.Join(root, "go.mod")); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 && f[0] == "module" {
			modPath = f[1]
		}
	}
	byKey := map[string]*goPackage{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(m.fset, p, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		dir := filepath.Dir(p)
		key := dir + "\x00" + f.Name.Name
		pkg := byKey[key]
		if pkg == nil {
			rel, _ := filepath.Rel(root, dir)
			pkg = &goPackage{name: f.Name.Name, dir: dir, path: path.Join(modPath, filepath.ToSlash(rel))}
			byKey[key] = pkg
			m.pkgs = append(m.pkgs, pkg)
		}
		rel, _ := filepath.Rel(root, p)
		pkg.files = append(pkg.files, f)
		pkg.fileNames = append(pkg.fileNames, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	m.listDeps()
	for _, p := range m.pkgs {
		p.index()
		if !strings.HasSuffix(p.name, "_test") {
			m.paths[p.path] = p
		}
	}
	return m
}

// index collects the names p declares.
func (p *goPackage) index() {
	p.top, p.types, p.members = map[string]bool{}, map[string]bool{}, map[string]map[string]bool{}
	p.embeds, p.open, p.literals = map[string][]string{}, map[string]bool{}, map[string]bool{}
	member := func(typ, name string) {
		if p.members[typ] == nil {
			p.members[typ] = map[string]bool{}
		}
		p.members[typ][name] = true
	}
	for _, f := range p.files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					p.top[d.Name.Name] = true
				} else if len(d.Recv.List) == 1 {
					member(receiverType(d.Recv.List[0].Type), d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							p.top[n.Name] = true
						}
					case *ast.TypeSpec:
						p.top[s.Name.Name], p.types[s.Name.Name] = true, true
						p.indexType(s.Name.Name, s.Type, member)
					}
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					for _, w := range wordsOf.FindAllString(s, -1) {
						p.literals[w] = true
					}
				}
			}
			return true
		})
	}
}

// wordsOf finds the identifier-like words of a string.
var wordsOf = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// indexType records the fields, interface methods and embedded types of the type named typ.
func (p *goPackage) indexType(typ string, e ast.Expr, member func(typ, name string)) {
	switch e := e.(type) {
	case *ast.StructType:
		for _, f := range e.Fields.List {
			if len(f.Names) == 0 {
				p.embed(typ, f.Type, member)
			}
			for _, n := range f.Names {
				member(typ, n.Name)
			}
		}
	case *ast.InterfaceType:
		for _, f := range e.Methods.List {
			if len(f.Names) == 0 {
				p.embed(typ, f.Type, member)
			}
			for _, n := range f.Names {
				member(typ, n.Name)
			}
		}
	case *ast.Ident, *ast.SelectorExpr, *ast.IndexExpr, *ast.IndexListExpr, *ast.StarExpr:
		p.embed(typ, e, member) // type T U: T has U's fields (not its methods, but close enough)
	}
}

// embed records that typ embeds e: its members by name, and then e's own when e is a type of
// the package; a type from another package leaves typ's exported members open.
func (p *goPackage) embed(typ string, e ast.Expr, member func(typ, name string)) {
	name := receiverType(e)
	if name == "" {
		p.open[typ] = true
		return
	}
	member(typ, name)
	if _, foreign := unstar(e).(*ast.SelectorExpr); foreign {
		p.open[typ] = true
		return
	}
	p.embeds[typ] = append(p.embeds[typ], name)
}

// unstar drops a pointer and type arguments from a type expression.
func unstar(e ast.Expr) ast.Expr {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		default:
			return e
		}
	}
}

// receiverType is the name of a receiver's or embedded field's type: T for T, *T, T[X], pkg.T.
func receiverType(e ast.Expr) string {
	switch x := unstar(e).(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return x.Sel.Name
	}
	return ""
}

// hasMember reports whether typ, or a type it embeds, has the method or field name. A type of
// another package promotes only exported names, which are not checked.
func (p *goPackage) hasMember(typ, name string, depth int) bool {
	if p.members[typ][name] || p.open[typ] && token.IsExported(name) {
		return true
	}
	if depth < 5 {
		for _, e := range p.embeds[typ] {
			if p.hasMember(e, name, depth+1) {
				return true
			}
		}
	}
	return false
}

// load returns the package at importPath: the module's, or another read from its source
// folder as `go list` finds it. It returns nil for a path go list does not know.
func (m *module) load(importPath string) *goPackage {
	if p, ok := m.paths[importPath]; ok {
		return p
	}
	m.paths[importPath] = nil
	dir, ok := m.dirs[importPath]
	if !ok {
		cmd := exec.Command("go", "list", "-f", "{{.Dir}}", importPath)
		cmd.Dir = m.root
		out, err := cmd.Output()
		if err != nil {
			return nil
		}
		dir = strings.TrimSpace(string(out))
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	p := &goPackage{dir: dir, path: importPath}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(m.fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			continue
		}
		if p.name == "" {
			p.name = f.Name.Name
		}
		if f.Name.Name == p.name {
			p.files = append(p.files, f)
		}
	}
	p.index()
	m.paths[importPath] = p
	return p
}

// siblings are the packages whose names a comment in p may use unqualified: p itself, and for an
// external test package the package it tests.
func (m *module) siblings(p *goPackage) []*goPackage {
	out := []*goPackage{p}
	if base, ok := strings.CutSuffix(p.name, "_test"); ok {
		for _, q := range m.pkgs {
			if q.dir == p.dir && q.name == base {
				out = append(out, q)
			}
		}
	}
	return out
}

// imports maps the names a file may use for packages to their import paths: its imports, then
// every package of the module by its name.
func (m *module) imports(f *ast.File) map[string]string {
	names := map[string]string{}
	for _, p := range m.pkgs {
		if !strings.HasSuffix(p.name, "_test") {
			names[p.name] = p.path
		}
	}
	for _, s := range f.Imports {
		ip, _ := strconv.Unquote(s.Path.Value)
		name := m.names[ip]
		if s.Name != nil {
			name = s.Name.Name
		} else if name == "" {
			name = guessName(ip)
		}
		if name != "" && name != "_" && name != "." {
			names[name] = ip
		}
	}
	return names
}

// checkPackage reports every comment of p that names an identifier that does not exist, as
// "file:line: what".
func (m *module) checkPackage(p *goPackage) []string {
	var problems []string
	own := m.siblings(p)
	declared := func(name string) bool {
		for _, q := range own {
			if q.top[name] {
				return true
			}
		}
		return types.Universe.Lookup(name) != nil
	}
	member := func(typ, name string) bool {
		for _, q := range own {
			if q.top[typ] && q.hasMember(typ, name, 0) {
				return true
			}
		}
		return false
	}
	isType := func(name string) bool {
		for _, q := range own {
			if q.types[name] {
				return true
			}
		}
		return false
	}
	asString := func(name string) bool {
		for _, q := range own {
			if q.literals[name] {
				return true
			}
		}
		return false
	}
	for i, f := range p.files {
		file := p.fileNames[i]
		imports := m.imports(f)
		report := func(pos token.Pos, format string, args ...any) {
			problems = append(problems, file+":"+strconv.Itoa(m.fset.Position(pos).Line)+": "+fmt.Sprintf(format, args...))
		}
		for _, d := range f.Decls {
			if name, doc := declDoc(d); doc != nil {
				if w := firstWord(doc.Text()); w != "" && w != name && (looksLikeGo(w) || lowerFirst.MatchString(w)) && !testFunc.MatchString(name) {
					report(doc.Pos(), "doc comment of %s starts with %s", name, w)
				}
			}
		}
		for _, cg := range f.Comments {
			text := cg.Text()
			locals := localsAround(f, cg)
			pr := comment.Parser{
				LookupPackage: func(name string) (string, bool) {
					ip, ok := imports[name]
					return ip, ok
				},
				LookupSym: func(recv, name string) bool { return true },
			}
			links, plain := docLinks(pr.Parse(text))
			for _, l := range links {
				ok := false
				switch {
				case l.ImportPath != "":
					q := m.load(l.ImportPath)
					ok = q != nil && (l.Name == "" || l.Recv == "" && q.top[l.Name] || l.Recv != "" && q.top[l.Recv] && q.hasMember(l.Recv, l.Name, 0))
				case l.Recv == "":
					ok = declared(l.Name)
				default:
					ok = member(l.Recv, l.Name)
				}
				if !ok {
					report(lineOf(cg, linkText(l)), "doc link [%s] names no declared identifier", linkText(l))
				}
			}
			for _, t := range plain {
				for _, name := range unexportedLinks(t) {
					parts := strings.Split(name, ".")
					ok := len(parts) == 1 && declared(name) || len(parts) == 2 && member(parts[0], parts[1])
					if !ok {
						report(lineOf(cg, "["+name+"]"), "doc link [%s] names no declared identifier", name)
					}
				}
			}
			for _, q := range backquoted.FindAllStringSubmatch(text, -1) {
				name := strings.TrimSuffix(q[1], "()")
				if !goName.MatchString(name) || fileName.MatchString(name) {
					continue
				}
				parts := strings.Split(name, ".")
				ok := true
				switch {
				case len(parts) == 1:
					if looksLikeGo(name) && !asString(name) {
						ok = declared(name) || locals[name] || memberOfAny(own, name)
					}
				case isType(parts[0]) && !declaredPackage(imports, parts[0]):
					ok = member(parts[0], parts[1]) || asString(parts[1])
				default:
					ip, isPkg := imports[parts[0]]
					if !isPkg {
						break // a variable's field, a GraphQL type's field: not checked
					}
					q := m.load(ip)
					ok = q == nil || q.top[parts[1]] && (len(parts) < 3 || q.hasMember(parts[1], parts[2], 0))
				}
				if !ok {
					report(lineOf(cg, "`"+q[1]+"`"), "`%s` names no declared identifier", q[1])
				}
			}
		}
	}
	return problems
}

// declaredPackage reports whether name is a package a file can name.
func declaredPackage(imports map[string]string, name string) bool {
	_, ok := imports[name]
	return ok
}

// memberOfAny reports whether name is a method or field of some type of the packages.
func memberOfAny(pkgs []*goPackage, name string) bool {
	for _, p := range pkgs {
		for _, ms := range p.members {
			if ms[name] {
				return true
			}
		}
	}
	return false
}

var (
	// backquoted finds `text` in a comment.
	backquoted = regexp.MustCompile("`([^`\n]+)`")
	// goName is the form of a Go name, qualified or not: x, x.Y, x.Y.Z, with an optional ().
	goName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2}$`)
	// fileName is the form of a file's name: main.go, openapi.yaml.
	fileName = regexp.MustCompile(`\.(go|ya?ml|md|sql|templ|css|js|json|graphqls?|mod|sum|txt|png|key|log|token|receipts|db|html|sh|p)$`)
	// camelCase is a lowercase word with a capital inside (queryNFTs); multiCaps a word with
	// two or more capitals and a lowercase letter (PreparedState, NFTPageMix). Underscores mark a
	// column or a constant of another language, not a Go name.
	camelCase = regexp.MustCompile(`^[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*$`)
	multiCaps = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*[A-Z][A-Za-z0-9]*$`)
	lowercase = regexp.MustCompile(`[a-z]`)
	// bracketed is a name in square brackets; lowerPart a name with an unexported part.
	bracketed = regexp.MustCompile(`\[([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?)\]`)
	lowerPart = regexp.MustCompile(`(^|\.)[a-z_]`)
	// lowerFirst is a word that starts in lowercase; testFunc the name of a test, a benchmark,
	// a fuzz target or an example.
	lowerFirst = regexp.MustCompile(`^[a-z]`)
	testFunc   = regexp.MustCompile(`^(Test|Benchmark|Fuzz|Example)`)
	// majorVersion is the last element of a module path of major version 2 or more.
	majorVersion = regexp.MustCompile(`^v[0-9]+$`)
)

// looksLikeGo reports whether a single word has the form of a Go identifier rather than of an
// English word or an acronym.
func looksLikeGo(w string) bool {
	return camelCase.MatchString(w) || multiCaps.MatchString(w) && lowercase.MatchString(w)
}

// firstWord is the first word of a doc comment, without a trailing punctuation mark and without
// a receiver's type in front of a method's name.
func firstWord(text string) string {
	f := strings.Fields(text)
	if len(f) == 0 {
		return ""
	}
	w := strings.TrimRight(f[0], ",:;.")
	if i := strings.LastIndexByte(w, '.'); i >= 0 {
		w = w[i+1:]
	}
	if !goName.MatchString(w) {
		return ""
	}
	return w
}

// declDoc returns the name a declaration declares and its doc comment, for a function, a
// method, and a const, var or type declaration of one name.
func declDoc(d ast.Decl) (string, *ast.CommentGroup) {
	switch d := d.(type) {
	case *ast.FuncDecl:
		return d.Name.Name, d.Doc
	case *ast.GenDecl:
		if len(d.Specs) != 1 || d.Lparen.IsValid() {
			return "", nil
		}
		switch s := d.Specs[0].(type) {
		case *ast.TypeSpec:
			return s.Name.Name, d.Doc
		case *ast.ValueSpec:
			if len(s.Names) == 1 {
				return s.Names[0].Name, d.Doc
			}
		}
	}
	return "", nil
}

// localsAround collects the names used in the function a comment documents or sits in.
func localsAround(f *ast.File, cg *ast.CommentGroup) map[string]bool {
	names := map[string]bool{}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || cg.Pos() < fd.Pos() && fd.Doc != cg || cg.Pos() > fd.End() {
			continue
		}
		ast.Inspect(fd, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				names[id.Name] = true
			}
			return true
		})
	}
	return names
}

// docLinks lists the doc links of a parsed comment, and the plain text around them (code blocks
// left out).
func docLinks(d *comment.Doc) ([]*comment.DocLink, []string) {
	var links []*comment.DocLink
	var plain []string
	var walk func(ts []comment.Text)
	walk = func(ts []comment.Text) {
		for _, t := range ts {
			switch t := t.(type) {
			case *comment.DocLink:
				links = append(links, t)
			case *comment.Link:
				walk(t.Text)
			case comment.Plain:
				plain = append(plain, string(t))
			case comment.Italic:
				plain = append(plain, string(t))
			}
		}
	}
	for _, b := range d.Content {
		switch b := b.(type) {
		case *comment.Paragraph:
			walk(b.Text)
		case *comment.Heading:
			walk(b.Text)
		case *comment.List:
			for _, it := range b.Items {
				for _, c := range it.Content {
					if p, ok := c.(*comment.Paragraph); ok {
						walk(p.Text)
					}
				}
			}
		}
	}
	return links, plain
}

// unexportedLinks finds the doc links go/doc/comment leaves as text because they name an
// unexported identifier (a lowercase name, or Type.method, in square brackets): such a name, not
// right after a word or a closing bracket (an index such as us[i]) nor before a parenthesis
// or a bracket (a Markdown link, a type argument).
func unexportedLinks(plain string) []string {
	var names []string
	for _, m := range bracketed.FindAllStringSubmatchIndex(plain, -1) {
		name := plain[m[2]:m[3]]
		before, after := byte(' '), byte(' ')
		if m[0] > 0 {
			before = plain[m[0]-1]
		}
		if m[1] < len(plain) {
			after = plain[m[1]]
		}
		if isWordByte(before) || before == ']' || isWordByte(after) || after == '(' || after == '[' {
			continue
		}
		if lowerPart.MatchString(name) {
			names = append(names, name)
		}
	}
	return names
}

// isWordByte reports whether b is a letter, a digit or an underscore.
func isWordByte(b byte) bool {
	return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

// linkText is a doc link as written, without its brackets.
func linkText(l *comment.DocLink) string {
	var b strings.Builder
	for _, t := range l.Text {
		if p, ok := t.(comment.Plain); ok {
			b.WriteString(string(p))
		}
	}
	return b.String()
}

// lineOf is the position of the first line of cg holding s, or of cg when none does.
func lineOf(cg *ast.CommentGroup, s string) token.Pos {
	for _, c := range cg.List {
		if strings.Contains(c.Text, s) {
			return c.Pos()
		}
	}
	return cg.Pos()
}
