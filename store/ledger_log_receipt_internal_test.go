package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
		if _, err := s.LogTree(ctx); err != nil { // nothing left to build: the rollback refuses otherwise
			t.Fatal(err)
		}
		down, up := migrationsSince(t, s, "log_format")
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

// On PostgreSQL an update commits numbered, with the rows its entry is made of, and the tree
// is built from them afterwards. While the database refuses to build it (log_entries refuses
// rows here), updates still commit, each with its index, and a checkpoint fails rather than
// leave them out; once it is allowed, the tree takes every waiting entry in, in index order.
// Without a checkpoint asked for, the store builds it on its own after the commits.
func TestTransparencyLog_EntriesTheTreeCannotTakeInYetWaitInTheLedger(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *Store, _ *ledgerClock) {
		if s.dialect != Postgres {
			t.Skip("SQLite appends the whole entry in the transaction that commits the update")
		}
		ctx := context.Background()
		alice := onboardKeyed(t, s, "alice")
		before, err := s.LogTree(ctx)
		if err != nil {
			t.Fatal(err)
		}
		exec := func(q string) {
			t.Helper()
			if _, err := s.wdb.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		exec(`CREATE FUNCTION refuse_entry() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$`)
		exec(`CREATE TRIGGER refuse_entries BEFORE INSERT ON log_entries FOR EACH ROW EXECUTE FUNCTION refuse_entry()`)
		var got []int64
		for range 3 {
			prep, err := s.PrepareTap(ctx, alice.id, CC, MustAmount("1"))
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, receiptLogIndex(t, alice.execute(t, s, KindTap, prep)))
		}
		if want := []int64{before.N, before.N + 1, before.N + 2}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("the taps' receipts have log indexes %v, want %v", got, want)
		}
		if tree, err := s.LogTree(ctx); err == nil {
			t.Fatalf("a tree of %d entries read while %d were committed and none could be taken in", tree.N, before.N+3)
		}
		exec("DROP TRIGGER refuse_entries ON log_entries")
		exec("DROP FUNCTION refuse_entry")
		tree, err := s.LogTree(ctx)
		if err != nil || tree.N != before.N+3 {
			t.Fatalf("the tree after the refusal ended: %+v, %v; want %d entries", tree, err, before.N+3)
		}
		var entries []logEntryRow
		if err := s.db.NewSelect().Model(&entries).Where("log_index >= ?", before.N).Order("log_index").Scan(ctx); err != nil {
			t.Fatal(err)
		}
		indexes := map[string]int64{}
		if err := readLogIndexes(ctx, s.db, []string{entries[0].UpdateID, entries[1].UpdateID, entries[2].UpdateID}, indexes); err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if indexes[e.UpdateID] != e.LogIndex || !bytes.HasPrefix(e.Entry, []byte(`{"updateId":"`+e.UpdateID+`","offset":`)) {
				t.Errorf("entry %d is %.60s, its update's row names index %d", e.LogIndex, e.Entry, indexes[e.UpdateID])
			}
		}

		// No checkpoint asked for: the store builds the tree itself after the commit.
		prep, err := s.PrepareTap(ctx, alice.id, CC, MustAmount("1"))
		if err != nil {
			t.Fatal(err)
		}
		alice.execute(t, s, KindTap, prep)
		deadline := time.Now().Add(10 * time.Second)
		for {
			var size int64
			if err := s.db.NewRaw("SELECT size FROM log_head").Scan(ctx, &size); err != nil {
				t.Fatal(err)
			}
			if size == tree.N+1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the head holds %d entries 10s after the commit of entry %d", size, tree.N)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}
