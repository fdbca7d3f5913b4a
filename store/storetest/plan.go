package storetest

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/uptrace/bun"

	"marketd/store"
)

// PlanRead is one read of a growing history whose statements WalkIndexes explains.
type PlanRead struct {
	Name string
	Read func() error
	// PageSorts: the read sorts the rows of its page only, which Limit'ed index walks gave
	// it (the first pages of several NFTs' histories, merged).
	PageSorts bool
}

// WalkIndexes runs each read on s, a PostgreSQL store, and explains every SELECT it ran with
// sequential scans and sorts priced out: a plan that still scans or sorts fails t, so the
// database walks only the page however long the history grows. A statement sent with its
// arguments apart is explained on PostgreSQL's generic plan too, which it runs on once it has
// run a few times.
func WalkIndexes(t *testing.T, s *store.Store, reads []PlanRead) {
	t.Helper()
	ctx := context.Background()
	rec := &statements{}
	s.AddQueryHook(rec)
	raw, err := sql.Open("pgx", s.Config().DB)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	conn, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET enable_seqscan = off; SET enable_sort = off; SET enable_incremental_sort = off"); err != nil {
		t.Fatal(err)
	}
	for _, r := range reads {
		rec.take()
		if err := r.Read(); err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
		stmts := rec.take()
		if len(stmts) == 0 {
			t.Fatalf("%s ran no statement", r.Name)
		}
		for _, st := range stmts {
			plans := []string{"EXPLAIN " + st.query}
			if st.sent != "" {
				// sent apart, the statement runs on PostgreSQL's generic plan once it
				// has run a few times: that plan walks the index too
				literals := make([]string, len(st.args))
				for i, a := range st.args {
					literals[i] = literal(a)
				}
				if _, err := conn.ExecContext(ctx, "PREPARE planned AS "+st.sent); err != nil {
					t.Fatalf("%s: prepare %s: %v", r.Name, st.sent, err)
				}
				plans = append(plans, "EXPLAIN EXECUTE planned("+strings.Join(literals, ", ")+")")
			}
			for i, explain := range plans {
				if i == 1 {
					if _, err := conn.ExecContext(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
						t.Fatal(err)
					}
				}
				text := explainText(t, ctx, conn, explain)
				sorts := strings.Contains(text, "Sort")
				if r.PageSorts {
					sorts = sorts && strings.Count(text, "Limit") < 2 // each walk ends at its page
				}
				if strings.Contains(text, "Seq Scan") || sorts {
					t.Errorf("%s: the plan scans or sorts:\n%s\n%s", r.Name, explain, text)
				}
			}
			if st.sent != "" {
				if _, err := conn.ExecContext(ctx, "DEALLOCATE planned; SET plan_cache_mode = auto"); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// statements records the SELECTs a store runs.
type statements struct {
	mu   sync.Mutex
	list []statement
}

// statement is a SELECT as bun renders it and, for one sent with its arguments apart (the
// store's planned reads), the text sent and its arguments.
type statement struct {
	query, sent string
	args        []any
}

func (s *statements) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }
func (s *statements) AfterQuery(ctx context.Context, e *bun.QueryEvent) {
	if store.InBackground(ctx) || !strings.HasPrefix(strings.TrimSpace(e.Query), "SELECT") {
		return
	}
	st := statement{query: e.Query}
	if e.QueryTemplate != e.Query && strings.Contains(e.QueryTemplate, "$1") {
		st.sent, st.args = e.QueryTemplate, e.QueryArgs
	}
	s.mu.Lock()
	s.list = append(s.list, st)
	s.mu.Unlock()
}

func (s *statements) take() []statement {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.list
	s.list = nil
	return out
}

// explainText is the plan EXPLAIN statement explain prints, one line a node.
func explainText(t *testing.T, ctx context.Context, conn *sql.Conn, explain string) string {
	t.Helper()
	rows, err := conn.QueryContext(ctx, explain)
	if err != nil {
		t.Fatalf("%s: %v", explain, err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var line string
		rows.Scan(&line)
		plan = append(plan, line)
	}
	return strings.Join(plan, "\n")
}

// literal is a planned statement's argument as SQL text: a string quoted, a number as it is.
func literal(a any) string {
	if s, ok := a.(string); ok {
		return "'" + strings.ReplaceAll(s, "'", "''") + "'"
	}
	return fmt.Sprint(a)
}
