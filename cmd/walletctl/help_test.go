package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"marketd/store"
)

// binary is walletctl built once for the tests that run the real command.
var binary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "walletctl-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "walletctl")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v: %s", err, out)
	}
	return bin, nil
})

// runBinary runs the built walletctl in a folder of its own, with no WALLETCTL_ variables.
func runBinary(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = t.TempDir()
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "WALLETCTL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return out.String(), errOut.String(), exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), 0
}

func TestHelp_EachCommandShowsItsUsageFlagsAndVariables(t *testing.T) {
	for _, tc := range []struct {
		name    string
		want    []string
		offline bool // reads no server, so WALLETCTL_SERVER is not its business
	}{
		{"keygen", []string{"key file", "-hint string"}, true},
		{"onboard", []string{"onboard"}, false},
		{"login", []string{"sign in"}, false},
		{"logout", []string{"session"}, false},
		{"whoami", []string{"as the server sees them"}, false},
		{"party", []string{"party id"}, true},
		{"token", []string{"token"}, true},
		{"sign", []string{"sign MESSAGE", "-hash string"}, true},
		{"call", []string{"call METHOD PATH [JSON]", "{me}"}, false},
		{"exec", []string{"exec PATH JSON", "checks the party only"}, false},
		{"balance", []string{"balances"}, false},
		{"utxos", []string{"holdings"}, false},
		{"tap", []string{"tap CC|USDCx AMOUNT"}, false},
		{"send", []string{"send PARTY AMOUNT"}, false},
		{"preapprove", []string{"preapprove nft|usdcx"}, false},
		{"renew", []string{"renew nft|usdcx"}, false},
		{"rewards", []string{"rewards [history]"}, false},
		{"mint", []string{"mint [--max-price P] COLLECTION [QUANTITY]", "-max-price", fmt.Sprintf("2 to %d", store.MaxBatch)}, false},
		{"list", []string{"list CONTRACT_ID PRICE [EXPIRY]"}, false},
		{"cancel", []string{"cancel CID...", fmt.Sprintf("2 to %d", store.MaxBatch)}, false},
		{"buy", []string{"buy CID"}, false},
		{"sweep", []string{"sweep [--max-price P] COLLECTION MAX_TOTAL COUNT|CID...", "-max-price", fmt.Sprintf("at most %d", store.MaxBatch)}, false},
		{"transfer", []string{"transfer CONTRACT_ID PARTY"}, false},
		{"burn", []string{"burn CONTRACT_ID"}, false},
		{"offer", []string{"offer COLLECTION PRICE [--quantity N] [--serial S|--contract CID|--trait T=V...] [--expires E]", "-quantity int", "-serial value", "-contract string", "-trait value", "-expires string"}, false},
		{"offer cancel", []string{"offer cancel CID...", fmt.Sprintf("at most %d", store.MaxBatch)}, false},
		{"offers", []string{"offers [--received] [--collection C]", "-received", "-collection string"}, false},
		{"accept", []string{"accept OFFER_CID NFT_CID... [--min-proceeds AMOUNT]", "-min-proceeds string", fmt.Sprintf("at most %d", store.MaxBatch)}, false},
		{"pools", []string{"pools"}, false},
		{"quote", []string{"quote CC|USDCx AMOUNT [POOL]"}, false},
		{"lp publish", []string{"lp publish POOL ask|bid PRICE SIZE [TTL]"}, false},
		{"lp cancel", []string{"lp cancel CID"}, false},
		{"lp claim", []string{"lp claim POOL"}, false},
		{"lp active", []string{"LP quotes"}, false},
		{"swap submit", []string{"swap submit POOL CC|USDCx AMOUNT MIN [TTL]"}, false},
		{"swap cancel", []string{"swap cancel INTENT"}, false},
		{"swap status", []string{"swap status INTENT"}, false},
		{"swap active", []string{"pending intents"}, false},
		{"swap history", []string{"filled swaps"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runBinary(t, append(strings.Fields(tc.name), "-h")...)
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			want := append([]string{"walletctl " + tc.name + ": ", "usage: walletctl ", "WALLETCTL_KEY", "--key FILE"}, tc.want...)
			for _, w := range want {
				if !strings.Contains(out, w) {
					t.Errorf("help lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "WALLETCTL_SERVER") == tc.offline {
				t.Errorf("help shows WALLETCTL_SERVER: %v, want %v:\n%s", !tc.offline, !tc.offline, out)
			}
			if tc.name != "keygen" && strings.Contains(out, "-hint") || tc.name != "sign" && strings.Contains(out, "-hash") {
				t.Errorf("help shows another command's flag:\n%s", out)
			}
		})
	}
	out, _, code := runBinary(t, "-h")
	if code != 0 || !strings.Contains(out, "walletctl swap history") || !strings.Contains(out, "walletctl offer cancel CID...") || !strings.Contains(out, "WALLETCTL_SERVER") || !strings.Contains(out, "never the\nserver's summary") {
		t.Errorf("walletctl -h: exit %d:\n%s", code, out)
	}
}

func TestHelp_AnUnknownFlagOrCommandIsAClearErrorWithExit2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"balance", "--bogus"}, "walletctl balance: flag provided but not defined: -bogus\nRun \"walletctl balance -h\""},
		{[]string{"keygen", "--hash", "x"}, "walletctl keygen: flag provided but not defined: -hash"},
		{[]string{"party", "extra"}, "walletctl party: takes no arguments"},
		{[]string{"lp", "withdraw"}, "walletctl lp: unknown command \"withdraw\""},
		{[]string{"frobnicate"}, "walletctl: unknown command \"frobnicate\""},
		{[]string{"--server"}, "walletctl: flag needs an argument: -server"},
	} {
		out, errOut, code := runBinary(t, tc.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("walletctl %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", strings.Join(tc.args, " "), code, out, errOut, tc.want)
		}
	}
}

// A batch over store.MaxBatch is refused before walletctl reads its key or sends anything:
// here there is neither a key file nor a server.
func TestBatchShortcuts_OverTheBatchLimitAreRefusedBeforeAnyRequest(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	over := make([]string, store.MaxBatch+1)
	for i := range over {
		over[i] = fmt.Sprintf("%064x", i)
	}
	for _, args := range [][]string{
		{"mint", "col_00000000000000000000", fmt.Sprint(store.MaxBatch + 1)},
		append([]string{"cancel"}, over...),
		append([]string{"sweep", "apes", "100"}, over...),
		{"sweep", "apes", "100", fmt.Sprint(store.MaxBatch + 1)},
		append([]string{"offer", "cancel"}, over...),
		append([]string{"accept", "offer"}, over...),
	} {
		_, errOut, code := runBinary(t, append([]string{"--server", server}, args...)...)
		if code != 1 || !strings.Contains(errOut, fmt.Sprintf("at most %d", store.MaxBatch)) {
			t.Errorf("walletctl %s ...: exit %d, stderr %q", args[0], code, errOut)
		}
	}
}
