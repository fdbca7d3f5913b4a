package store

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
)

// On SQLite every transaction takes the one writer in turn and pays a commit: the WAL's
// frames of each page it changed, and now and then a checkpoint. A prepare writes a row or
// two, so a crowd preparing at once would pay a commit each. Instead the writes that arrive
// while a group is written wait, and the next group writes them all in one transaction that
// commits once (as executes of one row are batched: ledger_execute_batch.go), each under a
// savepoint of its own, so one that fails (a unique key taken) fails alone. The write whose
// arrival finds no group running starts the goroutine that writes groups until none waits; a
// group's statements are traced under its first write's request.

// maxWriteGroup bounds the writes one group takes.
const maxWriteGroup = 64

// writeGroups is writeAll's writes waiting for the SQLite writer.
type writeGroups struct {
	mu      sync.Mutex
	waiting []*groupedWrite
	running bool         // a goroutine is writing groups
	shared  atomic.Int64 // writes written in a group of more than one
}

// groupedWrite is one writeAll's statements, answered on done.
type groupedWrite struct {
	ctx   context.Context
	stmts []string
	done  chan error
	taken bool // in a group being written; under writeGroups.mu
}

// write waits for stmts to be written in a group and returns how that went.
func (g *writeGroups) write(ctx context.Context, s *Store, stmts []string) error {
	w := &groupedWrite{ctx: context.WithoutCancel(ctx), stmts: stmts, done: make(chan error, 1)}
	g.mu.Lock()
	g.waiting = append(g.waiting, w)
	start := !g.running
	g.running = true
	g.mu.Unlock()
	if start {
		go g.run(s)
	}
	// A write waits for its group as a write transaction waits for the writer, admitted as
	// that is (ledger_admission.go): refused at once, 503, when the writer would not come
	// free in time. One refused or given up on may still be written: a prepared transaction
	// no one was told of expires unused.
	var written error
	wait := func(ctx context.Context) error {
		select {
		case written = <-w.done:
			return nil
		case <-ctx.Done():
		}
		g.mu.Lock()
		if w.taken { // its group holds the writer: it is being written
			g.mu.Unlock()
			written = <-w.done
			return nil
		}
		g.waiting = slices.DeleteFunc(g.waiting, func(x *groupedWrite) bool { return x == w })
		g.mu.Unlock()
		return context.Cause(ctx)
	}
	var err error
	if bound := s.admissionWait(ctx); bound == 0 || s.writer == nil {
		err = wait(ctx)
	} else {
		err = s.writer.take(ctx, bound, wait)
	}
	switch {
	case errors.Is(err, errPoolBusy):
		return s.shed()
	case err != nil:
		return err
	}
	return written
}

// run writes groups until none waits. A group's first write is taken before its transaction
// begins and the others once it has: while the writer cannot begin (a lock held elsewhere),
// one write holds it, as one write transaction would, and the ones arriving meanwhile wait
// where admission can refuse them.
func (g *writeGroups) run(s *Store) {
	for {
		g.mu.Lock()
		if len(g.waiting) == 0 {
			g.running = false
			g.mu.Unlock()
			return
		}
		group := []*groupedWrite{g.waiting[0]}
		g.waiting = g.waiting[1:]
		group[0].taken = true
		g.mu.Unlock()
		var errs []error
		err := s.inTx(group[0].ctx, func(tx *Tx) error {
			g.mu.Lock()
			n := min(len(g.waiting), maxWriteGroup-len(group)) // within the bound should fn run again
			for _, w := range g.waiting[:n] {
				w.taken = true
			}
			group = append(group, g.waiting[:n]...)
			g.waiting = g.waiting[n:]
			g.mu.Unlock()
			if len(group) > 1 {
				g.shared.Add(int64(len(group)))
			}
			errs = make([]error, len(group))
			for i, w := range group {
				if errs[i] = writeUnder(w.ctx, tx, w.stmts, len(group) > 1); errs[i] != nil && !isUniqueViolation(errs[i]) {
					return errs[i] // the database, not the write: the group fails
				}
			}
			return nil
		})
		if errs == nil {
			errs = make([]error, len(group))
		}
		for i, w := range group {
			if err != nil && len(group) > 1 { // each alone, for its own answer
				errs[i] = s.inTx(w.ctx, func(tx *Tx) error { return writeUnder(w.ctx, tx, w.stmts, false) })
			} else if err != nil {
				errs[i] = err
			}
			w.done <- errs[i]
		}
	}
}

// writeUnder runs stmts in tx, under a savepoint when others share tx, rolled back to when
// one fails.
func writeUnder(ctx context.Context, tx *Tx, stmts []string, shared bool) error {
	if shared {
		if _, err := tx.SQL().ExecContext(ctx, "SAVEPOINT grouped_write"); err != nil {
			return err
		}
	}
	for _, stmt := range stmts {
		if _, err := tx.SQL().ExecContext(ctx, stmt); err != nil {
			if shared {
				for _, undo := range []string{"ROLLBACK TO SAVEPOINT grouped_write", "RELEASE SAVEPOINT grouped_write"} {
					if _, rerr := tx.SQL().ExecContext(ctx, undo); rerr != nil {
						return rerr
					}
				}
			}
			return err
		}
	}
	if shared {
		_, err := tx.SQL().ExecContext(ctx, "RELEASE SAVEPOINT grouped_write")
		return err
	}
	return nil
}
