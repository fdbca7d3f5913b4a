package house

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The top-level README is what a newcomer reads first, so it stays short and starts with what
// they type: the service on the embedded store, then the whole test suite, the same command CI
// runs. Its code map comes early, and names every directory that holds code.
func TestREADME_StartsWithTheFirstCommandsAndMapsTheCodeEarly(t *testing.T) {
	root := moduleRoot(t)
	readme := readText(t, filepath.Join(root, "README.md"))
	lines := strings.Split(strings.TrimRight(readme, "\n"), "\n")
	if len(lines) > 400 {
		t.Errorf("README.md has %d lines; it is the newcomer's first page: at most 400, the rest in the packages' READMEs", len(lines))
	}
	block := firstCodeBlock(readme)
	first := []string{"MARKETD_DEV=1 go run ./cmd/marketd serve", "go test ./..."}
	if len(block) != len(first) {
		t.Fatalf("README.md's first code block is %q; want the two commands %q", block, first)
	}
	for i, cmd := range first {
		if got := strings.TrimSpace(strings.SplitN(block[i], "#", 2)[0]); got != cmd {
			t.Errorf("README.md's first code block, line %d: %q, want %q", i+1, got, cmd)
		}
	}
	ci := readText(t, filepath.Join(root, ".ci", "run"))
	if !regexp.MustCompile(`(?m)^go test \./\.\.\.$`).MatchString(ci) {
		t.Error(".ci/run does not run the README's test command, `go test ./...`, on a line of its own")
	}
	mapAt := -1
	for i, l := range lines {
		if l == "## Code map" {
			mapAt = i + 1
			break
		}
	}
	switch {
	case mapAt < 0:
		t.Fatal("README.md has no \"## Code map\" heading; want one within the first 100 lines")
	case mapAt >= 100:
		t.Fatalf("README.md's \"## Code map\" heading is at line %d; want it within the first 100 lines", mapAt)
	}
	codeMap := strings.Join(firstCodeBlock(strings.Join(lines[mapAt:], "\n")), "\n")
	for _, dir := range codeDirs(t, root) {
		name := dir + "/" // cmd/marketd/ as it is; the store's folders indented under store/
		if parent, base, ok := strings.Cut(dir, "/"); ok && parent == "store" {
			name = "  " + base + "/"
		}
		if !strings.Contains(codeMap, "\n"+name) && !strings.HasPrefix(codeMap, name) {
			t.Errorf("README.md's code map does not name %s/ (as %q at the start of a line)", dir, name)
		}
	}
}

// codeDirs lists the directories whose contents the code map must name: every top-level folder
// and every folder directly under cmd/ and store/, dot folders aside.
func codeDirs(t *testing.T, root string) []string {
	var dirs []string
	list := func(dir string) []string {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				names = append(names, filepath.ToSlash(filepath.Join(dir, e.Name())))
			}
		}
		return names
	}
	for _, top := range list(".") {
		dirs = append(dirs, top)
		if top == "store" {
			dirs = append(dirs, list(top)...)
		}
	}
	for _, d := range list("cmd") {
		dirs = append(dirs, d)
	}
	return dirs
}

// firstCodeBlock returns the lines of the first fenced code block of a Markdown text.
func firstCodeBlock(md string) []string {
	var block []string
	in := false
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "```") {
			if in {
				return block
			}
			in = true
			continue
		}
		if in {
			block = append(block, l)
		}
	}
	return nil
}

// Every link from one of the repository's Markdown documents to a file of the repository, or
// to a heading of one, leads somewhere: a moved section or a renamed file breaks a link
// silently otherwise.
func TestREADME_LinksBetweenDocumentsResolve(t *testing.T) {
	root := moduleRoot(t)
	var docs []string
	for _, name := range trackedFiles(t, root) {
		if strings.HasSuffix(name, ".md") && !strings.Contains(name, "node_modules/") {
			docs = append(docs, name)
		}
	}
	if len(docs) < 5 {
		t.Fatalf("found %d Markdown documents; expected every README", len(docs))
	}
	for _, doc := range docs {
		for _, l := range markdownLinks(readText(t, filepath.Join(root, doc))) {
			target, anchor, _ := strings.Cut(l.target, "#")
			if strings.Contains(target, ":") || strings.HasPrefix(l.target, "//") {
				continue // a URL: http:, https:, mailto:
			}
			file := doc
			if target != "" {
				file = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(doc), target)))
				if _, err := os.Stat(filepath.Join(root, file)); err != nil {
					t.Errorf("%s:%d links to %s, which does not exist", doc, l.line, target)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(file, ".md") {
				t.Errorf("%s:%d links to #%s in %s, which has no headings", doc, l.line, anchor, file)
				continue
			}
			if !headingAnchors(readText(t, filepath.Join(root, file)))[anchor] {
				t.Errorf("%s:%d links to %s#%s: %s has no such heading", doc, l.line, target, anchor, file)
			}
		}
	}
}

// A Markdown link: its target and the line it is on.
type mdLink struct {
	target string
	line   int
}

var inlineLink = regexp.MustCompile(`\]\(([^()\s]+)\)`)

// markdownLinks finds the inline links and images of a Markdown text outside code: fenced
// blocks and backquoted spans are skipped.
func markdownLinks(md string) []mdLink {
	var links []mdLink
	fenced := false
	for i, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range inlineLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(l, "``"), -1) {
			links = append(links, mdLink{target: m[1], line: i + 1})
		}
	}
	return links
}

var codeSpan = regexp.MustCompile("`[^`]*`")

// headingAnchors are the anchors GitHub gives a Markdown text's headings: lowercased, every
// character but letters, digits, spaces, hyphens and underscores dropped, spaces made hyphens,
// and a repeated anchor numbered (-1, -2, ...).
func headingAnchors(md string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		text, ok := strings.CutPrefix(strings.TrimLeft(l, "#"), " ")
		if fenced || !ok || !strings.HasPrefix(l, "#") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(text)) {
			switch {
			case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			anchors[a+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// The benchmarks' figures live in one table, in cmd/marketd/README.md: one row per benchmark of
// the module, and no row for one that does not exist; no other table of the documents names a
// benchmark: the other READMEs link to the one table rather than keep figures of their own.
func TestREADME_OneBenchmarkTableHasARowForEveryBenchmark(t *testing.T) {
	root := moduleRoot(t)
	declared := map[string]bool{}
	for _, name := range trackedFiles(t, root) {
		if !strings.HasSuffix(name, "_test.go") {
			continue
		}
		for _, m := range benchmarkFunc.FindAllStringSubmatch(readText(t, filepath.Join(root, name)), -1) {
			declared[m[1]] = true
		}
	}
	if len(declared) == 0 {
		t.Fatal("found no benchmark in the module")
	}
	table := readText(t, filepath.Join(root, "cmd", "marketd", "README.md"))
	_, section, ok := strings.Cut(table, "\n## Benchmarks\n")
	if !ok {
		t.Fatal("cmd/marketd/README.md has no \"## Benchmarks\" section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	rows := map[string]int{}
	for _, m := range benchmarkRow.FindAllStringSubmatch(section, -1) {
		rows[m[1]]++
	}
	var problems []string
	for name := range declared {
		if rows[name] != 1 {
			problems = append(problems, name+" has "+strconv.Itoa(rows[name])+" rows in the table; want 1")
		}
	}
	for name := range rows {
		if !declared[name] {
			problems = append(problems, name+" has a row in the table but is declared nowhere")
		}
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error("cmd/marketd/README.md, Benchmarks: " + p)
	}
	for _, name := range trackedFiles(t, root) {
		if !strings.HasSuffix(name, ".md") || strings.Contains(name, "node_modules/") {
			continue
		}
		text := readText(t, filepath.Join(root, name))
		if name == "cmd/marketd/README.md" {
			before, _, _ := strings.Cut(text, "\n## Benchmarks\n")
			text = before
		}
		for i, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "|") && benchmarkName.MatchString(line) {
				t.Errorf("%s:%d: a table of benchmark figures outside cmd/marketd/README.md's Benchmarks: keep the latest figure there, the history in git", name, i+1)
			}
		}
	}
}

var (
	benchmarkFunc = regexp.MustCompile(`(?m)^func (Benchmark\w+)\(`)
	benchmarkRow  = regexp.MustCompile("(?m)^\\| `(Benchmark\\w+)` \\|")
	benchmarkName = regexp.MustCompile(`\bBenchmark[A-Z]\w*`)
)

// readText reads a file of the repository as text.
func readText(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
