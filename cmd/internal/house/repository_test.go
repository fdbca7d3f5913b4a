package house

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// outsideCitation matches a reference to a document that is not in this repository: the
// specification and the design notes marketd was first written against, by file name or by
// section number. Whoever clones marketd gets only the repository, so every rule has to be
// stated where it applies (openapi.yaml, the GraphQL schema, package comments, READMEs).
// The names are spelt with character classes so that this file does not match itself.
var outsideCitation = regexp.MustCompile(`(?i)` + strings.Join([]string{
	`\bcontract[.]md\b`,
	`\bseed[-_ ]?spec\b`,
	`\bstyle[.]md\b`,
	`\btoolchain[.]md\b`,
	`[.][.]/shared\b`,
	`/work/[s]hared\b`,
	`\bcontract('s)?\s+(§|sections?\s+\d)`,
	`\bsections?\s+\d+(\.\d+)?\s+of\s+the\s+(contract|spec|specification)\b`,
	`\b(spec|specification)('s)?\s+(§|sections?\s+\d)`,
	`\b(the|our|wire)\s+contract's\s+(table|order|rules?|sections?|wording)\b`,
}, "|"))

func TestOutsideCitation_MatchesEachFormAndNotTheLedgersContracts(t *testing.T) {
	cites := []string{
		"what the specification leaves open is decided in `../" + "shared/CONTRACT" + ".md`",
		"// Code is a machine-readable error code from CONTRACT" + ".md section 6.",
		"(CONTRACT" + ".md sections 10 and 11): amounts are decimal strings",
		"// config is every setting of CONTRACT sec" + "tion 1.",
		"a code from the contract" + "'s table, a bounded set",
		"in the contract" + "'s order, then the handler",
		"endpoints (SEED" + "-SPEC.md 4.2)",
		"see STYLE" + ".md and TOOLCHAIN" + ".md",
		"as contract " + "§7 says",
		"section 4 of the " + "contract",
		"spec sec" + "tion 2.1",
		"read /work/" + "shared/SEED" + "-SPEC.md",
	}
	for _, c := range cites {
		if !outsideCitation.MatchString(c) {
			t.Errorf("not caught: %q", c)
		}
	}
	ledger := []string{
		"// NFT is the ledger contract of one non-fungible token: one live contract per NFT.",
		"the contract's owner consents; the contract section of the page shows it",
		"walletctl transfer CONTRACT_ID PARTY",
		"LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE",
		"Bias adaptation function as per section 3.4 of RFC 3492.",
		"toolchain go1.26.8",
		"<link rel=\"stylesheet\" href=\"/admin/static/admin.css\"/>",
	}
	for _, l := range ledger {
		if m := outsideCitation.FindString(l); m != "" {
			t.Errorf("%q taken for a citation (%q)", l, m)
		}
	}
}

func TestRepository_CitesNoDocumentOutsideIt(t *testing.T) {
	root := moduleRoot(t)
	files := trackedFiles(t, root)
	if len(files) < 50 {
		t.Fatalf("found %d files under %s; expected the whole repository", len(files), root)
	}
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			if os.IsNotExist(err) {
				continue // deleted in the work tree, not yet committed
			}
			t.Fatal(err)
		}
		if bytes.IndexByte(b, 0) >= 0 {
			continue // binary: screenshots, images
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, len(b)+1)
		for n := 1; sc.Scan(); n++ {
			if m := outsideCitation.FindString(sc.Text()); m != "" {
				t.Errorf("%s:%d cites %q, a document outside the repository: state the rule itself here", name, n, m)
			}
		}
	}
}

// moduleRoot is the folder holding go.mod, above the test's working directory.
func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// trackedFiles lists the repository's files: git's list where the tree is a clone, otherwise
// every file under root but .git.
func trackedFiles(t *testing.T, root string) []string {
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		return strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	}
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(root, path)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// A file of the domain layer stays small enough to read as one part: a file that grows past
// 800 lines is split along its own seams (ledger_log.go and ledger_log_serve.go, say), so its
// name keeps saying what it holds.
func TestStoreFiles_AreAtMost800Lines(t *testing.T) {
	root := moduleRoot(t)
	err := filepath.WalkDir(filepath.Join(root, "store"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if n := bytes.Count(b, []byte("\n")); n > 800 {
			rel, _ := filepath.Rel(root, path)
			t.Errorf("%s has %d lines: split it along its parts, at most 800 each", rel, n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
