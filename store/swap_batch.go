package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/uptrace/bun"
)

// Submits of intents to one pool are serialised by the pool's lock, so each would pay a
// commit and a lock hand-over of its own. Instead the submits that arrive while a batch runs
// queue up, and the next batch applies them all in one database transaction that takes the
// pool's lock once: each submit its own ledger update, matched in memory against the book
// as the batch's earlier fills left it, and the ledger archives what the whole batch
// consumes (holdings, LP quotes) with one statement (Ledger.CommitBatch). A submit that cannot
// apply before the ledger (not found, expired, deadline passed) is answered alone; one the
// ledger refuses (a holding spent meanwhile) rolls the attempt back and is answered alone,
// and the batch is applied again without it. The caller whose submit finds no batch running
// starts the goroutine that runs batches until the queue is empty.

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
	refused := make([]bool, len(batch)) // answered alone: the batch applies without them
	var err error
	for {
		err = s.inTx(ctx, func(tx *Tx) error { return tx.applyBatch(ctx, batch, refused, results) })
		if !errors.Is(err, errSubmitRefused) {
			break
		}
	}
	if err != nil {
		// The batch failed as a whole: apply each submit on its own, so each gets its own answer.
		for i, r := range batch {
			if refused[i] {
				continue
			}
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

// errSubmitRefused rolls back an attempt at a batch in which the ledger refused a submit.
var errSubmitRefused = errors.New("a submit of the batch was refused")

// applyBatch applies the batch's submits that are not refused, each as its own update, and
// sets their results. When the ledger refuses one, it answers that one, marks it refused and
// returns errSubmitRefused: the caller rolls back and tries again without it.
func (tx *Tx) applyBatch(ctx context.Context, batch []*submitRequest, refused []bool, results []submitResult) error {
	var env struct {
		Effects intentEffects `json:"effects"`
	}
	if err := json.Unmarshal(batch[0].p.Body, &env); err != nil {
		return err
	}
	var hashes [][]byte
	for i, r := range batch {
		if !refused[i] {
			hashes = append(hashes, r.x.Hash)
		}
	}
	if len(hashes) == 0 {
		return nil
	}
	var rows []PreparedTx
	if err := tx.forUpdate(tx.NewSelect().Model(&rows).Where("hash IN (?)", bun.In(hashes))).Scan(ctx); err != nil {
		return err
	}
	prepared := make(map[string]*PreparedTx, len(rows))
	for i := range rows {
		prepared[string(rows[i].Hash)] = &rows[i]
	}
	// The prepared rows are locked before the pool, as an execute on its own locks them.
	if _, err := tx.lockPool(ctx, env.Effects.PoolID); err != nil {
		return err
	}
	type staged struct {
		at      int // in batch
		p       *PreparedTx
		intent  *stagedIntent
		receipt Receipt
	}
	var (
		us    []*Update
		ts    []*Transaction
		stage []staged
	)
	for i, r := range batch {
		if refused[i] {
			continue
		}
		results[i] = submitResult{}
		p, ok := prepared[string(r.x.Hash)]
		switch {
		case !ok:
			results[i].err = r.x.notFound()
			continue
		case p.Result != nil: // executed before, or earlier in this batch
			results[i].receipt = p.Result
			continue
		case !tx.now.Before(p.ExpiresAt.Time):
			results[i].err = Errorf(CodePreparedExpired, "the prepared transaction expired at %s; prepare it again", p.ExpiresAt.UTC().Format(time.RFC3339))
			continue
		}
		var env struct {
			Effects intentEffects `json:"effects"`
		}
		if err := json.Unmarshal(p.Body, &env); err != nil {
			return fmt.Errorf("prepared body: %w", err)
		}
		u := &Update{UpdateID: newUpdateID(), Kind: p.Kind, ActAs: p.ActAs}
		st, err := tx.stageIntent(ctx, u, &env.Effects)
		if err != nil {
			if ErrorCode(err) == CodeInternal {
				return err
			}
			results[i].err = err
			continue
		}
		receipt, err := committedReceipt(u.UpdateID, st.result)
		if err != nil {
			return err
		}
		p.UpdateID, p.Result, p.ExecutedAt = &u.UpdateID, receipt, AtPtr(tx.now)
		us, ts = append(us, u), append(ts, st.t)
		stage = append(stage, staged{at: i, p: p, intent: st, receipt: receipt})
	}
	if len(stage) == 0 {
		return nil
	}
	if k, err := tx.s.ledger.CommitBatch(ctx, tx, us, ts); err != nil {
		if k < 0 || ErrorCode(err) == CodeInternal {
			return err
		}
		results[stage[k].at].err, refused[stage[k].at] = err, true
		return errSubmitRefused
	}
	views := make([]*IntentView, len(stage))
	var fills []Fill
	for j, st := range stage {
		v, fs := st.intent.rows(tx, us[j])
		views[j], fills = v, append(fills, fs...)
		if err := tx.later(ctx, tx.NewUpdate().Model(st.p).Column("update_id", "result", "executed_at").WherePK()); err != nil {
			return err
		}
		results[st.at].receipt = st.receipt
	}
	if err := tx.recordIntents(ctx, views, fills); err != nil {
		return err
	}
	tx.recorded = KindSwapIntent
	return tx.appendUpdates(ctx, us)
}
