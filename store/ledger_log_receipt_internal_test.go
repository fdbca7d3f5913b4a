package store

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/uptrace/bun"

	"marketd/store/internal/testdb"
	"marketd/store/storetest/pgproxy"
)

// logEntryReads counts the statements that read the log's entries or an update's log index.
type logEntryReads struct{ n atomic.Int64 }

func (c *logEntryReads) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (c *logEntryReads) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	q := strings.TrimSpace(e.Query)
	if strings.HasPrefix(q, "SELECT") && (strings.Contains(q, `"log_entries"`) || strings.Contains(q, `"log_index"`)) {
		c.n.Add(1)
	}
}

// receiptLogIndex is the logIndex of an execute's receipt.
func receiptLogIndex(t *testing.T, r Receipt) int64 {
	t.Helper()
	var v struct {
		LogIndex *int64 `json:"logIndex"`
	}
	if err := json.Unmarshal(r, &v); err != nil || v.LogIndex == nil {
		t.Fatalf("receipt %s: no logIndex (%v)", r, err)
	}
	return *v.LogIndex
}

// An execute answers its receipt with the update's log index without reading the log back:
// SQLite's append computes it, and PostgreSQL's COMMIT, which appends the entry, reports it.
// The indexes are the log's: each execute's is the next.
func TestTransparencyLog_AnExecutesReceiptReadsNoLogEntryBack(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *Store, _ *ledgerClock) {
		ctx := context.Background()
		alice := onboardKeyed(t, s, "alice")
		reads := &logEntryReads{}
		s.AddQueryHook(reads)
		var last int64 = -1
		for range 3 {
			prep, err := s.PrepareTap(ctx, alice.id, CC, MustAmount("1"))
			if err != nil {
				t.Fatal(err)
			}
			n := receiptLogIndex(t, alice.execute(t, s, KindTap, prep))
			if last >= 0 && n != last+1 {
				t.Errorf("a tap's receipt has log index %d, want %d (the one after the last)", n, last+1)
			}
			last = n
		}
		if n := reads.n.Load(); n != 0 {
			t.Errorf("3 executes read the log's entries or their log indexes %d times, want 0", n)
		}
		tree, err := s.LogTree(ctx) // on SQLite the head is read off the entries: after the count
		if err != nil {
			t.Fatal(err)
		}
		if tree.N != last+1 {
			t.Errorf("the log holds %d entries, want %d (up to the last tap's)", tree.N, last+1)
		}
	})
}

// A PostgreSQL session that does not get the COMMIT's report of its log index (a pooler
// between the store and the server that does not pass reports on) reads the index back: the
// receipt is the same.
func TestTransparencyLog_AReceiptWithoutTheCommitsReportReadsItsIndexBack(t *testing.T) {
	testdb.Each(t, func(t *testing.T, b testdb.Backend) {
		if !b.Postgres {
			t.Skip("SQLite appends in the store and knows the index")
		}
		ctx := context.Background()
		cfg := DefaultConfig()
		dsn := b.DSN(t)
		proxy := pgproxy.Start(t, dsn)
		proxy.HideReports("application_name")
		cfg.DB, cfg.Clock, cfg.Logger = proxy.DSN(dsn), testdb.NewClock(testdb.Epoch), slog.New(slog.DiscardHandler)
		s, err := Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if _, err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		alice := onboardKeyed(t, s, "alice")
		before, err := s.LogTree(ctx)
		if err != nil {
			t.Fatal(err)
		}
		prep, err := s.PrepareTap(ctx, alice.id, CC, MustAmount("1"))
		if err != nil {
			t.Fatal(err)
		}
		reads := &logEntryReads{}
		s.AddQueryHook(reads)
		if n := receiptLogIndex(t, alice.execute(t, s, KindTap, prep)); n != before.N {
			t.Errorf("the tap's receipt has log index %d, want %d (the log's size before it)", n, before.N)
		}
		if reads.n.Load() == 0 {
			t.Error("the receipt's index was not read back, yet the report never arrived")
		}
	})
}

// An execute's receipt is stored before its COMMIT assigns the log index on PostgreSQL, and a
// replay still answers the receipt the execute did, log index and all, whether the store
// remembers the transaction or reads it (a restarted store). Rolling the change back puts the
// index into the stored receipts, which the code before it answers as they are.
func TestTransparencyLog_AReplayAnswersTheLogIndexTheStoredReceiptLacks(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *Store, _ *ledgerClock) {
		ctx := context.Background()
		alice := onboardKeyed(t, s, "alice")
		var xs []Execution
		var answered []Receipt
		for range 3 {
			prep, err := s.PrepareTap(ctx, alice.id, CC, MustAmount("1"))
			if err != nil {
				t.Fatal(err)
			}
			receipt := alice.execute(t, s, KindTap, prep)
			receiptLogIndex(t, receipt)
			xs = append(xs, Execution{Kinds: []string{KindTap}, Hash: prep.Hash, Signature: alice.Sign(prep.Hash), Caller: alice.id})
			answered = append(answered, receipt)
		}
		s.recent = recentPrepares{} // as a restarted store: nothing remembered
		for i, x := range xs {
			if again, err := s.Execute(ctx, x); err != nil || string(again) != string(answered[i]) {
				t.Fatalf("replay %d answered %s (%v), the execute %s", i, again, err, answered[i])
			}
		}
		down, up := migrationsSince(t, s, "receipt_in_the_body")
		runStatements(t, s, down)
		for i, x := range xs {
			var stored []byte
			if err := s.db.NewSelect().Table("prepared_txs").Column("result").Where("hash = ?", x.Hash).Scan(ctx, &stored); err != nil {
				t.Fatal(err)
			}
			if string(stored) != string(answered[i]) {
				t.Fatalf("rolled back, prepared transaction %d stores %s, the execute answered %s", i, stored, answered[i])
			}
		}
		runStatements(t, s, up)
		for i, x := range xs {
			if again, err := s.Execute(ctx, x); err != nil || string(again) != string(answered[i]) {
				t.Fatalf("after the rollback and back, replay %d answered %s (%v), the execute %s", i, again, err, answered[i])
			}
		}
	})
}

// On PostgreSQL the COMMIT takes an update's entry from the transaction's settings, one per
// update in the order the rows were written. A setting made for another update fails the
// COMMIT: neither the update nor an entry commits.
func TestTransparencyLog_ACommitRefusesAPendingEntryOfAnotherUpdate(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *Store, _ *ledgerClock) {
		if s.dialect != Postgres {
			t.Skip("SQLite appends in the store")
		}
		ctx := context.Background()
		before, err := s.LogTree(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := s.wdb.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		for _, q := range []string{
			"INSERT INTO updates (update_id, kind, act_as, recorded_at) VALUES ('0123456789abcdef0123456789abcdef', 'test', 'alice', 0)",
			"SELECT set_config('marketd.log_0', 'fedcba9876543210fedcba9876543210 fQ==', true)",
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if err := tx.Commit(); err == nil || !strings.Contains(err.Error(), "pending entry") {
			t.Fatalf("a commit whose pending entry names another update: %v", err)
		}
		var n int
		if err := s.db.NewSelect().Table("updates").ColumnExpr("count(*)").Where("update_id = '0123456789abcdef0123456789abcdef'").Scan(ctx, &n); err != nil || n != 0 {
			t.Fatalf("the update committed anyway (%d rows, %v)", n, err)
		}
		after, err := s.LogTree(ctx)
		if err != nil || after != before {
			t.Fatalf("the log went from %v to %v (%v)", before, after, err)
		}
	})
}
