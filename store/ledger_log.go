package store

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"marketd/store/translog"

	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/attribute"
	"golang.org/x/mod/sumdb/tlog"
)

// The transparency log: every committed update is one entry of a Merkle tree (package
// translog says what an entry, a checkpoint, a tile and a bundle are). An entry's bytes and
// its index commit in the same database transaction as the update, so an update and its entry
// commit together or not at all, and entries follow offsets. On PostgreSQL the entry is made
// of what the ledger's rows already hold once the update commits (the update's row, and the
// prepared transaction's with the party's signature: logAtCommit), and the trigger that
// assigns an update's offset under the ledger's offset lock (held until the commit is
// visible) gives it the next log index (the log_format migration), so the
// transaction writes no copy of the entry and the lock is never held across a round trip nor
// for building the tree; the COMMIT reports the transaction's last log index to its session
// with its answer, so a receipt needs no read after the commit (logReport). The tree is built
// from those rows afterwards, in offset order (integrateLog, ledger_log_integrate.go), always
// before a checkpoint is served.
// On SQLite, which runs one writer at a time, appendLog writes the entries as the
// transaction's last step before COMMIT.
// The log keeps, per entry, one row: the entry's bytes and the tree's stored hashes its append
// added (sumdb/tlog's layout: the leaf's and those of the subtrees it completed), and each
// update's row its log index; the head (the size and the hashes of the
// maximal complete subtrees) is one row on PostgreSQL and read off the last entry's index and
// those stored hashes on SQLite (readHead), so the checkpoint is one or two reads and a tile
// one indexed read.

// logEntryRow is one entry of the log, with the stored hashes its append added: those at
// tlog.StoredHashIndex(0, LogIndex) and on, 32 bytes each, the leaf's first, then one per
// subtree the entry completed, level by level (tlog.StoredHashes). One row per append, so an
// append writes one row of one table.
type logEntryRow struct {
	bun.BaseModel `bun:"table:log_entries"`

	LogIndex int64  `bun:"log_index,pk"`
	UpdateID string `bun:"update_id"`
	Entry    []byte `bun:"entry"`
	Hashes   []byte `bun:"hashes"`
}

// storedAt is where the stored hash at index x is kept: in the row of the entry whose append
// completed its subtree, at position level (tlog.SplitStoredHashIndex).
func storedAt(x int64) (entry int64, level int) {
	level, k := tlog.SplitStoredHashIndex(x)
	return (k+1)<<level - 1, level
}

// logHead is the tree's size and the hashes of its maximal complete subtrees, largest first:
// on PostgreSQL the row of log_head, on SQLite read off the log (readHead).
type logHead struct {
	bun.BaseModel `bun:"table:log_head"`

	ID       int    `bun:"id,pk"`
	Size     int64  `bun:"size"`
	Frontier []byte `bun:"frontier"`
}

// frontierIndexes lists the stored-hash indexes of the maximal complete subtrees of a tree of
// n entries, largest first: what a new entry's hashes and the root hash are made of.
func frontierIndexes(n int64) []int64 {
	var out []int64
	for level := 62; level >= 0; level-- {
		if n>>level&1 == 1 {
			out = append(out, tlog.StoredHashIndex(level, n>>level-1))
		}
	}
	return out
}

// hashMap is a tlog.HashReader over hashes in memory.
type hashMap map[int64]tlog.Hash

func (m hashMap) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		h, ok := m[x]
		if !ok {
			return nil, fmt.Errorf("transparency log: stored hash %d is not at hand", x)
		}
		out[i] = h
	}
	return out, nil
}

// hashes reads the head's frontier as stored hashes.
func (h *logHead) hashes() (hashMap, error) {
	idx := frontierIndexes(h.Size)
	if len(h.Frontier) != len(idx)*tlog.HashSize {
		return nil, fmt.Errorf("transparency log: the head of %d entries holds %d bytes of hashes, want %d", h.Size, len(h.Frontier), len(idx)*tlog.HashSize)
	}
	m := make(hashMap, len(idx))
	for i, x := range idx {
		m[x] = tlog.Hash(h.Frontier[i*tlog.HashSize:])
	}
	return m, nil
}

// tree is the head's size and root hash (RFC 6962: the empty tree's is SHA-256 of nothing).
func (h *logHead) tree() (tlog.Tree, error) {
	if h.Size == 0 {
		return tlog.Tree{N: 0, Hash: sha256.Sum256(nil)}, nil
	}
	m, err := h.hashes()
	if err != nil {
		return tlog.Tree{}, err
	}
	root, err := tlog.TreeHash(h.Size, m)
	return tlog.Tree{N: h.Size, Hash: root}, err
}

// updateAnnex is what the store keeps beside an update it appends (its Annex), for the
// transparency log.
type updateAnnex struct {
	signed    *partySigned // set by an execute: what the party signed
	beforeLog bool         // committed before the transparency log began (fillLog)
}

// annex is what the store keeps beside u; none for an update the store read back.
func annex(u *Update) updateAnnex {
	a, _ := u.Annex.(updateAnnex)
	return a
}

// partySigned is what an execute adds to its update: the prepared transaction the party signed
// (its Result the receipt without the log index, its Signature the party's), and where the
// caller reads the receipt, which appendLog or, on PostgreSQL, completeReceipts completes with
// the index.
type partySigned struct {
	p        *PreparedTx
	receipt  *Receipt
	position int // on PostgreSQL, its place among the updates its transaction logs (logAtCommit)
}

// logEntry is u's entry, once its offset is known.
func logEntry(u *Update) translog.Entry {
	e := translog.Entry{
		UpdateID: u.UpdateID, Offset: u.Offset, Kind: u.Kind, ActAs: u.ActAs,
		RecordedAt:  u.RecordedAt.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano),
		CommittedBy: translog.CommittedByService,
	}
	if annex(u).beforeLog {
		e.CommittedBy = translog.CommittedBeforeLog
	}
	if s := annex(u).signed; s != nil {
		e.CommittedBy = translog.CommittedByParty
		e.PreparedTransaction, e.Signature, e.PublicKey = s.p.Body, s.p.Signature, s.p.SignerKey
	}
	return e
}

// txLog is the transparency log's part of a write transaction (a txPart): the updates it
// appended, to log at its end, and what the log owes once it has ended. A savepoint rolled
// back takes its updates out (undo), so they get no entry.
type txLog struct {
	logged      []*Update // the updates it appended, for the log (appendLog)
	edge        *logHead  // the log's head once its append wrote it, kept if it commits
	unreceipted []*Update // executes whose receipts await the log index their COMMIT gives
	numbered    []*Update // on PostgreSQL, the updates its COMMIT logs, in the order it numbers them (logAtCommit)

	// On SQLite, whether the updates it inserted carry the log indexes from indexedFrom on,
	// decided at its first insert (indexAtInsert).
	indexDecided, indexed bool
	indexedFrom           int64
}

func init() { registerTxPart(func() txPart { return new(txLog) }) }

func (l *txLog) mark() int  { return len(l.logged) }
func (l *txLog) undo(m int) { l.logged = l.logged[:min(m, len(l.logged))] }

// logOf is the log's part among a transaction's parts (every transaction begins with one).
func logOf(parts []txPart) *txLog {
	if l, ok := findPart[*txLog](parts); ok {
		return l
	}
	panic("store: a transaction without its log part")
}

// committed keeps the log's head the transaction wrote, once it has committed and before the
// next writer's turn, so the next append finds it (a rolled-back one leaves the last kept).
func (l *txLog) committed(s *Store) {
	if l.edge != nil {
		s.logEdge.keep(l.edge)
	}
}

// ended does what the log owes a committed transaction before the write answers: on
// PostgreSQL, build the tree from what its COMMIT numbered (integrateLog) and complete its
// executes' receipts with the indexes the COMMIT reported (report).
func (l *txLog) ended(ctx context.Context, s *Store, report string) error {
	if len(l.numbered) > 0 {
		s.kickLog(len(l.numbered))
	}
	if len(l.unreceipted) > 0 {
		return s.completeReceipts(ctx, l.unreceipted, report, l.numbered)
	}
	return nil
}

// updateLog is where a store's commits log their updates. The store's is the transparency
// log (transparencyLog); a benchmark that measures what the log costs gives the store one that
// only completes receipts.
type updateLog interface {
	// beginWrite readies the log before a write transaction begins, while the writer's
	// connection is free.
	beginWrite(ctx context.Context, s *Store)
	// inserting is told of updates about to be inserted; clear runs once they are.
	inserting(tx *Tx, us []*Update) (clear func())
	// append logs a transaction's updates (not empty) and completes their receipts: the
	// transaction's last step before COMMIT.
	append(ctx context.Context, tx *Tx, us []*Update) error
}

// transparencyLog is the store's updateLog: every committed update an entry of the log.
type transparencyLog struct{}

// beginWrite prepares, on SQLite, the log's statements on the writer's connection.
func (transparencyLog) beginWrite(ctx context.Context, s *Store) {
	if s.dialect == SQLite {
		s.logWrites.prepare(ctx, s.wdb.DB)
	}
}

// inserting gives the updates, on SQLite, the log indexes they will get (indexAtInsert).
func (transparencyLog) inserting(tx *Tx, us []*Update) (clear func()) {
	if tx.s.dialect != SQLite {
		return func() {}
	}
	return tx.indexAtInsert(us)
}

func (transparencyLog) append(ctx context.Context, tx *Tx, us []*Update) error {
	ctx, span := startSpan(ctx, "translog.append", attribute.Int("marketd.log.entries", len(us)))
	err := tx.appendToLog(ctx, us)
	endSpan(span, err)
	return err
}

// appendLog appends the updates this transaction committed to the log, in offset order, and
// completes their receipts; it is the transaction's last step before COMMIT, after every
// part's beforeCommit. On PostgreSQL a new update is numbered by the COMMIT itself, and its
// entry built afterwards (logAtCommit).
func (tx *Tx) appendLog(ctx context.Context) error {
	l := logOf(tx.parts)
	us := l.logged
	l.logged = nil
	if len(us) == 0 {
		return nil
	}
	return tx.s.commitLog.append(ctx, tx, us)
}

// appendToLog is appendLog's append of us, which are not empty.
func (tx *Tx) appendToLog(ctx context.Context, us []*Update) error {
	if tx.s.dialect == Postgres && !annex(us[0]).beforeLog {
		return tx.logAtCommit(ctx, us)
	}
	byOffset := func(a, b *Update) int { return cmp.Compare(a.Offset, b.Offset) }
	inOrder := slices.IsSortedFunc(us, byOffset)
	if !inOrder {
		us = slices.SortedFunc(slices.Values(us), byOffset)
	}
	a, err := tx.moveHead(ctx, us)
	if err != nil {
		return err
	}
	// On SQLite the updates' rows already name these entries when they were inserted with
	// the indexes this append gives them: in this order, from the same size (indexAtInsert).
	l := logOf(tx.parts)
	a.indexed = l.indexed && inOrder && l.indexedFrom == a.from
	for i, u := range us {
		n := a.from + int64(i)
		u.LogIndex = &n
		if err := tx.receiptLogged(ctx, u, &n); err != nil {
			return err
		}
	}
	l.edge = a.head
	return tx.writeEntries(ctx, a, us)
}

// writeEntries writes the append's entries and stored hashes, and each update's log index
// on its row (us are the append's updates, in its order): on SQLite by the store's prepared
// statements, run once a row (updates inserted with their indexes need none); on PostgreSQL
// (where the Go append serves the updates from before the log: fillLog) with the
// transaction's deferred writes, one statement a table.
func (tx *Tx) writeEntries(ctx context.Context, a *logAppend, us []*Update) error {
	if tx.s.dialect == Postgres {
		if err := tx.Later(ctx, tx.NewInsert().Model(&a.entries)); err != nil {
			return err
		}
		if err := tx.Later(ctx, tx.NewRaw("UPDATE updates SET log_index = e.log_index FROM log_entries AS e "+
			"WHERE e.log_index >= ? AND e.log_index < ? AND updates.update_id = e.update_id", a.from, a.head.Size)); err != nil {
			return err
		}
		// The COMMITs number the next entries from here, and integration builds the tree
		// from the updates after the last one (the log_format migration).
		if err := tx.Later(ctx, tx.NewRaw("UPDATE log_head SET last_offset = ? WHERE id = 1", us[len(us)-1].Offset)); err != nil {
			return err
		}
		return tx.Later(ctx, tx.NewRaw("UPDATE log_sequence SET next = ? WHERE id = 1", a.head.Size))
	}
	st, err := tx.s.logWrites.prepared()
	if err != nil {
		return err
	}
	entry := tx.SQL().StmtContext(ctx, st.entry)
	for _, e := range a.entries {
		if _, err := entry.ExecContext(ctx, e.LogIndex, e.UpdateID, e.Entry, e.Hashes); err != nil {
			return fmt.Errorf("transparency log: write entry %d: %w", e.LogIndex, err)
		}
	}
	// The update's row was written by this transaction: its page is written with the commit
	// anyway, so the index costs no page of its own. Updates inserted with their indexes
	// (a.indexed) need no statement; those committed before the log (fillLog) never are.
	if a.indexed {
		return nil
	}
	index := tx.SQL().StmtContext(ctx, st.index)
	for i, u := range us {
		if _, err := index.ExecContext(ctx, a.from+int64(i), u.Offset); err != nil {
			return fmt.Errorf("transparency log: write the log index of update %s: %w", u.UpdateID, err)
		}
	}
	return nil
}

// logSizeSQL reads the number of entries the log holds: one past the last entry's index (the
// size of SQLite's head, which keeps no row).
const logSizeSQL = "SELECT COALESCE(MAX(log_index) + 1, 0) FROM log_entries"

// logSize is the number of entries the log holds, read in this transaction (SQLite).
func (tx *Tx) logSize(ctx context.Context) (int64, error) {
	st, err := tx.s.logWrites.prepared()
	if err != nil {
		return 0, err
	}
	var n int64
	if err := tx.SQL().StmtContext(ctx, st.size).QueryRowContext(ctx).Scan(&n); err != nil {
		return 0, fmt.Errorf("transparency log: read the size: %w", err)
	}
	return n, nil
}

// logStatements are the log's statements on SQLite, prepared once on the writer's connection: an
// append binds its values to them, so SQLite parses none of them again. They are prepared
// before a write transaction begins (inTx): the connection is then free, and the tables exist
// once the store is migrated.
type logStatements struct {
	mu                 sync.Mutex
	size, entry, index *sql.Stmt
	err                error // why the last attempt to prepare them failed
}

// prepare prepares the statements on db unless they are.
func (ls *logStatements) prepare(ctx context.Context, db *sql.DB) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.index != nil {
		return
	}
	var st [3]*sql.Stmt
	for i, q := range []string{
		logSizeSQL,
		"INSERT INTO log_entries (log_index, update_id, entry, hashes) VALUES (?, ?, ?, ?)",
		"UPDATE updates SET log_index = ? WHERE ledger_offset = ?",
	} {
		if st[i], ls.err = db.PrepareContext(ctx, q); ls.err != nil {
			for _, p := range st[:i] {
				p.Close()
			}
			return
		}
	}
	ls.size, ls.entry, ls.index = st[0], st[1], st[2]
}

// prepared is the statements, or why they could not be prepared.
func (ls *logStatements) prepared() (*logStatements, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.index == nil {
		return nil, fmt.Errorf("transparency log: the writes could not be prepared: %w", ls.err)
	}
	return ls, nil
}

// close releases the statements, once nothing writes any more.
func (ls *logStatements) close() error {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	var errs []error
	for _, p := range []*sql.Stmt{ls.size, ls.entry, ls.index} {
		if p != nil {
			errs = append(errs, p.Close())
		}
	}
	ls.size, ls.entry, ls.index = nil, nil, nil
	return errors.Join(errs...)
}

// logAppend is what appending entries to a tree writes: the entries from index from, with the
// stored hashes each adds, and the tree's new head.
type logAppend struct {
	from    int64
	entries []logEntryRow
	head    *logHead
	indexed bool // SQLite: the updates' rows were inserted with these entries' indexes
}

// appendTo is the append of us, whose offsets are known, to the tree head describes.
func appendTo(head *logHead, us []*Update) (*logAppend, error) {
	known, err := head.hashes()
	if err != nil {
		return nil, err
	}
	a := &logAppend{from: head.Size, entries: make([]logEntryRow, len(us))}
	for i, u := range us {
		n := head.Size + int64(i)
		e := logEntry(u)
		b, err := e.Marshal()
		if err != nil {
			return nil, err
		}
		hs, err := tlog.StoredHashes(n, b, known)
		if err != nil {
			return nil, fmt.Errorf("transparency log: entry %d: %w", n, err)
		}
		stored := make([]byte, 0, len(hs)*tlog.HashSize)
		for j, h := range hs {
			known[tlog.StoredHashIndex(0, n)+int64(j)] = h
			stored = append(stored, h[:]...)
		}
		a.entries[i] = logEntryRow{LogIndex: n, UpdateID: u.UpdateID, Entry: b, Hashes: stored}
	}
	a.head = &logHead{ID: 1, Size: head.Size + int64(len(us)), Frontier: []byte{}}
	for _, x := range frontierIndexes(a.head.Size) {
		h, ok := known[x]
		if !ok {
			return nil, fmt.Errorf("transparency log: subtree hash %d missing after appending", x)
		}
		a.head.Frontier = append(a.head.Frontier, h[:]...)
	}
	return a, nil
}

// moveHead appends us to the tree and, on PostgreSQL, writes its new head, starting from
// what this process's last append left (Store.logEdge) when the log still ends there. On
// PostgreSQL the update writes the head row only if it holds exactly that size and those
// hashes, which determine every hash an append computes; on SQLite, whose writers take turns
// and whose head is read off the log (readHead), the log must still hold that many entries.
// Anything else (another process appended to the same database, a failover, a transaction
// that did not commit) makes them differ, and the head is then read in this transaction,
// under its write lock, and the append computed again from it.
func (tx *Tx) moveHead(ctx context.Context, us []*Update) (*logAppend, error) {
	if edge := tx.s.logEdge.get(); edge != nil {
		if tx.s.dialect == SQLite {
			size, err := tx.logSize(ctx)
			if err != nil {
				return nil, err
			}
			if size == edge.Size {
				return appendTo(edge, us)
			}
		} else {
			a, err := appendTo(edge, us)
			if err != nil {
				return nil, err
			}
			if moved, err := tx.replaceHead(ctx, edge, a.head); err != nil || moved {
				return a, err
			}
		}
	}
	head, err := tx.s.readHead(ctx, tx)
	if err != nil {
		return nil, err
	}
	a, err := appendTo(head, us)
	if err != nil || tx.s.dialect == SQLite {
		return a, err
	}
	moved, err := tx.replaceHead(ctx, head, a.head)
	if err == nil && !moved {
		err = errors.New("transparency log: the head changed within the transaction that read it")
	}
	return a, err
}

// replaceHead writes head next over head old (PostgreSQL's head row), and tells whether the
// row held old.
func (tx *Tx) replaceHead(ctx context.Context, old, next *logHead) (bool, error) {
	res, err := tx.NewUpdate().Model(next).Column("size", "frontier").WherePK().
		Where("size = ?", old.Size).Where("frontier = ?", nonNil(old.Frontier)).Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("transparency log: write the head: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// nonNil is b, or an empty slice for nil: an empty frontier is an empty string of bytes, not NULL.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// logEdge is the log's head as this process's last append committed it, kept so that the
// next append need not read it (moveHead checks it against the row). It changes only once a
// commit succeeded, while the writer's turn is still held (inTx); a failover forgets it.
type logEdge struct {
	mu   sync.Mutex
	head *logHead
}

func (e *logEdge) get() *logHead {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.head
}

func (e *logEdge) keep(h *logHead) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.head = h
}

// logAtCommit readies, on PostgreSQL, what the transaction's COMMIT logs (the log_format
// migration): the COMMIT gives each update its offset and log
// index under the offset lock, and the entry is made afterwards (logEntry) of rows the
// transaction writes anyway, so no copy of it is written here. It checks that each entry will
// fit a bundle, and keeps the receipts to complete once the transaction has committed
// (completeReceipts). An execute's prepared transaction is marked executed here
// (receiptLogged), in the transaction's body, with the party's signature, which its entry
// holds, and its receipt less the log index, which the COMMIT assigns (storedReceipts adds it
// on a read). The offset lock is then held only by the COMMIT, never across a round trip.
func (tx *Tx) logAtCommit(ctx context.Context, us []*Update) error {
	l := logOf(tx.parts)
	l.numbered = us
	for i, u := range us {
		e := logEntry(u)
		e.Offset = math.MaxInt64 // the longest it may be, assigned at COMMIT
		b, err := e.Marshal()
		if err != nil {
			return err
		}
		if len(b) > translog.MaxEntrySize {
			return fmt.Errorf("log entry of update %s: %d bytes with its offset, at most %d fit a bundle", u.UpdateID, len(b), translog.MaxEntrySize)
		}
		if s := annex(u).signed; s != nil {
			if err := tx.receiptLogged(ctx, u, nil); err != nil {
				return err
			}
			s.position = i
			l.unreceipted = append(l.unreceipted, u)
		}
	}
	return nil
}

// logReport is how a COMMIT on PostgreSQL tells its session the log index of the
// transaction's last entry (the log_format migration): it sets the session's
// application_name to "<name before> #log <index> <first 8 characters of the update's ID>"
// for each update it numbers, the last one last, which the server reports with the COMMIT's
// answer, with no message and no round trip of its own. The transaction's entries follow one
// another, so the k-th of its n updates is at that index less n-1-k.
const logReport = " #log "

// reportedIndex is the log index of the entry of update last that report, the session's
// application_name after a COMMIT, gives; ok is false when report is not of that update (a
// pooler that does not pass the server's reports on, say).
func reportedIndex(report, last string) (n int64, ok bool) {
	i := strings.LastIndex(report, logReport)
	if i < 0 || len(last) < 8 {
		return 0, false
	}
	num, token, found := strings.Cut(report[i+len(logReport):], " ")
	n, err := strconv.ParseInt(num, 10, 64)
	return n, found && err == nil && token == last[:8]
}

// completeReceipts completes, once their transaction has committed on PostgreSQL, the receipts
// of its executes, us, with the log indexes the COMMIT reported (logReport; numbered are the
// updates the transaction logged, in the order it numbered them), in memory (the prepared
// transactions' rows keep them without: storedReceipts). Indexes not reported are read back.
func (s *Store) completeReceipts(ctx context.Context, us []*Update, report string, numbered []*Update) error {
	at := make(map[string]int64, len(us))
	last := len(numbered) - 1
	if n, ok := reportedIndex(report, numbered[last].UpdateID); ok {
		for _, u := range us {
			at[u.UpdateID] = n - int64(last-annex(u).signed.position)
		}
	} else {
		ids := make([]string, len(us))
		for i, u := range us {
			ids[i] = u.UpdateID
		}
		err := readLogIndexes(ctx, s.wdb, ids, at)
		if err == nil && len(at) != len(us) {
			err = fmt.Errorf("%d of %d entries found", len(at), len(us))
		}
		if err != nil {
			return &Error{Code: CodeOutcomeUnknown, Err: err,
				Message: "the transaction committed, but its receipt could not be read back; send the same execute again: it answers the receipt"}
		}
	}
	for _, u := range us {
		signed := annex(u).signed // its receipt without the index: executed, receiptLogged
		receipt := receiptWithIndex(signed.p.Result, at[u.UpdateID])
		signed.p.Result, *signed.receipt = receipt, receipt
	}
	return nil
}

// readLogIndexes reads the log indexes of the updates ids into at; an update without one (not
// logged) is left out.
func readLogIndexes(ctx context.Context, db bun.IDB, ids []string, at map[string]int64) error {
	if len(ids) == 0 {
		return nil
	}
	var rows []Update
	err := db.NewSelect().Model(&rows).Column("log_index", "update_id").
		Where("update_id IN (?)", bun.In(ids)).Where("log_index IS NOT NULL").Scan(ctx)
	for _, r := range rows {
		at[r.UpdateID] = *r.LogIndex
	}
	return err
}

// receiptLogged completes the receipt of u, executed with a party's signature, with its log
// index (none when the log is skipped, the benchmark's switch, or not known before the COMMIT,
// on PostgreSQL) and stores it on the prepared transaction, which every replay answers with.
func (tx *Tx) receiptLogged(ctx context.Context, u *Update, logIndex *int64) error {
	s := annex(u).signed
	if s == nil {
		return nil
	}
	receipt := s.p.Result // as executed left it: without the index
	if logIndex != nil {
		receipt = receiptWithIndex(receipt, *logIndex)
	}
	s.p.Result, *s.receipt = receipt, receipt
	// The signature is kept for the update's entry, which is made of it (logEntry).
	return tx.Later(ctx, tx.NewUpdate().Model(s.p).Column("update_id", "result", "executed_at", "signature").WherePK())
}

// storedReceipts adds to the receipts of ps, read from their rows, the log index they lack:
// on PostgreSQL an execute stores its receipt before its COMMIT assigns the index
// (logAtCommit), which the update's row keeps (updates.log_index). A replay then answers
// what the execute answered.
func storedReceipts(ctx context.Context, db bun.IDB, ps ...*PreparedTx) error {
	var lacking []*PreparedTx
	var ids []string
	for _, p := range ps {
		if p.Result != nil && p.UpdateID != nil && !receiptIndexed(p.Result) {
			lacking, ids = append(lacking, p), append(ids, *p.UpdateID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	at := make(map[string]int64, len(ids))
	if err := readLogIndexes(ctx, db, ids, at); err != nil {
		return fmt.Errorf("transparency log: read the log index of a stored receipt: %w", err)
	}
	for _, p := range lacking {
		if n, ok := at[*p.UpdateID]; ok {
			p.Result = receiptWithIndex(p.Result, n)
		}
	}
	return nil
}

// receiptStatus is what every receipt holds after its update ID (committedReceipt): the log
// index follows it.
const receiptStatus = `"status":"committed"`

// receiptIndexed tells whether receipt holds its log index.
func receiptIndexed(receipt Receipt) bool {
	_, rest, ok := bytes.Cut(receipt, []byte(receiptStatus))
	return !ok || bytes.HasPrefix(rest, []byte(`,"logIndex":`))
}

// receiptWithIndex is receipt with logIndex n where committedReceipt writes it.
func receiptWithIndex(receipt Receipt, n int64) Receipt {
	i := bytes.Index(receipt, []byte(receiptStatus)) + len(receiptStatus)
	out := make(Receipt, 0, len(receipt)+32)
	out = append(out, receipt[:i]...)
	out = strconv.AppendInt(append(out, `,"logIndex":`...), n, 10)
	return append(out, receipt[i:]...)
}

// fillLog appends the updates committed before the log began (a store migrated from before
// it) to the log, in offset order, before any later update: Migrate runs it.
func (s *Store) fillLog(ctx context.Context) error {
	// The latest update commits with its entry, so once the log holds it, it holds every one
	// (a fill cut short fills from the oldest up): a start reads one row of each table.
	var unlogged []string
	err := s.db.NewSelect().Model((*Update)(nil)).Column("update_id").
		Where("log_index IS NULL").
		Where("ledger_offset = (SELECT MAX(ledger_offset) FROM updates)").Scan(ctx, &unlogged)
	if err != nil || len(unlogged) == 0 {
		return err
	}
	if s.dialect == Postgres { // the tree first takes in what was numbered: this appends after it
		if err := s.integrateLog(ctx); err != nil {
			return err
		}
	}
	for {
		filled := 0
		err := s.inTx(ctx, func(tx *Tx) error {
			if s.dialect == Postgres { // no COMMIT numbers entries, nor integration builds any, meanwhile
				if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?), pg_advisory_xact_lock(?)", offsetLock, logIntegrationLock); err != nil {
					return err
				}
			}
			var us []*Update
			err := tx.NewSelect().Model(&us).
				Where("log_index IS NULL").
				Order("ledger_offset").Limit(1000).Scan(ctx)
			if err != nil {
				return fmt.Errorf("transparency log: read the updates before it: %w", err)
			}
			for _, u := range us {
				u.Annex = updateAnnex{beforeLog: true}
			}
			filled, logOf(tx.parts).logged = len(us), us
			return nil
		})
		if err != nil || filled == 0 {
			return err
		}
	}
}
