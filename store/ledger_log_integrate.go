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
	"github.com/jackc/pgx/v5/pgconn"
)

// On PostgreSQL the log is written in two steps, as Tessera and other transparency logs split
// sequencing from integration. The COMMIT of a transaction that commits updates numbers them
// under the offset lock (the log_format migration), and each one's entry is
// made of the rows the transaction writes anyway: the update's (its ID, offset, kind, party,
// time, index and the prepared transaction a party signed for it) and that prepared
// transaction's (the bytes signed, the key and the signature). The entry's bytes, offset and
// index are then durable with the update, and no later step can change them. Integration
// builds the tree from those rows: it reads the updates after the last one the tree holds, in
// offset order (which is index order: both are taken under the lock), makes their entries
// (logEntry, as SQLite's commit does), and writes each one's bytes and stored hashes to
// log_entries and the new head, in one transaction under a lock of its own
// (logIntegrationLock), so instances on one database take turns and each entry is built once.
// It commits without waiting for its WAL to reach the disk: everything it writes is determined
// by what had committed, so an integration lost in a crash is done again, the same, by the
// next one.
//
// It runs in this process's background after every commit that numbered entries (kickLog),
// and before the log's head is read for a checkpoint (LogTree), so a checkpoint covers every
// update committed before it was asked for, whichever instance committed it. None of it is
// under the offset lock, so the commits that order the ledger wait on none of it.

// logIntegrationLock is the advisory lock under which the tree is built.
const logIntegrationLock = 32199672997732212

// The background integration takes in what commits numbered once integrationBatch entries
// wait, or integrationDelay after the first of them, whichever comes first: one transaction
// then builds many entries, which costs the write path less than building a few at a time. A
// checkpoint does not wait for either: it integrates what waits.
const (
	integrationBatch = 256
	integrationDelay = time.Second
)

// integrationMode is how integration sends its statements: each with its arguments apart and
// its rows in binary, so the entries' bytes and hashes travel as they are, not as hexadecimal
// text (the store's other statements are rendered into their text: Open).
const integrationMode = pgx.QueryExecModeCacheDescribe

// maxIntegration bounds the entries one integration transaction takes in.
const maxIntegration = 1024

// logIntegration is this process's side of integration: one at a time, and a goroutine that
// integrates after the commits that numbered entries.
type logIntegration struct {
	mu      sync.Mutex    // one integration at a time in this process
	once    sync.Once     // starts the goroutine
	waiting atomic.Int64  // entries this process's commits numbered since its last integration began
	kick    chan struct{} // the first entry since then was numbered
	full    chan struct{} // integrationBatch entries were
	stop    context.CancelFunc
	done    chan struct{}
}

// kickLog tells the background integration that a commit numbered n entries.
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
				li.waiting.Store(0)
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
	if li.waiting.Add(int64(n)) >= integrationBatch {
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

// integrateLog takes every entry numbered so far into the tree (PostgreSQL).
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

// integrateBatch takes up to maxIntegration numbered entries, the next in index order, into
// the tree, in one transaction, and says how many it took.
func (s *Store) integrateBatch(ctx context.Context) (int, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("transparency log: integrate: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	head := &logHead{ID: 1}
	var lastOffset, numbered int64
	_, err = tx.Exec(ctx, "SET LOCAL synchronous_commit = off; SELECT pg_advisory_xact_lock("+strconv.FormatInt(logIntegrationLock, 10)+")")
	if err == nil {
		err = tx.QueryRow(ctx, "SELECT h.size, h.frontier, h.last_offset, s.next FROM log_head AS h, log_sequence AS s WHERE h.id = 1 AND s.id = 1").
			Scan(&head.Size, &head.Frontier, &lastOffset, &numbered)
	}
	if err != nil {
		return 0, fmt.Errorf("transparency log: integrate: read the head: %w", err)
	}
	if numbered <= head.Size {
		return 0, nil
	}
	us, err := numberedUpdates(ctx, tx, lastOffset, head.Size, min(numbered-head.Size, maxIntegration))
	if err != nil || len(us) == 0 {
		return 0, err
	}
	a, err := appendTo(head, us)
	if err != nil {
		return 0, err
	}
	// The head moves only from the size this read.
	indexes := make([]int64, len(us))
	ids := make([]string, len(us))
	entries := make([][]byte, len(us))
	hashes := make([][]byte, len(us))
	for i, e := range a.entries {
		indexes[i], ids[i], entries[i], hashes[i] = e.LogIndex, e.UpdateID, e.Entry, e.Hashes
	}
	_, err = tx.Exec(ctx, "INSERT INTO log_entries (log_index, update_id, entry, hashes) "+
		"SELECT * FROM unnest($1::bigint[], $2::text[], $3::bytea[], $4::bytea[])", integrationMode, indexes, ids, entries, hashes)
	if err == nil {
		var tag pgconn.CommandTag
		tag, err = tx.Exec(ctx, "UPDATE log_head SET size = $1, frontier = $2, last_offset = $3 WHERE id = 1 AND size = $4",
			integrationMode, a.head.Size, a.head.Frontier, us[len(us)-1].Offset, head.Size)
		if err == nil && tag.RowsAffected() != 1 {
			err = errors.New("the head moved meanwhile")
		}
	}
	if err == nil {
		err = tx.Commit(ctx)
	}
	if err != nil {
		return 0, fmt.Errorf("transparency log: integrate entries %d to %d: %w", a.from, a.head.Size-1, err)
	}
	return len(us), nil
}

// numberedUpdates reads the updates the tree takes in next, at most n of them: those after
// offset last, in offset order, each with what its entry is made of (logEntry),
// the prepared transaction a party signed for it, if one did, and the party's signature.
// Every committed one has its index (its COMMIT wrote it), and the indexes follow on from
// from, the head's size, one by one, in offset order: the COMMITs that numbered them took
// turns under the offset lock, each visible before the next took its numbers, so whatever is
// visible is a prefix. A row that is not where it goes fails the read.
func numberedUpdates(ctx context.Context, tx pgx.Tx, last, from, n int64) ([]*Update, error) {
	rows, err := tx.Query(ctx, "SELECT u.update_id, u.ledger_offset, u.kind, u.act_as, u.recorded_at, u.log_index, "+
		"p.body, p.signer_key, p.signature FROM updates AS u LEFT JOIN prepared_txs AS p ON p.hash = u.prepared_hash "+
		"WHERE u.ledger_offset > $1 ORDER BY u.ledger_offset LIMIT $2", integrationMode, last, n)
	if err != nil {
		return nil, fmt.Errorf("transparency log: integrate: read the updates: %w", err)
	}
	defer rows.Close()
	var out []*Update
	for rows.Next() {
		u := &Update{}
		var body, key, signature []byte
		if err := rows.Scan(&u.UpdateID, &u.Offset, &u.Kind, &u.ActAs, &u.RecordedAt, &u.LogIndex, &body, &key, &signature); err != nil {
			return nil, fmt.Errorf("transparency log: integrate: read the updates: %w", err)
		}
		if want := from + int64(len(out)); u.LogIndex == nil {
			return nil, fmt.Errorf("transparency log: integrate: update %s at offset %d has no log index, where entry %d goes", u.UpdateID, u.Offset, want)
		} else if *u.LogIndex != want {
			return nil, fmt.Errorf("transparency log: integrate: update %s at offset %d is numbered %d, where entry %d goes", u.UpdateID, u.Offset, *u.LogIndex, want)
		}
		if body != nil {
			if signature == nil {
				return nil, fmt.Errorf("transparency log: integrate: update %s: its prepared transaction keeps no signature", u.UpdateID)
			}
			u.Annex = updateAnnex{signed: &partySigned{p: &PreparedTx{Body: body, SignerKey: key, Signature: signature}}}
		}
		out = append(out, u)
	}
	return out, rows.Err()
}
