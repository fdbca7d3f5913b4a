package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A PostgreSQL store may be a primary with standbys, reached through one multi-host URL with
// target_session_attrs=read-write. When the primary fails and a standby is promoted, every
// connection of this instance breaks and every new one reaches the new primary. A synchronous
// standby holds every commit the primary acknowledged; an asynchronous one may lack the last
// ones, and then this instance's memory (the NFT index, the cached pages, sessions, parties,
// collection identities, the service keys) may hold what the database no longer does.
//
// So every new connection, before it serves a statement, reads where the server's history
// stands: the timeline it writes WAL on and the ledger's highest offset. A timeline other than
// the one this instance last saw, or a highest offset below the highest it has seen, means the
// history it remembers may not be the server's: it drops everything it keeps in memory
// (forgetHistory), and the NFT index is built again from the tables. When the ledger went
// back, the offset sequence is first moved past every offset this instance has seen, so no
// offset it has shown is handed out again to another update.

// offsetLock is the advisory lock under which a commit takes its ledger offset (the
// foundation migration's assign_ledger_offset) and appends to the transparency log.
const offsetLock = 32199672997732211

// historySeen is where this instance last found the store's history.
type historySeen struct {
	mu       sync.Mutex
	timeline int64 // the server's WAL timeline; 0 until a primary answered
	offset   int64 // the highest ledger offset seen
	moves    int   // how many times the history moved: an offset read before the last one is void
}

// historyMoves is a count to give sawOffset: it voids an offset read from a server the
// history has since moved away from.
func (s *Store) historyMoves() int {
	h := &s.history
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.moves
}

// sawOffset notes that the ledger reached offset, as read after historyMoves gave moves.
func (s *Store) sawOffset(offset int64, moves int) {
	h := &s.history
	h.mu.Lock()
	defer h.mu.Unlock()
	if moves == h.moves {
		h.offset = max(h.offset, offset)
	}
}

// checkHistory runs on every new PostgreSQL connection before its first use: it compares the
// server's timeline and the ledger's highest offset with what this instance has seen, and
// drops this instance's memory when the history moved under it. An error closes the
// connection: nothing is served from a server whose history could not be checked.
func (s *Store) checkHistory(ctx context.Context, conn *pgx.Conn) error {
	timeline, err := serverTimeline(ctx, conn)
	if err != nil {
		return fmt.Errorf("reading the server's timeline: %w", err)
	}
	h := &s.history
	h.mu.Lock()
	defer h.mu.Unlock()
	end := h.offset
	if h.offset > 0 { // the ledger exists: its highest offset can be compared
		err := conn.QueryRow(ctx, "SELECT COALESCE(MAX(ledger_offset), 0) FROM updates").Scan(&end)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42P01" {
			return nil // no ledger table: the schema is being migrated down (or not up yet)
		}
		if err != nil {
			return fmt.Errorf("reading the ledger's highest offset: %w", err)
		}
	}
	moved := timeline != 0 && h.timeline != 0 && timeline != h.timeline
	wentBack := end < h.offset
	if wentBack {
		if err := skipOffsetsUpTo(ctx, conn, h.offset); err != nil {
			return fmt.Errorf("moving the offset sequence past offset %d: %w", h.offset, err)
		}
	}
	if moved || wentBack {
		s.log.Warn("the store's history moved under this instance (a failover?); dropping what it keeps in memory",
			"timeline", timeline, "timelineSeen", h.timeline, "highestOffset", end, "highestOffsetSeen", h.offset)
		s.forgetHistory()
		h.offset = end
		h.moves++
	}
	h.offset = max(h.offset, end)
	if timeline != 0 {
		h.timeline = timeline
	}
	return nil
}

// serverTimeline is the timeline the server writes WAL on, or 0 on a standby, which writes
// none (marketd writes only through a primary). It is the first eight hex digits of the
// current WAL file's name: a promoted standby starts a new timeline at once, while the
// timeline of pg_control_checkpoint() follows only at the next checkpoint.
func serverTimeline(ctx context.Context, conn *pgx.Conn) (int64, error) {
	var walFile string
	err := conn.QueryRow(ctx, "SELECT CASE WHEN pg_is_in_recovery() THEN '' ELSE pg_walfile_name(pg_current_wal_lsn()) END").Scan(&walFile)
	if err != nil || walFile == "" {
		return 0, err
	}
	if len(walFile) < 8 {
		return 0, fmt.Errorf("WAL file name %q", walFile)
	}
	return strconv.ParseInt(walFile[:8], 16, 64)
}

// skipOffsetsUpTo moves the ledger's offset sequence to at least offset, under the lock every
// commit takes its offset under: the next update's offset is above every one seen.
func skipOffsetsUpTo(ctx context.Context, conn *pgx.Conn, offset int64) error {
	// Several statements in one simple-protocol query run as one transaction: the lock holds
	// until setval is done.
	_, err := conn.Exec(ctx, fmt.Sprintf("SELECT pg_advisory_xact_lock(%d); "+
		"SELECT setval('ledger_offsets', %d) FROM ledger_offsets WHERE last_value < %d", offsetLock, offset, offset), pgx.QueryExecModeSimpleProtocol)
	return err
}

// forgetHistory drops everything this instance keeps in memory of the store's contents: the
// cached sessions, tokens and pages, the parties, collection identities, operator and service
// keys it remembers, the log's full tiles and the head its last append wrote, and the NFT
// index, which is built again from the tables (pages are read by SQL meanwhile). It is the one
// hook for such state: whatever else an instance comes to keep of the store belongs here too.
func (s *Store) forgetHistory() {
	s.forgetCached()
	s.tokens.forget()
	s.parties.Clear()
	s.partyCount.Store(0)
	s.collectionIDs.Clear()
	s.operator.Store(nil)
	s.keys.cur.Store(nil)
	s.nftIndex.forget()
	s.fullTiles.forget()
	s.logEdge.keep(nil)
}
