package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/uptrace/bun"
)

// Submits of intents to one pool are serialised by the pool's lock, so each would pay a
// commit and a lock hand-over of its own. Instead the submits that arrive while a batch runs
// queue up, and the next batch applies them all in one database transaction that takes the
// pool's lock once: each submit its own ledger update, isolated by a savepoint, so one that
// fails (a holding spent meanwhile) changes nothing and fails alone. The caller whose submit
// finds no batch running starts the goroutine that runs batches until the queue is empty.

const maxSubmitBatch = 32

type submitRequest struct {
	x    Execution
	p    *PreparedTx
	done chan submitResult
}

type submitResult struct {
	receipt Receipt
	err     error
}

// submitQueue is one pool's waiting submits.
type submitQueue struct {
	mu      sync.Mutex
	waiting []*submitRequest
	running bool
}

func (s *Store) submitQueue(poolID string) *submitQueue {
	q, _ := s.submits.LoadOrStore(poolID, new(submitQueue))
	return q.(*submitQueue)
}

// submitIntent executes a prepared swap intent in the next batch of its pool.
func (s *Store) submitIntent(ctx context.Context, x Execution) (Receipt, error) {
	p := new(PreparedTx)
	err := s.db.NewSelect().Model(p).Where("hash = ?", x.Hash).Scan(ctx)
	if isNoRows(err) {
		return nil, x.notFound()
	}
	if err != nil {
		return nil, err
	}
	if err := x.check(p); err != nil {
		return nil, err
	}
	if p.Result != nil {
		return p.Result, nil
	}
	var env struct {
		Effects intentEffects `json:"effects"`
	}
	if err := json.Unmarshal(p.Body, &env); err != nil {
		return nil, fmt.Errorf("prepared body: %w", err)
	}
	q := s.submitQueue(env.Effects.PoolID)
	req := &submitRequest{x: x, p: p, done: make(chan submitResult, 1)}
	q.mu.Lock()
	q.waiting = append(q.waiting, req)
	combine := !q.running
	q.running = true
	q.mu.Unlock()
	if combine {
		go s.runSubmits(q)
	}
	select {
	case r := <-req.done:
		return r.receipt, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// runSubmits applies batches of the queue until it is empty.
func (s *Store) runSubmits(q *submitQueue) {
	for {
		q.mu.Lock()
		batch := q.waiting[:min(len(q.waiting), maxSubmitBatch)]
		q.waiting = q.waiting[len(batch):]
		if len(batch) == 0 {
			q.running = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		s.applySubmits(batch)
	}
}

// applySubmits applies one batch in one database transaction and answers each submit.
func (s *Store) applySubmits(batch []*submitRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	answered := false
	defer func() { // a fault answers the batch's submits, and the queue goes on
		if v := recover(); v != nil {
			s.log.Error("swap submit batch panicked", "panic", fmt.Sprint(v))
			if !answered {
				for _, r := range batch {
					r.done <- submitResult{err: fmt.Errorf("swap submit batch: %v", v)}
				}
			}
		}
	}()
	results := make([]submitResult, len(batch))
	err := s.inTx(ctx, func(tx *Tx) error {
		var env struct {
			Effects intentEffects `json:"effects"`
		}
		if err := json.Unmarshal(batch[0].p.Body, &env); err != nil {
			return err
		}
		// Before any savepoint: a row lock taken inside one that is rolled back may be lost.
		if _, err := tx.lockPool(ctx, env.Effects.PoolID); err != nil {
			return err
		}
		hashes := make([][]byte, len(batch))
		for i, r := range batch {
			hashes[i] = r.x.Hash
		}
		var rows []PreparedTx
		if err := tx.forUpdate(tx.NewSelect().Model(&rows).Where("hash IN (?)", bun.In(hashes))).Scan(ctx); err != nil {
			return err
		}
		prepared := make(map[string]*PreparedTx, len(rows))
		for i := range rows {
			prepared[string(rows[i].Hash)] = &rows[i]
		}
		for i, r := range batch {
			sp, hooks := fmt.Sprintf("submit_%d", i), len(tx.after)
			if err := tx.savepoint(ctx, sp); err != nil {
				return err
			}
			p, ok := prepared[string(r.x.Hash)]
			if !ok {
				results[i].err = r.x.notFound()
				continue
			}
			receipt, err := tx.executeLocked(ctx, p)
			if err != nil {
				if ErrorCode(err) == CodeInternal {
					return err // the database transaction itself failed
				}
				if err := tx.rollbackTo(ctx, sp); err != nil {
					return err
				}
				tx.after = tx.after[:hooks]
				p.UpdateID, p.Result, p.ExecutedAt = nil, nil, nil
				results[i].err = err
				continue
			}
			results[i].receipt = receipt
		}
		return nil
	})
	if err != nil {
		// The batch failed as a whole: apply each submit on its own, so each gets its own answer.
		for i, r := range batch {
			results[i] = submitResult{}
			rerr := s.inTx(ctx, func(tx *Tx) error {
				var err error
				results[i].receipt, err = tx.execute(ctx, r.x, new(PreparedTx), true)
				return err
			})
			if isUniqueViolation(rerr) {
				rerr = &Error{Code: CodeStale, Message: "the ledger changed since this transaction was prepared; prepare it again", Err: rerr}
			}
			results[i].err = rerr
		}
	}
	answered = true
	for i, r := range batch {
		r.done <- results[i]
	}
}

// savepoint marks where rollbackTo returns to. On PostgreSQL it travels with the deferred
// writes of what came before, in their round trip.
func (tx *Tx) savepoint(ctx context.Context, name string) error {
	if tx.s.dialect == Postgres {
		tx.deferred = append(tx.deferred, "SAVEPOINT "+name+";\n"...)
		return tx.flush(ctx)
	}
	_, err := tx.Tx.Tx.ExecContext(ctx, "SAVEPOINT "+name)
	return err
}

// rollbackTo undoes everything since the savepoint, the writes not yet sent included.
func (tx *Tx) rollbackTo(ctx context.Context, name string) error {
	tx.deferred, tx.books = nil, nil
	_, err := tx.Tx.Tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT "+name)
	return err
}
