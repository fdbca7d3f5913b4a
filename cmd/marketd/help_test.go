package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runBinary runs the built marketd with args and the extra environment; it returns standard
// output, standard error and the exit code.
func runBinary(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), 0
}

// serverOnly are settings only marketd serve reads.
var serverOnly = []string{"MARKETD_ADDR", "-addr", "MARKETD_ALLOWED_ORIGINS", "-allowed-origins", "MARKETD_CHALLENGE_TTL",
	"-challenge-ttl", "MARKETD_TOKEN_TTL", "MARKETD_PUBLIC_URL", "MARKETD_RATE_READ", "MARKETD_REDIS", "-redis",
	"MARKETD_METRICS_ADDR", "MARKETD_DRAIN_DELAY", "MARKETD_TRUSTED_PROXIES", "MARKETD_NFT_INDEX", "MARKETD_DEV",
	"MARKETD_SESSION_MAX", "-session-max", "MARKETD_RATE_SIGNIN", "-rate-signin", "MARKETD_RATE_EXECUTE", "-rate-execute"}

func TestHelp_EachCommandShowsItsOwnFlagsAndTheVariablesItReads(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string // in its help
	}{
		{[]string{"serve"}, append([]string{"run the service", "usage: marketd serve", "MARKETD_DB", "-db", "MARKETD_LOG_LEVEL", "MARKETD_MARKET_FEE_BPS"}, serverOnly...)},
		{[]string{"migrate", "up"}, []string{"apply every pending migration", "usage: marketd migrate up", "MARKETD_DB", "MARKETD_LOG_LEVEL"}},
		{[]string{"migrate", "down"}, []string{"roll back", "usage: marketd migrate down", "MARKETD_DB", "MARKETD_LOG_LEVEL"}},
		{[]string{"migrate", "status"}, []string{"usage: marketd migrate status", "MARKETD_DB"}},
		{[]string{"seed"}, []string{"demo market", "usage: marketd seed", "-demo", "-nfts int", "-seed uint", "-offers", "MARKETD_DB", "MARKETD_MARKET_FEE_BPS", "MARKETD_PREAPPROVAL_TTL"}},
		{[]string{"collection", "create"}, []string{"create an NFT collection", "-slug string", "-name string", "-creator string", "-currency string",
			"-royalty-bps int", "-supply int", "-items string", "-description string", "-image string", "MARKETD_DB"}},
		{[]string{"collection", "add-phase"}, []string{"mint phase", "-collection string", "-price string", "-start int", "-end int",
			"-per-party-limit int", "-supply int", "-allow string", "MARKETD_DB"}},
		{[]string{"pool", "create"}, []string{"swap pool", "-base string", "-quote string", "-fee-bps int", "MARKETD_DB"}},
		{[]string{"oracle", "set"}, []string{"oracle's price", "-base string", "-quote string", "-price string", "MARKETD_DB"}},
		{[]string{"admin", "create-user"}, []string{"admin console user", "-role string", "NAME", "MARKETD_DB"}},
		{[]string{"admin", "list"}, []string{"admin console users", "MARKETD_DB", "MARKETD_KEK_FILE"}},
		{[]string{"keys", "rotate-kek"}, []string{"new key-encryption key", "-new-kek-file string", "MARKETD_DB", "MARKETD_KEK_FILE"}},
		{[]string{"admin", "disable"}, []string{"disable", "NAME", "MARKETD_DB"}},
		{[]string{"admin", "reset"}, []string{"password", "NAME", "MARKETD_DB"}},
		{[]string{"backup"}, []string{"copy the embedded store", "usage: marketd backup", "FILE", "MARKETD_DB"}},
		{[]string{"restore"}, []string{"integrity_check", "usage: marketd restore", "-force", "FILE", "MARKETD_DB"}},
	} {
		name := strings.Join(tc.args, " ")
		t.Run(name, func(t *testing.T) {
			out, errOut, code := runBinary(t, nil, append(tc.args, "-h")...)
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			if !strings.HasPrefix(out, "marketd "+name+": ") {
				t.Errorf("help does not open with the command and what it does:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("help lacks %q:\n%s", w, out)
				}
			}
			if name == "serve" {
				return
			}
			for _, s := range serverOnly {
				if strings.Contains(out, s+" ") || strings.Contains(out, s+"\n") {
					t.Errorf("help shows the server's %s:\n%s", s, out)
				}
			}
		})
	}
}

func TestHelp_MarketdHListsEveryCommand(t *testing.T) {
	out, _, code := runBinary(t, nil, "-h")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, c := range []string{"serve", "migrate up", "migrate down", "migrate status", "seed", "collection create", "collection add-phase",
		"pool create", "oracle set", "admin create-user", "admin list", "admin disable", "admin reset", "backup", "restore", "keys rotate-kek", "keys rotate"} {
		if !strings.Contains(out, "marketd "+c+" ") {
			t.Errorf("marketd -h lacks %q:\n%s", c, out)
		}
	}
	out, _, code = runBinary(t, nil, "admin", "-h")
	if code != 0 || !strings.Contains(out, "marketd admin create-user") || strings.Contains(out, "marketd serve") {
		t.Errorf("marketd admin -h: exit %d:\n%s", code, out)
	}
}

func TestHelp_AnUnknownFlagOrCommandIsAClearErrorWithExit2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"oracle", "set", "--bogus", "1"}, "marketd oracle set: flag provided but not defined: -bogus\nRun \"marketd oracle set -h\""},
		{[]string{"seed", "--addr", ":9"}, "marketd seed: flag provided but not defined: -addr"}, // a server flag
		{[]string{"serve", "--nfts", "3"}, "marketd serve: flag provided but not defined: -nfts"},
		{[]string{"pool", "create", "--fee-bps", "ten"}, "marketd pool create: invalid value \"ten\" for flag -fee-bps"},
		{[]string{"admin", "promote"}, "marketd admin: unknown command \"promote\""},
		{[]string{"migrate"}, "marketd migrate: wants one of"},
		{[]string{"sell"}, "marketd: unknown command \"sell\""},
	} {
		out, errOut, code := runBinary(t, nil, tc.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("marketd %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", strings.Join(tc.args, " "), code, out, errOut, tc.want)
		}
	}
}

// An operator command reads only its own settings: a server setting that would stop serve
// does not stop it.
func TestHelp_AnOperatorCommandIgnoresTheServersVariables(t *testing.T) {
	db := "sqlite://" + filepath.Join(t.TempDir(), "m.db")
	out, errOut, code := runBinary(t, []string{"MARKETD_DB=" + db, "MARKETD_REDIS=nonsense", "MARKETD_ADDR=", "MARKETD_CHALLENGE_TTL=forever"},
		"oracle", "set", "--base", "CC", "--quote", "USDCx", "--price", "2")
	if code != 0 || !strings.Contains(out, `"price":"2"`) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	_, errOut, code = runBinary(t, []string{"MARKETD_DB=" + db, "MARKETD_CHALLENGE_TTL=forever"}, "serve")
	if code != 1 || !strings.Contains(errOut, "MARKETD_CHALLENGE_TTL") {
		t.Errorf("serve with a bad MARKETD_CHALLENGE_TTL: exit %d, stderr %q", code, errOut)
	}
}

// A session lifetime over a day, by variable or flag, stops serve at startup with a message
// that names the setting and the bound. (The listen address is one no process can bind, so
// a serve that took the value would stop too, with another message.)
func TestConfig_SessionMaxOverADayIsRefusedAtStartup(t *testing.T) {
	db := "sqlite://" + filepath.Join(t.TempDir(), "m.db")
	_, errOut, code := runBinary(t, []string{"MARKETD_DB=" + db, "MARKETD_ADDR=256.0.0.1:1", "MARKETD_SESSION_MAX=25h"}, "serve")
	if code != 1 || !strings.Contains(errOut, "MARKETD_SESSION_MAX") || !strings.Contains(errOut, "24h") {
		t.Errorf("serve with MARKETD_SESSION_MAX=25h: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = runBinary(t, []string{"MARKETD_DB=" + db, "MARKETD_ADDR=256.0.0.1:1"}, "serve", "--session-max", "48h")
	if code == 0 || !strings.Contains(errOut, "session-max") || !strings.Contains(errOut, "24h") {
		t.Errorf("serve --session-max 48h: exit %d, stderr %q", code, errOut)
	}
}

// A trusted proxy that is not an address or a CIDR, by variable or flag, stops serve at
// startup with a message that names the setting, the entry and what it wants; the list is
// read once, there, and handed parsed to every front door.
func TestConfig_ABadTrustedProxyIsRefusedAtStartup(t *testing.T) {
	db := "sqlite://" + filepath.Join(t.TempDir(), "m.db")
	_, errOut, code := runBinary(t, []string{"MARKETD_DB=" + db, "MARKETD_ADDR=256.0.0.1:1", "MARKETD_TRUSTED_PROXIES=10.0.0.0/8, proxy.example"}, "serve")
	if code != 1 || !strings.Contains(errOut, "MARKETD_TRUSTED_PROXIES") || !strings.Contains(errOut, `"proxy.example"`) || !strings.Contains(errOut, "an IP address or a CIDR") {
		t.Errorf("serve with MARKETD_TRUSTED_PROXIES=10.0.0.0/8, proxy.example: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = runBinary(t, []string{"MARKETD_DB=" + db, "MARKETD_ADDR=256.0.0.1:1"}, "serve", "--trusted-proxies", "10.0.0.0/33")
	if code == 0 || !strings.Contains(errOut, "trusted-proxies") || !strings.Contains(errOut, `"10.0.0.0/33"`) || !strings.Contains(errOut, "an IP address or a CIDR") {
		t.Errorf("serve --trusted-proxies 10.0.0.0/33: exit %d, stderr %q", code, errOut)
	}
}
