package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Several marketd instances may serve one PostgreSQL store, each with its caches. A write
// that changes what another instance may have cached notifies the others as it commits
// (NOTIFY is delivered at commit), and each drops what it kept of it, so the next request
// reads the store.
const (
	// sessionChannel carries the id of a session that rotated or logged out.
	sessionChannel = "marketd_sessions"
	// collectionChannel carries the id of a collection whose NFTs or listings changed.
	collectionChannel = "marketd_collections"
)

func (tx *Tx) notifySessionChanged(ctx context.Context, sid string) error {
	if tx.s.dialect != Postgres {
		return nil // SQLite serves one process
	}
	_, err := tx.ExecContext(ctx, "SELECT pg_notify(?, ?)", sessionChannel, tx.s.payload(sid))
	return err
}

// notifyCollections tells the other instances, as the transaction commits, that the pages of
// the collections ids changed.
func (tx *Tx) notifyCollections(ctx context.Context, ids []string) error {
	if tx.s.dialect != Postgres {
		return nil // SQLite serves one process
	}
	for _, id := range ids {
		if err := tx.Later(ctx, tx.NewRaw("SELECT pg_notify(?, ?)", collectionChannel, tx.s.payload(id))); err != nil {
			return err
		}
	}
	return nil
}

// listen keeps a connection of its own listening on the channels until ctx ends.
// After any gap in listening it forgets every cached session and page: it may have missed a
// change.
func (s *Store) listen(ctx context.Context, cfg *pgx.ConnConfig, ready chan<- struct{}) {
	defer close(s.listenerDone)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, cfg, ready)
		ready = nil
		s.forgetCached()
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("the notification listener lost its connection; retrying", "error", err.Error(), "in", backoff.String())
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
	if _, err := conn.Exec(ctx, "LISTEN "+sessionChannel+"; LISTEN "+collectionChannel); err != nil {
		return err
	}
	s.forgetCached() // anything cached before listening may be stale
	if ready != nil {
		close(ready)
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		id, ok := s.fromOthers(n.Payload)
		if !ok {
			continue
		}
		switch n.Channel {
		case sessionChannel:
			s.sessions.forget(id)
		case collectionChannel:
			s.collectionPages.Invalidate("")
			s.nftPages.Invalidate(id)
			s.nftIndex.kick() // it ends the collection's pages again once it has the change
		}
	}
}

// A notification's payload is "origin store id": the instance that sent it, the store it
// wrote to (its schema: the channels are the database's, which other stores' instances may
// share) and the session or collection id.
func (s *Store) payload(id string) string { return s.origin + " " + s.schema + " " + id }

// fromOthers returns the id a notification carries when it matters here: it comes from another
// instance of this store. Its sender dropped what it kept as its write committed; instances of
// other stores keep nothing of this one.
func (s *Store) fromOthers(payload string) (string, bool) {
	origin, rest, ok1 := strings.Cut(payload, " ")
	i := strings.LastIndexByte(rest, ' ')
	if !ok1 || i < 0 {
		return payload, true // from an instance that does not name itself: take it
	}
	schema, id := rest[:i], rest[i+1:]
	return id, origin != s.origin && schema == s.schema
}

// newOrigin names an instance in its notifications.
func newOrigin() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// forgetCached drops every cached session and page.
func (s *Store) forgetCached() {
	s.sessions.forget("")
	s.collectionPages.InvalidateAll()
	s.nftPages.InvalidateAll()
}
