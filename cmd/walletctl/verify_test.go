package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"marketd/rest"
	"marketd/store"
	"marketd/store/storetest"
	"marketd/store/translog"
	"marketd/store/wallet"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// rawDB opens the world's database directly, as an operator with access to it could.
func (w *ctlWorld) rawDB() (*sql.DB, func(int) string) {
	w.t.Helper()
	dsn := w.store.Config().DB
	driver, arg := "pgx", func(i int) string { return fmt.Sprintf("$%d", i) }
	if w.store.Dialect() == store.SQLite {
		driver, dsn, arg = "sqlite", "file:"+strings.TrimPrefix(dsn, "sqlite://"), func(int) string { return "?" }
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		w.t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	w.t.Cleanup(func() { db.Close() })
	return db, arg
}

// logEntries reads every stored entry, in log order.
func logEntries(t *testing.T, db *sql.DB) [][]byte {
	t.Helper()
	rows, err := db.Query("SELECT entry FROM log_entries ORDER BY log_index")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][]byte
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// rewriteHistory changes entry n and writes the whole tree again over it, as an operator
// rewriting history would: the new tree is consistent in itself, not with the old one.
func (w *ctlWorld) rewriteHistory(n int) {
	w.rewriteLog(func(entries [][]byte) {
		entries[n] = []byte(strings.Replace(string(entries[n]), `"recordedAt":"2`, `"recordedAt":"1`, 1))
	})
}

// rewriteLog lets change rewrite the log's entries in place and writes the whole tree again
// over them, as an operator forging its log would.
func (w *ctlWorld) rewriteLog(change func(entries [][]byte)) {
	t := w.t
	db, arg := w.rawDB()
	entries := logEntries(t, db)
	before := slices.Clone(entries)
	change(entries)
	for n := range entries {
		if bytes.Equal(entries[n], before[n]) {
			continue
		}
		if _, err := db.Exec("UPDATE log_entries SET entry = "+arg(1)+" WHERE log_index = "+arg(2), entries[n], n); err != nil {
			t.Fatal(err)
		}
	}
	hashes := map[int64]tlog.Hash{}
	read := tlog.HashReaderFunc(func(xs []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(xs))
		for i, x := range xs {
			out[i] = hashes[x]
		}
		return out, nil
	})
	for i, e := range entries {
		hs, err := tlog.StoredHashes(int64(i), e, read)
		if err != nil {
			t.Fatal(err)
		}
		var stored []byte // an entry's row keeps the stored hashes its append added
		for j, h := range hs {
			hashes[tlog.StoredHashIndex(0, int64(i))+int64(j)] = h
			stored = append(stored, h[:]...)
		}
		if _, err := db.Exec("UPDATE log_entries SET hashes = "+arg(1)+" WHERE log_index = "+arg(2), stored, i); err != nil {
			t.Fatal(err)
		}
	}
	size := int64(len(entries))
	var frontier []byte
	for level := 62; level >= 0; level-- {
		if size>>level&1 == 1 {
			h := hashes[tlog.StoredHashIndex(level, size>>level-1)]
			frontier = append(frontier, h[:]...)
		}
	}
	if w.store.Dialect() == store.SQLite {
		return // its head is read off the hashes just written
	}
	if _, err := db.Exec("UPDATE log_head SET frontier = "+arg(1)+" WHERE id = 1", frontier); err != nil {
		t.Fatal(err)
	}
}

// restart serves the world's store from a new instance, behind the same address (p).
func (w *ctlWorld) restart(p *pathProxy) {
	s := storetest.Backend{}.Reopen(w.t, w.store.Config())
	srv, err := rest.New(s, rest.Config{PublicURL: "http://localhost:8080", Dev: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		w.t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	w.t.Cleanup(hs.Close)
	w.store, p.target = s, hs.URL
}

func TestVerify_KeptReceiptsAreInTheLogAndAuditChecksEveryEntry(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		w := newCtlWorld(t, b)
		w.party("alice")
		tap := w.must("alice", "tap", "CC", "10")
		if _, ok := tap["logIndex"].(float64); !ok {
			t.Fatalf("the tap's receipt has no logIndex: %v", tap)
		}
		if got := w.must("alice", "verify")["verified"]; got != 2.0 { // the onboarding and the tap
			t.Fatalf("verified %v receipts, want 2", got)
		}
		audit := w.must("alice", "audit")
		if audit["entries"] != audit["treeSize"] || audit["committedBy"].(map[string]any)["party"].(float64) < 2 {
			t.Fatalf("audit: %v", audit)
		}
		w.must("alice", "tap", "CC", "1")
		w.must("alice", "verify") // the log grew: consistent with the checkpoint kept
	})
}

func TestVerify_ATamperedEntryIsCaught(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		w := newCtlWorld(t, b)
		w.party("alice")
		n := int(w.must("alice", "tap", "CC", "10")["logIndex"].(float64))
		w.must("alice", "verify")
		db, arg := w.rawDB()
		entry := logEntries(t, db)[n]
		forged := strings.Replace(string(entry), `"kind":"wallet.tap"`, `"kind":"wallet.tip"`, 1)
		if _, err := db.Exec("UPDATE log_entries SET entry = "+arg(1)+" WHERE log_index = "+arg(2), []byte(forged), n); err != nil {
			t.Fatal(err)
		}
		w.refused("alice", []string{"NOT IN THE LOG", fmt.Sprintf("entry %d", n)}, "verify")
		w.refused("alice", []string{"AUDIT FAILED"}, "audit")
	})
}

func TestVerify_ARewrittenHistoryIsCaught(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		w := newCtlWorld(t, b)
		w.party("alice")
		w.must("alice", "tap", "CC", "10")
		w.must("alice", "verify")
		w.rewriteHistory(0)
		w.refused("alice", []string{"LOG REWRITTEN"}, "verify")
		w.refused("alice", []string{"LOG REWRITTEN"}, "audit")
	})
}

func TestVerify_ACheckpointSignedByAnotherKeyIsCaught(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		w := newCtlWorld(t, b)
		p := w.proxied()
		w.party("alice")
		w.must("alice", "tap", "CC", "10")
		w.must("alice", "verify")
		skey, _, err := note.GenerateKey(nil, "localhost:8080/log")
		if err != nil {
			t.Fatal(err)
		}
		sealed, err := store.SealSecret(w.store.Config().KEK, "log-1", "log-note", []byte(skey)) // as the store keeps it
		if err != nil {
			t.Fatal(err)
		}
		db, arg := w.rawDB()
		if _, err := db.Exec("UPDATE service_keys SET secret = "+arg(1)+" WHERE purpose = 'log-note'", sealed); err != nil {
			t.Fatal(err)
		}
		w.restart(p)
		if _, err := w.store.LogCheckpoint(context.Background()); err != nil {
			t.Fatal(err)
		}
		w.refused("alice", []string{"LOG KEY CHANGED"}, "verify")
		w.refused("alice", []string{"LOG KEY CHANGED"}, "audit")
	})
}

// newWitness starts a witness service following w's log, on a store of its own named after
// host, and returns its cosignature verifier key and its submission URL.
func (w *ctlWorld) newWitness(b storetest.Backend, host string) (vkey, url string) {
	t := w.t
	cfg := storetest.Config(storetest.NewClock(time.Now()))
	cfg.PublicURL = "http://" + host
	s := b.Open(t, cfg)
	logKey, err := w.store.LogVerifierKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wl, err := translog.NewWitnessedLog(logKey)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := rest.New(s, rest.Config{PublicURL: cfg.PublicURL, Dev: true, Logger: slog.New(slog.DiscardHandler), WitnessLogs: map[string]*translog.WitnessedLog{wl.Origin: wl}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	c, err := s.WitnessCosigner(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c.VerifierKey(), hs.URL + "/witness"
}

// askWitnesses has w's log ask the witnesses at keys and urls for cosignatures.
func (w *ctlWorld) askWitnesses(keys, urls []string) {
	var ws []store.Witness
	for i := range keys {
		x, err := store.ParseWitness(keys[i] + "@" + urls[i])
		if err != nil {
			w.t.Fatal(err)
		}
		ws = append(ws, x)
	}
	for _, r := range w.store.AskWitnesses(context.Background(), http.DefaultClient, ws) {
		if r.Err != nil {
			w.t.Fatalf("witness %s: %v", r.Witness, r.Err)
		}
	}
}

// Under a witness policy, verify and audit check the newest tree K of the witnesses cosigned:
// met, they pass; a witness missing, or a cosignature that does not verify, is refused and
// named; a receipt newer than the witnessed tree is not verified until the witnesses cosign a
// tree that holds it.
func TestVerify_AWitnessPolicyNeedsKCosignatures(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		w := newCtlWorld(t, b)
		real := w.server
		var tamper atomic.Bool
		proxy := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if tamper.Load() && r.URL.Path == "/log/witnessed-checkpoint" {
				res, err := http.Get(real + r.URL.Path)
				if err != nil {
					rw.WriteHeader(http.StatusBadGateway)
					return
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				// Change one byte of the witness's signature (past its 4 bytes of key hash).
				i := bytes.Index(body, []byte("— witness-a.example/witness ")) + len("— witness-a.example/witness ") + 12
				if body[i] == 'A' {
					body[i] = 'B'
				} else {
					body[i] = 'A'
				}
				rw.Write(body)
				return
			}
			forward(rw, r, real)
		}))
		defer proxy.Close()
		w.server = proxy.URL
		w.party("alice")
		w.must("alice", "tap", "CC", "10")
		keyA, urlA := w.newWitness(b, "witness-a.example")
		keyB, _ := w.newWitness(b, "witness-b.example")

		w.refused("alice", []string{"no witness has cosigned"}, "verify", "--witness", keyA)
		w.askWitnesses([]string{keyA}, []string{urlA})
		w.must("alice", "verify", "--witness", keyA)
		w.must("alice", "audit", "--witness", keyA)
		w.must("alice", "verify", "--witness", keyA, "--witness", keyB, "--witnesses", "1")
		for _, cmd := range []string{"verify", "audit"} {
			w.refused("alice", []string{"WITNESS POLICY NOT MET", "2 of the 2", "no cosignature of witness-b.example/witness"}, cmd, "--witness", keyA, "--witness", keyB)
		}
		tamper.Store(true)
		w.refused("alice", []string{"WITNESS POLICY NOT MET", "a bad cosignature of witness-a.example/witness"}, "verify", "--witness", keyA)
		tamper.Store(false)

		w.must("alice", "tap", "CC", "1") // newer than the witnessed tree
		w.refused("alice", []string{"NOT IN THE LOG", "not witnessed yet"}, "verify", "--witness", keyA)
		w.askWitnesses([]string{keyA}, []string{urlA})
		w.must("alice", "verify", "--witness", keyA)
		w.refused("alice", []string{"--witnesses 3"}, "verify", "--witness", keyA, "--witness", keyB, "--witnesses", "3")
	})
}

// A log whose operator forges entries that each verify against the key they carry is refused
// by audit (every entry) and by verify (the kept receipts'): one signed transaction under two
// updates, a key that is not actAs's, a kind the signed bytes do not say, and a transfer the
// service says it committed for the party (the security read's row 7).
func TestVerify_AForgedEntryIsRefusedByAuditAndVerify(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		w := newCtlWorld(t, b)
		alice := w.party("alice")
		first := int(w.must("alice", "tap", "CC", "10")["logIndex"].(float64))
		n := int(w.must("alice", "tap", "CC", "5")["logIndex"].(float64))
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) { // the log takes the taps in
			if tree, err := w.store.LogTree(context.Background()); err == nil && tree.N > int64(n) {
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("the log never took entry %d in: %v, %v", n, tree, err)
			}
		}
		_, other, err := ed25519.GenerateKey(nil)
		if err != nil {
			t.Fatal(err)
		}
		entry := func(b []byte) *translog.Entry {
			e, err := translog.ParseEntry(b)
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
		for _, c := range []struct {
			name         string
			forge        func(genuine, earlier *translog.Entry) *translog.Entry
			audit, check string
		}{
			{"one signed transaction under two updates", func(genuine, earlier *translog.Entry) *translog.Entry {
				earlier.UpdateID, earlier.Offset, earlier.RecordedAt = genuine.UpdateID, genuine.Offset, genuine.RecordedAt
				return earlier
			}, "two updates", "this key signed"},
			{"a key that is not actAs's", func(genuine, _ *translog.Entry) *translog.Entry {
				genuine.Signature = ed25519.Sign(other, wallet.PreparedHash(genuine.PreparedTransaction))
				genuine.PublicKey = other.Public().(ed25519.PublicKey)
				return genuine
			}, "not the key of actAs", "not the key of actAs"},
			{"a kind the signed bytes do not say", func(genuine, _ *translog.Entry) *translog.Entry {
				genuine.Kind = store.KindCCTransfer
				return genuine
			}, "the signed transaction wallet.tap", "the signed transaction wallet.tap"},
			{"a transfer the service says it committed for the party", func(genuine, _ *translog.Entry) *translog.Entry {
				return &translog.Entry{UpdateID: genuine.UpdateID, Offset: genuine.Offset, Kind: store.KindCCTransfer, ActAs: alice,
					RecordedAt: genuine.RecordedAt, CommittedBy: translog.CommittedByService}
			}, "only a party's signature commits one", "only a party's signature commits one"},
		} {
			var genuine []byte
			w.rewriteLog(func(entries [][]byte) {
				genuine = entries[n]
				forged, err := json.Marshal(c.forge(entry(entries[n]), entry(entries[first]))) // as the forger writes it: no Check
				if err != nil {
					t.Fatal(err)
				}
				entries[n] = forged
			})
			w.refused("alice", []string{"AUDIT FAILED", c.audit}, "audit")
			w.refused("alice", []string{"NOT IN THE LOG AS SIGNED", c.check}, "verify")
			w.rewriteLog(func(entries [][]byte) { entries[n] = genuine })
		}
		w.must("alice", "audit")
		w.must("alice", "verify")
	})
}
