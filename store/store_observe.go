package store

import (
	"database/sql"
	"time"
)

// CommitObserver learns of every committed ledger update: its kind and how long its database
// transaction took, from begin to commit. Metrics use it; it must not block.
type CommitObserver func(kind string, took time.Duration)

// ObserveCommits sets the function told of every committed ledger update (nil for none).
// Set it before serving.
func (s *Store) ObserveCommits(fn CommitObserver) { s.commitObserver.Store(&fn) }

func (s *Store) observeCommit(kind string, took time.Duration) {
	if fn := s.commitObserver.Load(); fn != nil && *fn != nil {
		(*fn)(kind, took)
	}
}

// SQLDB is the read pool, for its connection statistics (on PostgreSQL reads and writes share it).
func (s *Store) SQLDB() *sql.DB { return s.db.DB }
