package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Several marketd instances may serve one PostgreSQL store, each with its session cache. A
// rotation or logout notifies the others on this channel as it commits (NOTIFY is delivered at
// commit), and each drops that session from its cache, so the next request reads the store.
const sessionChannel = "marketd_sessions"

func (tx *Tx) notifySessionChanged(ctx context.Context, sid string) error {
	if tx.s.dialect != Postgres {
		return nil // SQLite serves one process
	}
	_, err := tx.ExecContext(ctx, "SELECT pg_notify(?, ?)", sessionChannel, sid)
	return err
}

// listenSessions keeps a connection of its own listening on sessionChannel until ctx ends.
// After any gap in listening it forgets every cached session: it may have missed a change.
func (s *Store) listenSessions(ctx context.Context, cfg *pgx.ConnConfig, ready chan<- struct{}) {
	defer close(s.listenerDone)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, cfg, ready)
		ready = nil
		s.sessions.forget("")
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("session listener lost its connection; retrying", "error", err.Error(), "in", backoff.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

func (s *Store) listenOnce(ctx context.Context, cfg *pgx.ConnConfig, ready chan<- struct{}) error {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+sessionChannel); err != nil {
		return err
	}
	s.sessions.forget("") // anything cached before listening may be stale
	if ready != nil {
		close(ready)
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		s.sessions.forget(n.Payload)
	}
}
