package house

import (
	"os/exec"
	"strings"
	"testing"
)

// walletPackages are the only packages of this module that walletctl and store/wallet may
// build on: a wallet checks what it signs with store/wallet's rules alone, and links nothing
// of the server.
var walletPackages = map[string]bool{
	"marketd/cmd/walletctl":        true,
	"marketd/cmd/internal/cmdline": true,
	"marketd/store/wallet":         true,
	"marketd/store/translog":       true,
}

// serverDrivers are what the server's domain layer links and a wallet must not: PostgreSQL's
// and SQLite's drivers and bun.
var serverDrivers = []string{"github.com/jackc/pgx", "github.com/uptrace/bun", "modernc.org/sqlite"}

// TestWalletctl_BuildsOnNothingOfTheServer holds walletctl (without its tests, which start a
// real server) and store/wallet off the server's packages: go list -deps names no package of
// this module but walletPackages, and none of serverDrivers.
func TestWalletctl_BuildsOnNothingOfTheServer(t *testing.T) {
	root := moduleRoot(t)
	for _, pkg := range []string{"./cmd/walletctl", "./store/wallet"} {
		cmd := exec.Command("go", "list", "-deps", pkg)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		if len(deps) == 0 {
			t.Fatalf("go list -deps %s listed nothing", pkg)
		}
		for _, dep := range deps {
			if (dep == "marketd" || strings.HasPrefix(dep, "marketd/")) && !walletPackages[dep] {
				t.Errorf("%s builds on %s, a package of the server", pkg, dep)
			}
			for _, d := range serverDrivers {
				if dep == d || strings.HasPrefix(dep, d+"/") {
					t.Errorf("%s builds on %s", pkg, dep)
				}
			}
		}
	}
}
