package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/mod/sumdb/tlog"
)

// On PostgreSQL the log is written in two steps, as Tessera and other transparency logs split
// sequencing from integration. A transaction that commits updates queues each one's entry
// (queueLogAppend: its bytes after the offset) and its COMMIT numbers them under the offset
// lock (the log_queue migration): the entry's bytes, offset and index are then durable with
// the update, and no later step can change them. Integration builds the tree from the queue:
// it takes the queued entries in index order, writes each one's bytes and stored hashes to
// log_entries and the new head, and deletes them from the queue, in one transaction under a
// lock of its own (logIntegrationLock), so instances on one database take turns and each
// entry is built once. It commits without waiting for its WAL to reach the disk: everything
// it writes is determined by what had committed, so an integration lost in a crash is done
// again, the same, by the next one.
//
// It runs in this process's background after every commit that queued entries (kickLog),
// and before the log's head is read for a checkpoint (LogTree), so a checkpoint covers every
// update committed before it was asked for, whichever instance committed it. None of it is
// under the offset lock, so the commits that order the ledger wait on none of it.

// logIntegrationLock is the advisory lock under which the tree is built from the queue.
const logIntegrationLock = 32199672997732212

// The background integration takes in what commits queued once integrationBatch entries
// are queued, or integrationDelay after the first of them, whichever comes first: one
// transaction then builds many entries, which costs the write path less than building a
// few at a time. A checkpoint does not wait for either: it integrates what is queued.
const (
	integrationBatch = 256
	integrationDelay = time.Second
)

// maxIntegration bounds the entries one integration transaction takes in.
const maxIntegration = 1024

// logIntegration is this process's side of integration: one at a time, and a goroutine that
// integrates after the commits that queued entries.
type logIntegration struct {
	mu     sync.Mutex    // one integration at a time in this process
	once   sync.Once     // starts the goroutine
	queued atomic.Int64  // entries this process's commits queued since its last integration began
	kick   chan struct{} // the first entry since then was queued
	full   chan struct{} // integrationBatch entries were
	stop   context.CancelFunc
	done   chan struct{}
}

// kickLog tells the background integration that a commit queued n entries.
func (s *Store) kickLog(n int) {
	li := &s.integration
	li.once.Do(func() {
		ctx, stop := context.WithCancel(context.Background())
		li.kick, li.full, li.stop, li.done = make(chan struct{}, 1), make(chan struct{}, 1), stop, make(chan struct{})
		go func() {
			defer close(li.done)
			for {
				select {
				case <-ctx.Done():
					return
				case <-li.kick:
				}
				select {
				case <-ctx.Done():
					return
				case <-li.full:
				case <-time.After(integrationDelay):
				}
				li.queued.Store(0)
				if err := s.integrateLog(ctx); err != nil && ctx.Err() == nil {
					s.log.Warn("transparency log: integration failed; the next commit or checkpoint tries again", "err", err)
				}
			}
		}()
	})
	signal := func(c chan struct{}) {
		select {
		case c <- struct{}{}:
		default: // one is pending already
		}
	}
	signal(li.kick)
	if li.queued.Add(int64(n)) >= integrationBatch {
		signal(li.full)
	}
}

// stopIntegration stops the background integration, once nothing commits any more.
func (s *Store) stopIntegration() {
	li := &s.integration
	li.once.Do(func() {}) // none starts after this
	if li.stop != nil {
		li.stop()
		<-li.done
	}
}

// integrateLog takes every entry queued so far into the tree (PostgreSQL).
func (s *Store) integrateLog(ctx context.Context) error {
	li := &s.integration
	li.mu.Lock()
	defer li.mu.Unlock()
	for {
		n, err := s.integrateBatch(ctx)
		if err != nil || n < maxIntegration {
			return err
		}
	}
}

// integrateBatch takes up to maxIntegration queued entries, the next in index order, into the
// tree, in one transaction, and says how many it took.
func (s *Store) integrateBatch(ctx context.Context) (int, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("transparency log: integrate: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	head := &logHead{ID: 1}
	_, err = tx.Exec(ctx, "SET LOCAL synchronous_commit = off; SELECT pg_advisory_xact_lock("+strconv.FormatInt(logIntegrationLock, 10)+")")
	if err == nil {
		err = tx.QueryRow(ctx, "SELECT size, frontier FROM log_head WHERE id = 1").Scan(&head.Size, &head.Frontier)
	}
	if err != nil {
		return 0, fmt.Errorf("transparency log: integrate: read the head: %w", err)
	}
	queued, err := queuedLeaves(ctx, tx)
	if err != nil || len(queued) == 0 {
		return 0, err
	}
	a, err := appendLeaves(head, queued)
	if err != nil {
		return 0, err
	}
	// The entries' bytes stay in the server: each is made there from its queued row, as the
	// leaf hash was, and moved from the queue to log_entries with the stored hashes computed
	// here. The head moves only from the size this read.
	ids := make([]string, len(queued))
	hashes := make([][]byte, len(queued))
	for i, e := range a.entries {
		ids[i], hashes[i] = e.UpdateID, e.Hashes
	}
	tag, err := tx.Exec(ctx, "WITH built AS (DELETE FROM log_queue AS q USING unnest($1::text[], $2::bytea[]) AS h (update_id, hashes) "+
		"WHERE q.update_id = h.update_id RETURNING q.update_id, q.tail, h.hashes) "+
		"INSERT INTO log_entries (log_index, update_id, entry, hashes) "+
		"SELECT u.log_index, b.update_id, "+queuedEntrySQL+", b.hashes FROM built AS b "+queuedUpdateSQL+"; "+
		"UPDATE log_head SET size = $3, frontier = $4 WHERE id = 1 AND size = $5", ids, hashes, a.head.Size, a.head.Frontier, head.Size)
	if err == nil && tag.RowsAffected() != 1 {
		err = errors.New("the head moved meanwhile")
	}
	if err != nil {
		return 0, fmt.Errorf("transparency log: integrate entries %d to %d: %w", a.from, a.head.Size-1, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("transparency log: integrate entries %d to %d: %w", a.from, a.head.Size-1, err)
	}
	return len(queued), nil
}

// entryPrefixSQL makes, in SQL, an entry's bytes before its queued tail from its update's ID
// (b.update_id) and offset (u.ledger_offset): what entryPrefix and the offset's digits are.
const entryPrefixSQL = `{"updateId":"' || b.update_id || '","offset":' || u.ledger_offset::text || '`

// queuedEntrySQL is, in SQL, the bytes of queued entry b whose update is u: its prefix, then
// its tail.
const queuedEntrySQL = "convert_to('" + entryPrefixSQL + "', 'UTF8') || b.tail"

// queuedUpdateSQL looks up the update (u: its index and offset) of queued entry b by its key
// (LATERAL): the queue is short, the updates are the whole ledger, whatever the planner would
// guess of the two tables' sizes.
const queuedUpdateSQL = "CROSS JOIN LATERAL (SELECT log_index, ledger_offset FROM updates WHERE update_id = b.update_id) AS u"

// queuedLeaves reads the leaf hashes of the queued entries the tree takes in next, in index
// order: RFC 6962's SHA-256 of 0x00 and the entry's bytes, made whole in the server (the
// prefix before the offset, the offset and the queued tail), so the bytes never travel. Every
// committed one has its index (the COMMIT wrote it), and the indexes follow the head's size
// one by one: the COMMITs that numbered them took turns under the offset lock, each visible
// before the next took its number, so whatever is visible is a prefix.
func queuedLeaves(ctx context.Context, tx pgx.Tx) ([]logEntryRow, error) {
	rows, err := tx.Query(ctx, "SELECT u.log_index, b.update_id, sha256('\\x00'::bytea || "+queuedEntrySQL+") "+
		"FROM log_queue AS b "+queuedUpdateSQL+" ORDER BY u.log_index LIMIT $1", maxIntegration)
	if err != nil {
		return nil, fmt.Errorf("transparency log: integrate: read the queue: %w", err)
	}
	defer rows.Close()
	var out []logEntryRow
	for rows.Next() {
		var e logEntryRow
		var n *int64
		var leaf []byte
		if err := rows.Scan(&n, &e.UpdateID, &leaf); err != nil {
			return nil, fmt.Errorf("transparency log: integrate: read the queue: %w", err)
		}
		if n == nil || len(leaf) != tlog.HashSize {
			return nil, errors.New("transparency log: integrate: a committed update's queued entry has no index or no offset")
		}
		e.LogIndex, e.Hashes = *n, leaf // the leaf hash, until appendLeaves gives the stored hashes
		out = append(out, e)
	}
	return out, rows.Err()
}
