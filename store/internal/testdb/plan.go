package testdb

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"testing"

	"github.com/uptrace/bun"
)

// The plan tests' tools: a log of the SQL a store ran and the plan each dialect gives a query.
// They live here, apart from the store, so that the tests of a list's read sit beside it,
// whether it is the store's (an internal test) or a part's (store/admin).

// QueryLog keeps the SQL a store ran, for a plan test to explain. Add it as a query hook.
type QueryLog struct {
	// Skip, when set, leaves out the statements whose context it answers true for (the
	// store's background work, store.InBackground).
	Skip func(context.Context) bool

	mu  sync.Mutex
	sql []string
}

func (l *QueryLog) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }
func (l *QueryLog) AfterQuery(ctx context.Context, e *bun.QueryEvent) {
	if l.Skip != nil && l.Skip(ctx) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sql = append(l.sql, e.Query)
}

// Last returns the last query that orders its rows (the feed's page read) and forgets the log.
func (l *QueryLog) Last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var q string
	for _, s := range l.sql {
		if strings.Contains(s, "ORDER BY") {
			q = s
		}
	}
	l.sql = nil
	return q
}

// ExplainPlan returns the plan of query q on db (PostgreSQL when postgres, else SQLite), one
// node a line.
func ExplainPlan(t *testing.T, db bun.IDB, postgres bool, q string) string {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	explain := "EXPLAIN QUERY PLAN "
	if postgres {
		// On a small table the planner prefers scanning and sorting; with those priced out, a
		// Sort left in the plan means no index can give the page order.
		for _, off := range []string{"enable_seqscan", "enable_bitmapscan", "enable_sort"} {
			if _, err := tx.ExecContext(ctx, "SET LOCAL "+off+" = off"); err != nil {
				t.Fatal(err)
			}
		}
		explain = "EXPLAIN "
	}
	rows, err := tx.QueryContext(ctx, explain+q)
	if err != nil {
		t.Fatalf("explain %s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var lines []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		line := vals[len(vals)-1] // the plan text: PostgreSQL's only column, SQLite's "detail"
		switch v := line.(type) {
		case []byte:
			lines = append(lines, string(v))
		case string:
			lines = append(lines, v)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// FlatPlan reports whether plan (ExplainPlan's) reads rows in page order from an index.
func FlatPlan(postgres bool, plan string) bool {
	if postgres {
		return !strings.Contains(plan, "Sort") && !strings.Contains(plan, "Seq Scan") && strings.Contains(plan, "Index")
	}
	// A SCAN with no index is the table's own b-tree, in rowid order: the feeds that read it
	// (audit log, updates) order by their INTEGER PRIMARY KEY.
	return !strings.Contains(plan, "TEMP B-TREE")
}

// PageRead is one list's page read for WalkInPageOrder: Read reads its first page, or with
// cursor a page from a position.
type PageRead struct {
	Name string
	Read func(cursor bool) error
}

// WalkInPageOrder fails t unless each read, on its first page and from a cursor, logs an
// ordered query in log whose plan on db (PostgreSQL when postgres) reads rows in page order
// (FlatPlan).
func WalkInPageOrder(t *testing.T, db bun.IDB, postgres bool, log *QueryLog, reads []PageRead) {
	t.Helper()
	for _, f := range reads {
		for _, cursor := range []bool{false, true} {
			log.Last()
			if err := f.Read(cursor); err != nil {
				t.Fatalf("%s: %v", f.Name, err)
			}
			q := log.Last()
			if q == "" {
				t.Fatalf("%s: no page read was logged", f.Name)
			}
			if plan := ExplainPlan(t, db, postgres, q); !FlatPlan(postgres, plan) {
				t.Errorf("%s (cursor %v) does not walk an index in page order:\n%s\n%s", f.Name, cursor, q, plan)
			}
		}
	}
}
