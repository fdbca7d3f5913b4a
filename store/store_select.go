package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"
)

// selectPlanned reads the rows of query, a statement whose ? marks take args, into dest (a
// bun model). bun renders arguments into a statement's text, so PostgreSQL plans each
// statement it is sent anew; a keyset page of an indexed walk plans in longer than it runs,
// and its planning grows with the tables' statistics as history grows. On PostgreSQL
// selectPlanned sends query with its arguments apart, prepared once per connection, which
// PostgreSQL plans once for all arguments after its first executions; SQLite is sent the
// statement as bun renders it, as before (bound arguments made its walks of one kind no
// faster, and a little slower). query's only ? are its marks: no literal in it holds one. The
// query hooks see the statement as bun renders it, and as sent in QueryTemplate.
func (s *Store) selectPlanned(ctx context.Context, dest any, query string, args ...any) error {
	if s.dialect != Postgres {
		rendered := s.db.QueryGen().FormatQuery(query, args...)
		return s.selectSent(ctx, dest, query, rendered, args, func(ctx context.Context) (*sql.Rows, error) {
			return s.db.DB.QueryContext(ctx, rendered)
		})
	}
	return s.selectNumbered(ctx, dest, query, numberedMarks(query), args)
}

// selectNumbered sends sent, query with its marks numbered (numberedMarks), to PostgreSQL
// with args apart, prepared once per connection by pgx's statement cache.
func (s *Store) selectNumbered(ctx context.Context, dest any, query, sent string, args []any) error {
	return s.selectSent(ctx, dest, query, sent, args, func(ctx context.Context) (*sql.Rows, error) {
		return s.db.DB.QueryContext(ctx, sent, append([]any{pgx.QueryExecModeCacheStatement}, args...)...)
	})
}

// numberedMarks is query with its ? marks as PostgreSQL's $1, $2, ...
func numberedMarks(query string) string {
	var b strings.Builder
	n := 0
	for part := range strings.SplitSeq(query, "?") {
		if n > 0 {
			fmt.Fprintf(&b, "$%d", n)
		}
		b.WriteString(part)
		n++
	}
	return b.String()
}

// A preparedRead is a short read the store sends often by key (an offer's open version, a
// live NFT): model, a nil pointer to the model read, names its table and columns as bun's
// own queries do, and where adds its conditions, one ? mark for each of its n arguments.
type preparedRead struct {
	model any
	n     int
	where func(q *bun.SelectQuery, args []any) *bun.SelectQuery
}

// readStatement is a preparedRead made for one store.
type readStatement struct {
	text string    // with ? marks
	sent string    // PostgreSQL's: text with its marks numbered
	stmt *sql.Stmt // SQLite's: compiled once on each connection that runs it
}

// selectPrepared reads the rows of r, its marks taking args, into dest (a bun model), on
// either store with the arguments apart and the statement compiled once per connection.
// On SQLite compiling a statement's text costs more than running it when the read is one
// index step: an offer's open version took 0.14 ms, two fifths of it compiling, and an
// accept's prepare reads three such rows. PostgreSQL gets it as selectPlanned sends.
func (s *Store) selectPrepared(ctx context.Context, dest any, r *preparedRead, args ...any) error {
	rs, err := s.readStatement(ctx, r)
	if err != nil {
		return err
	}
	if s.dialect == Postgres {
		return s.selectNumbered(ctx, dest, rs.text, rs.sent, args)
	}
	return s.selectSent(ctx, dest, rs.text, rs.text, args, func(ctx context.Context) (*sql.Rows, error) {
		return rs.stmt.QueryContext(ctx, args...)
	})
}

// selectOn is selectPrepared when db is the store's read pool; through any other db (a
// transaction) r is sent as bun renders it.
func (s *Store) selectOn(ctx context.Context, db bun.IDB, dest any, r *preparedRead, args ...any) error {
	if pool, ok := db.(*bun.DB); ok && pool == s.db {
		return s.selectPrepared(ctx, dest, r, args...)
	}
	return r.where(db.NewSelect().Model(dest), args).Scan(ctx)
}

// selectFirst reads r through db (selectOn) and returns its first row, nil when it has none.
func selectFirst[T any](ctx context.Context, s *Store, db bun.IDB, r *preparedRead, args ...any) (*T, error) {
	var rows []T
	if err := s.selectOn(ctx, db, &rows, r, args...); err != nil || len(rows) == 0 {
		return nil, err
	}
	return &rows[0], nil
}

// readStatement makes r's text, and on SQLite its statement, once for the store.
func (s *Store) readStatement(ctx context.Context, r *preparedRead) (*readStatement, error) {
	if rs, ok := s.reads.Load(r); ok {
		return rs.(*readStatement), nil
	}
	s.readsMu.Lock()
	defer s.readsMu.Unlock()
	if rs, ok := s.reads.Load(r); ok {
		return rs.(*readStatement), nil
	}
	marks := make([]any, r.n)
	for i := range marks {
		marks[i] = bun.Safe("?")
	}
	rs := &readStatement{text: r.where(s.db.NewSelect().Model(r.model), marks).String()}
	if s.dialect == Postgres {
		rs.sent = numberedMarks(rs.text)
	} else {
		stmt, err := s.db.DB.PrepareContext(ctx, rs.text)
		if err != nil {
			return nil, fmt.Errorf("prepare %q: %w", rs.text, err)
		}
		rs.stmt = stmt
	}
	s.reads.Store(r, rs)
	return rs, nil
}

// closeReads closes the statements readStatement made.
func (s *Store) closeReads() error {
	var errs []error
	s.reads.Range(func(_, v any) bool {
		if st := v.(*readStatement).stmt; st != nil {
			errs = append(errs, st.Close())
		}
		return true
	})
	return errors.Join(errs...)
}

// selectSent runs query (its ? marks taking args), sent by send as the text sent, and scans
// its rows into dest. The query hooks, when there are any, see the statement with its
// arguments rendered into it (in Query) and as sent (in QueryTemplate).
func (s *Store) selectSent(ctx context.Context, dest any, query, sent string, args []any, send func(context.Context) (*sql.Rows, error)) error {
	hooks := queryHooks{s}
	var e *bun.QueryEvent
	if s.hooks.Load() != nil {
		e = &bun.QueryEvent{DB: s.db, Query: s.db.QueryGen().FormatQuery(query, args...), QueryTemplate: sent, QueryArgs: args, StartTime: time.Now()}
		ctx = hooks.BeforeQuery(ctx, e)
	}
	rows, err := send(ctx)
	if err == nil {
		err = s.db.ScanRows(ctx, rows, dest)
	}
	if e != nil {
		e.Err = err
		hooks.AfterQuery(ctx, e)
	}
	return err
}
