package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"marketd/store/translog"
)

// Two `marketd serve` processes on loopback witness each other through their own HTTP: each
// asks the other to cosign its log and cosigns the other's. Through writes on both, a kill of
// one mid-run and restarts of both, each ends with a witnessed checkpoint of its whole log
// cosigned by the other, its own log signature and the witness's cosignature both verifying,
// and every write it acknowledged in that tree; a write during the other's absence was not
// delayed by it. Then one forks its log (a backup restored under writes the other had
// cosigned): the other refuses every checkpoint of the fork, and a client that audited the log
// under a policy naming the other as witness finds the log rewritten.
func TestWitnesses_TwoServicesWitnessEachOtherThroughKillsAndRestarts(t *testing.T) {
	dir := t.TempDir()
	type node struct {
		name, addr, db, logKey, witnessKey string
		in                                 *instance
	}
	nodes := []*node{{name: "a"}, {name: "b"}}
	for _, n := range nodes {
		n.addr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		n.db = "sqlite://" + filepath.Join(dir, n.name, "m.db")
	}
	get := func(url string) string { return strings.TrimSpace(string(getOK(t, url))) }
	start := func(n *node, env ...string) {
		n.in = startInstance(t, append([]string{"MARKETD_ADDR=" + n.addr, "MARKETD_DB=" + n.db, "MARKETD_PUBLIC_URL=http://" + n.name + ".witness.test", "MARKETD_RATE_READ=0"}, env...)...)
	}
	stop := func(n *node) {
		n.in.cmd.Process.Kill()
		<-n.in.done
	}
	// A first start makes each one's keys.
	for _, n := range nodes {
		start(n)
		n.logKey, n.witnessKey = get(n.in.url+"/log/key"), get(n.in.url+"/witness/key")
		stop(n)
	}
	other := func(n *node) *node {
		if n == nodes[0] {
			return nodes[1]
		}
		return nodes[0]
	}
	startWitnessing := func(n *node) {
		o := other(n)
		start(n, "MARKETD_WITNESSES="+o.witnessKey+"@http://"+o.addr+"/witness", "MARKETD_WITNESS_LOGS="+o.logKey)
	}
	for _, n := range nodes {
		startWitnessing(n)
	}
	c := newClient(t)
	parties := map[*node]*party{}
	for _, n := range nodes {
		parties[n] = c.onboard(n.in.url, "alice")
	}
	for range 5 {
		for _, n := range nodes {
			c.tap(n.in.url, parties[n], "1")
		}
	}
	// b dies; a keeps writing, undelayed by its witness being away.
	stop(nodes[1])
	began := time.Now()
	for range 5 {
		c.tap(nodes[0].in.url, parties[nodes[0]], "1")
	}
	if took := time.Since(began); took > 3*time.Second {
		t.Fatalf("5 writes took %v while the witness was down", took)
	}
	startWitnessing(nodes[1])
	c.tap(nodes[1].in.url, parties[nodes[1]], "1")
	// a restarts too.
	nodes[0].in.cmd.Process.Signal(syscall.SIGTERM)
	<-nodes[0].in.done
	startWitnessing(nodes[0])
	c.tap(nodes[0].in.url, parties[nodes[0]], "1")

	witnessedAll(t, nodes[0].in.url, nodes[0].logKey, nodes[1].witnessKey)
	witnessedAll(t, nodes[1].in.url, nodes[1].logKey, nodes[0].witnessKey)

	// a's operator forks its log: a backup now, writes the witness cosigns, then the backup
	// restored and other writes on it. b refuses every checkpoint of the fork, so a serves no
	// cosigned tree past the backup's: the one b cosigned before it, which a client that kept
	// b's later cosigned tree finds rewritten.
	a := nodes[0]
	atBackup := witnessedAll(t, a.in.url, a.logKey, nodes[1].witnessKey)
	backup := filepath.Join(dir, "a-backup.db")
	runMarketd(t, a.db, "backup", backup)
	for range 3 {
		c.tap(a.in.url, parties[a], "1")
	}
	witnessedAll(t, a.in.url, a.logKey, nodes[1].witnessKey)
	// A client under the policy {b} audits a's log now, keeping the tree b cosigned.
	auditor := func() error {
		return walletctl(t, "--server", a.in.url, "--key", filepath.Join(dir, "auditor.key"), "audit", "--witness", nodes[1].witnessKey)
	}
	if err := auditor(); err != nil {
		t.Fatalf("walletctl audit under the policy, before the fork: %v", err)
	}
	stop(a)
	runMarketd(t, a.db, "restore", "--force", backup)
	startWitnessing(a)
	for range 5 {
		c.tap(a.in.url, parties[a], "2") // another history, past the size b cosigned
	}
	time.Sleep(3 * time.Second) // three rounds of asking
	if got := get(a.in.url + "/log/witnessed-checkpoint"); got != atBackup {
		t.Fatalf("after the fork, a serves a witnessed checkpoint other than the one b cosigned before the backup:\n%s\nwant\n%s", got, atBackup)
	}
	if !strings.Contains(a.in.logs.String(), "witness did not cosign") {
		t.Fatalf("a's log does not say b refused the fork:\n%s", a.in.logs)
	}
	if err := auditor(); err == nil || !strings.Contains(err.Error(), "LOG REWRITTEN") {
		t.Fatalf("walletctl audit under the policy, after the fork: %v; want LOG REWRITTEN", err)
	}
}

// walletctlBinary is walletctl built once for the tests that run it.
var walletctlBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "walletctl-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "walletctl")
	if out, err := exec.Command("go", "build", "-o", bin, "../walletctl").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v: %s", err, out)
	}
	return bin, nil
})

// walletctl runs walletctl with args; its error carries what it printed on stderr.
func walletctl(t *testing.T, args ...string) error {
	t.Helper()
	bin, err := walletctlBinary()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

// witnessedAll waits until the service at url serves a witnessed checkpoint of its whole log,
// signed by logKey and cosigned by witnessKey, and returns it.
func witnessedAll(t *testing.T, url, logKey, witnessKey string) string {
	t.Helper()
	logV, err := note.NewVerifier(logKey)
	if err != nil {
		t.Fatal(err)
	}
	wv, err := translog.NewCosignatureVerifier(witnessKey)
	if err != nil {
		t.Fatal(err)
	}
	size := func() int64 {
		b := logGet(t, url, "checkpoint")
		tree, err := translog.ParseCheckpoint(strings.SplitN(string(b), "\n\n", 2)[0]+"\n", logV.Name())
		if err != nil {
			t.Fatal(err)
		}
		return tree.N
	}
	want := size()
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := http.Get(url + "/log/witnessed-checkpoint")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == http.StatusOK {
			cp, err := note.Open(b, note.VerifierList(logV, wv))
			if err != nil {
				t.Fatalf("%s's witnessed checkpoint: %v\n%s", url, err, b)
			}
			tree, err := translog.ParseCheckpoint(cp.Text, logV.Name())
			if err != nil {
				t.Fatal(err)
			}
			if len(cp.Sigs) == 2 && tree.N == want {
				return strings.TrimSpace(string(b))
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's log of %d entries was not cosigned within 20 s: %d %s", url, want, res.StatusCode, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
