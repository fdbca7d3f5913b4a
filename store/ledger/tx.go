package ledger

import (
	"context"
	"database/sql"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/schema"
)

// Dialect names the SQL database the ledger's tables live in.
type Dialect string

const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)

// Tx is one database transaction the ledger commits in: the transaction itself, the instant it
// runs at (so every row it writes agrees on the time), its dialect, and the writes it defers to
// just before the commit. Whoever runs the transaction makes it (Begin) and sends the deferred
// writes (Flush) as its last step before COMMIT.
type Tx struct {
	bun.Tx
	db       *bun.DB // the database the transaction runs on: how its queries are written
	now      time.Time
	dialect  Dialect
	deferred []byte // writes sent in one round trip before the commit (PostgreSQL)
}

// Begin makes btx, a transaction on db, a ledger transaction running at now.
func Begin(btx bun.Tx, db *bun.DB, now time.Time) *Tx {
	d := SQLite
	if db.Dialect().Name() == dialect.PG {
		d = Postgres
	}
	return &Tx{Tx: btx, db: db, now: now, dialect: d}
}

// Now is the instant the transaction runs at.
func (tx *Tx) Now() time.Time { return tx.now }

// Postgres tells whether the transaction runs on PostgreSQL (else on SQLite).
func (tx *Tx) Postgres() bool { return tx.dialect == Postgres }

// SQL is the transaction's own connection, to run SQL text as written (bun's methods format
// their query's placeholders).
func (tx *Tx) SQL() *sql.Tx { return tx.Tx.Tx }

// WriteQuery is a bun write that can render itself as SQL.
type WriteQuery interface {
	Exec(ctx context.Context, dest ...any) (sql.Result, error)
	AppendQuery(gen schema.QueryGen, b []byte) ([]byte, error)
}

// Later runs a write whose result nobody reads. SQLite runs it at once, in process; PostgreSQL
// gets it with the transaction's other deferred writes in one round trip just before the
// commit. The same transaction must not read back what a deferred write writes.
func (tx *Tx) Later(ctx context.Context, q WriteQuery) error {
	if tx.dialect != Postgres {
		_, err := q.Exec(ctx)
		return err
	}
	b, err := q.AppendQuery(tx.db.QueryGen(), tx.deferred)
	if err != nil {
		return err
	}
	tx.deferred = append(b, ";\n"...)
	return nil
}

// Flush sends the deferred writes. A simple-protocol query may hold several statements.
func (tx *Tx) Flush(ctx context.Context) error {
	if len(tx.deferred) == 0 {
		return nil
	}
	q := string(tx.deferred)
	tx.deferred = nil
	_, err := tx.SQL().ExecContext(ctx, q)
	return err
}

// ForUpdate locks the selected rows on PostgreSQL. SQLite rejects FOR UPDATE, and needs no
// row locks: its write transactions begin IMMEDIATE and run one at a time.
func (tx *Tx) ForUpdate(q *bun.SelectQuery) *bun.SelectQuery {
	if tx.dialect == Postgres {
		return q.For("UPDATE")
	}
	return q
}

// Savepoint sends the writes deferred so far and sets the savepoint name after them; on
// PostgreSQL in the same round trip.
func (tx *Tx) Savepoint(ctx context.Context, name string) error {
	if tx.dialect == Postgres {
		tx.deferred = append(tx.deferred, "SAVEPOINT "+name+";\n"...)
		return tx.Flush(ctx)
	}
	if err := tx.Flush(ctx); err != nil {
		return err
	}
	_, err := tx.SQL().ExecContext(ctx, "SAVEPOINT "+name)
	return err
}

// Deferred tells how far the deferred writes went, for Forget.
func (tx *Tx) Deferred() int { return len(tx.deferred) }

// Forget drops the writes deferred since Deferred answered n, which a rollback to a savepoint
// set before them undoes.
func (tx *Tx) Forget(n int) { tx.deferred = tx.deferred[:min(n, len(tx.deferred))] }
