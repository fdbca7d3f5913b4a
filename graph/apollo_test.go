package graph

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"marketd/store/storetest"
)

// apolloTest is the folder of the Node.js check run against the endpoint; `npm ci` there
// installs Apollo Client (.ci/run does, and sets MARKETD_REQUIRE_APOLLO so the test cannot
// skip).
const apolloTest = "apollo-test"

func TestApolloClient_DefaultCacheNormalisesPoolsAndNFTs(t *testing.T) {
	node := nodeJS(t)
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		g := newTestGraph(t, b, 40)
		runNode(t, node, "normalize.mjs", g.http.URL, "ledger-apes")
	})
}

func TestSchemaSDL_BuildsInGraphQLJSWithNodeAndTheEnums(t *testing.T) {
	node := nodeJS(t)
	g := newTestGraph(t, storetest.Backends()[0], 0) // the schema is the same on every store
	runNode(t, node, "schema.mjs", g.http.URL)
}

// nodeJS is the path of node, once the check's packages are installed.
func nodeJS(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(apolloTest, "node_modules", "@apollo", "client", "package.json")); err != nil {
		if os.Getenv("MARKETD_REQUIRE_APOLLO") != "" {
			t.Fatalf("Apollo Client is not installed (npm ci in graph/%s): %v", apolloTest, err)
		}
		t.Skipf("Apollo Client is not installed: run npm ci in graph/%s", apolloTest)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("Node.js: %v", err)
	}
	return node
}

// runNode runs a script of the check's folder and fails with its output unless it exits 0.
func runNode(t *testing.T, node, script string, args ...string) {
	t.Helper()
	cmd := exec.Command(node, append([]string{script}, args...)...)
	cmd.Dir = apolloTest
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v:\n%s", script, err, out)
	}
	t.Logf("%s:\n%s", script, out)
}
