package store

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"marketd/store/internal/keyset"
)

// The store's exported core: what the store's part packages (store/admin) build on, the
// capabilities they need of the store and nothing else. A part package imports the store;
// the store never imports a part. Keep it narrow: a database handle or a hook, never *Tx.

// ReadDB is the database the store reads from, for a part's reads (store/admin's charts read
// the market's tables through it).
func (s *Store) ReadDB() bun.IDB { return s.db }

// WriteDB is the database the store writes to (on SQLite its one writing connection), for a
// part's writes of its own tables outside a store transaction, and for its reads that must
// see the latest write.
func (s *Store) WriteDB() bun.IDB { return s.wdb }

// WriteTx runs fn in one write transaction of the store's, as the store's own writes run
// (queued behind the other writers, committed once; any error rolls everything back), and
// hands it the transaction's instant on the store's clock.
func (s *Store) WriteTx(ctx context.Context, fn func(ctx context.Context, tx bun.Tx, now time.Time) error) error {
	return s.inTx(ctx, func(tx *Tx) error { return fn(ctx, tx.Tx.Tx, tx.Now()) })
}

// IsUniqueViolation tells whether err is a unique constraint refusing a row, on either
// dialect: how a part answers a taken name with a conflict.
func IsUniqueViolation(err error) bool { return isUniqueViolation(err) }

// StartPage validates r for the list named list and decodes its cursor under the service's
// cursor key: a part's keyset read starts here, reads in the plan's order past its position
// (the plan's Seek), and ends with FinishPage. A list's name is what its cursors carry, so a
// cursor of one list (or of one filter of it) is refused by another.
func StartPage[K any](ctx context.Context, s *Store, list string, r PageRequest) (*keyset.Query[K], error) {
	return startPage[K](ctx, s, list, r)
}

// FinishPage cuts rows (read in q's direction) to the page, puts them in list order and
// issues its cursors, as the store's own lists do.
func FinishPage[T, K any](ctx context.Context, s *Store, q *keyset.Query[K], rows []T, key func(T) K) (Page[T], error) {
	return finish(ctx, s, q, rows, key)
}

// HashText is a short, stable digest of a list's filter, for the list's name.
func HashText(text string) string { return hashText(text) }
