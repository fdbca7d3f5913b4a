package main

import (
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"marketd/rest"
	"marketd/store"
	"marketd/store/storetest"
	"marketd/store/storetest/pgproxy"
)

// When the database connection is cut while a send commits, marketd answers outcome_unknown;
// walletctl sends the same execute again on its own, and the transfer applies exactly once,
// whether the cut came before the commit or after it.
func TestSend_RetriesAnExecuteWhoseOutcomeIsUnknown(t *testing.T) {
	for _, b := range storetest.Backends() {
		if b.Dialect != store.Postgres {
			continue // SQLite commits in process: no connection to lose
		}
		for _, c := range []struct {
			name string
			cut  pgproxy.Cut
		}{{"cut-before-commit", pgproxy.CutBeforeCommit}, {"cut-after-commit", pgproxy.CutAfterCommit}} {
			t.Run(b.Name+"/"+c.name, func(t *testing.T) {
				cfg := storetest.Config(storetest.NewClock(time.Now().Truncate(time.Second)))
				s, proxy := b.OpenProxied(t, cfg)
				srv, err := rest.New(s, rest.Config{PublicURL: "http://localhost:8080", Dev: true, Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatal(err)
				}
				hs := httptest.NewServer(srv)
				t.Cleanup(hs.Close)
				w := &ctlWorld{t: t, store: s, server: hs.URL, dir: t.TempDir()}
				w.party("alice")
				bob := w.party("bob")
				w.must("alice", "tap", "CC", "100")

				proxy.CutCommits(c.cut)
				w.must("alice", "send", bob, "30")
				if proxy.Cuts() != 1 {
					t.Fatalf("%d commits cut, want the send's", proxy.Cuts())
				}
				bal, err := w.ctl("bob", "balance")
				if err != nil || !strings.Contains(bal, `"30`) {
					t.Fatalf("bob's balance after one send of 30: %s %v", bal, err)
				}
				bal, err = w.ctl("alice", "balance")
				if err != nil || !strings.Contains(bal, `"70`) {
					t.Fatalf("alice's balance after sending 30 of 100: %s %v", bal, err)
				}
			})
		}
	}
}
