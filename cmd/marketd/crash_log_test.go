package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"marketd/store/translog"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// checkLogAfterCrash checks the transparency log after a kill: one entry per committed update
// and none without its update, in offset order, each update's row naming its entry's index,
// and the restarted instance serves a checkpoint, signed by its key, whose root the entries it
// serves hash to (translog.Audit, every party-signed entry's signature checked). SQLite keeps
// no head row: its head's size is one past the last entry's index. On PostgreSQL an update
// commits numbered by its COMMIT (log_sequence, the update's log_index) with what its entry is
// made of (its row, and the prepared transaction's with the party's signature), and the tree
// takes it in afterwards: an update's entry is in log_entries or waits at an index from the
// head's size on, not both.
func checkLogAfterCrash(t *testing.T, db *sql.DB, sqlite bool, base string) {
	t.Helper()
	var updates, entries, size, orphans, indexed int64
	count := `(SELECT count(*) FROM log_entries)`
	head := "(SELECT next FROM log_sequence)"
	waiting := `u.log_index >= (SELECT size FROM log_head)`
	orphaned := `(SELECT count(*) FROM log_entries e LEFT JOIN updates u ON u.update_id = e.update_id WHERE u.update_id IS NULL) +
		(SELECT count(*) FROM updates u LEFT JOIN prepared_txs p ON p.hash = u.prepared_hash WHERE ` + waiting + ` AND u.prepared_hash IS NOT NULL AND p.signature IS NULL)`
	named := `(SELECT count(*) FROM updates u WHERE EXISTS (SELECT 1 FROM log_entries e WHERE e.log_index = u.log_index AND e.update_id = u.update_id)
		OR ` + waiting + `)`
	if sqlite {
		head = "(SELECT COALESCE(MAX(log_index) + 1, 0) FROM log_entries)"
		orphaned = `(SELECT count(*) FROM log_entries e LEFT JOIN updates u ON u.update_id = e.update_id WHERE u.update_id IS NULL)`
		named = `(SELECT count(*) FROM updates u JOIN log_entries e ON e.log_index = u.log_index AND e.update_id = u.update_id)`
	} else {
		count += ` + (SELECT count(*) FROM updates u WHERE ` + waiting + `)`
	}
	// One statement, one snapshot: the restarted instance may be committing meanwhile.
	err := db.QueryRow(`SELECT (SELECT count(*) FROM updates), `+count+`, `+head+`, `+orphaned+`, `+named).
		Scan(&updates, &entries, &size, &orphans, &indexed)
	if err != nil {
		t.Fatal(err)
	}
	if updates != entries || entries != size || orphans != 0 || indexed != updates {
		t.Fatalf("%d updates (%d naming their entry's index), %d log entries, waiting or built (%d without their update or signature), %d numbered", updates, indexed, entries, orphans, size)
	}
	get := func(path string) []byte { return logGet(t, base, path) }
	v, err := note.NewVerifier(strings.TrimSpace(string(get("key"))))
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(get("checkpoint"), note.VerifierList(v))
	if err != nil {
		t.Fatal(err)
	}
	tree, err := translog.ParseCheckpoint(n.Text, v.Name())
	if err != nil {
		t.Fatal(err)
	}
	if tree.N < updates { // writes of the restarted instance (its expiry sweeps) may follow the count
		t.Fatalf("the checkpoint says %d entries, the store held %d updates", tree.N, updates)
	}
	logged, err := translog.Audit(tree, "devnet", func(tile tlog.Tile) ([]byte, error) { return get(translog.TilePath(tile)), nil })
	if err != nil {
		t.Fatalf("audit after the crash: %v", err)
	}
	rows, err := db.Query(fmt.Sprintf("SELECT update_id, ledger_offset FROM updates ORDER BY ledger_offset LIMIT %d", tree.N))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for i := 0; rows.Next(); i++ {
		var id string
		var offset int64
		if err := rows.Scan(&id, &offset); err != nil {
			t.Fatal(err)
		}
		if e := logged[i]; e.UpdateID != id || e.Offset != offset {
			b, _ := json.Marshal(e)
			t.Fatalf("entry %d is %s, the update at that place in offset order is %s at %d", i, b, id, offset)
		}
	}
}
