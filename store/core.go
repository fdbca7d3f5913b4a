package store

import "github.com/uptrace/bun"

// The store's exported core: what the store's part packages (store/admin) build on, the
// capabilities they need of the store and nothing else. A part package imports the store;
// the store never imports a part. Keep it narrow: a database handle or a hook, never *Tx.

// WriteDB is the database the store writes to (on SQLite its one writing connection), for a
// part's writes of its own tables outside a store transaction, and for its reads that must
// see the latest write.
func (s *Store) WriteDB() bun.IDB { return s.wdb }
