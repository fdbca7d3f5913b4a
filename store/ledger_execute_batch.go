package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Executes that lock the same row (a collection's mint phase, a pool's book) apply one at a
// time, and each would pay a commit and a lock hand-over of its own. Instead the executes
// that arrive while a batch of their row applies queue up, and the next batch applies them
// all in one database transaction that commits once (group commit): each still its own
// ledger update with its own receipt, its offset assigned at the commit in the batch's order.
//
// A batch holds at most maxBatch executes, taken first come first served, so no execute
// waits behind more than the batch that is applying. The execute whose arrival finds no
// batch running starts the goroutine that runs batches until the queue is empty; the next
// batch starts as soon as the last one has committed, while that one still brings the NFT
// index up to date before it answers.
//
// One execute that cannot apply (expired, a holding spent meanwhile, a phase sold out) is
// answered alone and the others commit: a batch of most kinds applies each execute under a
// savepoint it rolls back to on a refusal; a batch of swap intents, matched in memory against
// the book as the earlier fills left it (swap_batch.go), or of mints, counted in memory
// against the phase as the earlier mints left it (nft_mint_batch.go), is applied in one pass, and
// again without one the ledger refuses. When the batch fails as a whole (the database), each
// execute is applied alone for its own answer.

// maxBatch bounds the executes one batch applies.
const maxBatch = 32

// maxQueued bounds the executes waiting for one row's batches: a crowd on one row queues
// (the batch that applies them waits for its database connection as long as it takes), and
// only an execute that finds this many ahead of it is refused, 503 unavailable, for the
// database cannot keep up with the row.
const maxQueued = 8 * maxBatch

// batchKey names the row the ledger serializes an execute on: executes with the same key
// are batched. The zero key is none: the execute applies alone.
type batchKey struct {
	row string // "collection/<id>", "pool/<id>"
	way batchWay
}

// batchWay is how a batch applies its executes: nil, one after the other, each under a
// savepoint (applyEach); else in one pass, by the way's function, which a part gives (swap
// intents matched in memory: swap_batch.go; mints counted in memory: nft_mint_batch.go). The
// function applies the batch's executes that are not refused and sets their results; when
// the ledger refuses one it marks it refused and returns errExecuteRefused, and the batch is
// applied again without it.
type batchWay = *onePass

// onePass is a way of applying a batch in one pass.
type onePass struct {
	apply func(tx *Tx, ctx context.Context, batch []*executeRequest, prepared map[string]*PreparedTx, refused []bool, results []executeResult) error
}

type executeRequest struct {
	x    Execution
	p    *PreparedTx
	done chan executeResult
	// span is the execute's span of its wait in the queue and its batch (store.execute.batch),
	// the batch's parent or one of its links.
	span trace.SpanContext
}

type executeResult struct {
	receipt Receipt
	err     error
	size    int       // the batch's executes
	began   time.Time // when the batch began
}

// executeQueue is one row's waiting executes.
type executeQueue struct {
	mu      sync.Mutex
	waiting []*executeRequest
	running bool
}

func (s *Store) executeQueue(key batchKey) *executeQueue {
	q, _ := s.batches.LoadOrStore(key, new(executeQueue))
	return q.(*executeQueue)
}

// executeInBatch applies x, whose row p is, checked, in the next batch of key.
func (s *Store) executeInBatch(ctx context.Context, key batchKey, x Execution, p *PreparedTx) (_ Receipt, err error) {
	ctx, span := startSpan(ctx, "store.execute.batch")
	defer func() { endSpan(span, err) }()
	queued := time.Now()
	q := s.executeQueue(key)
	req := &executeRequest{x: x, p: p, done: make(chan executeResult, 1), span: span.SpanContext()}
	q.mu.Lock()
	if len(q.waiting) >= maxQueued {
		q.mu.Unlock()
		return nil, s.shed()
	}
	q.waiting = append(q.waiting, req)
	start := !q.running
	q.running = true
	q.mu.Unlock()
	if start {
		go s.runBatches(key, q)
	}
	select {
	case r := <-req.done:
		if span.IsRecording() {
			span.SetAttributes(attribute.Int("marketd.batch.size", r.size),
				attribute.Float64("marketd.batch.wait_ms", float64(r.began.Sub(queued).Microseconds())/1000))
		}
		return r.receipt, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// runBatches applies batches of the queue until it is empty.
func (s *Store) runBatches(key batchKey, q *executeQueue) {
	for {
		q.mu.Lock()
		batch := q.waiting[:min(len(q.waiting), maxBatch)]
		q.waiting = q.waiting[len(batch):]
		if len(batch) == 0 {
			q.running = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		committed := make(chan struct{})
		var once sync.Once
		go s.applyBatch(key, batch, func() { once.Do(func() { close(committed) }) })
		<-committed
	}
}

// applyBatch applies one batch in one database transaction and answers each execute. It
// calls next, once, as soon as the batch's transaction has committed, or when it is done.
func (s *Store) applyBatch(key batchKey, batch []*executeRequest, next func()) {
	defer next()
	// The queue admitted the batch's executes (maxQueued): it waits for its connection.
	ctx, cancel := context.WithTimeout(patient(context.Background()), 30*time.Second)
	defer cancel()
	began := time.Now()
	ctx, span := batchSpan(ctx, key, batch)
	defer span.End()
	answered := false
	defer func() { // a fault answers the batch's executes, and the queue goes on
		if v := recover(); v != nil {
			s.log.Error("execute batch panicked", "panic", fmt.Sprint(v))
			if !answered {
				for _, r := range batch {
					r.done <- executeResult{err: fmt.Errorf("execute batch: %v", v)}
				}
			}
		}
	}()
	results := make([]executeResult, len(batch))
	refused := make([]bool, len(batch)) // answered alone: the batch applies without them
	var err error
	for {
		err = s.inTx(ctx, func(tx *Tx) error {
			tx.ended = next
			prepared, err := tx.lockPrepared(ctx, batch, refused)
			if err != nil {
				return err
			}
			if key.way != nil {
				return key.way.apply(tx, ctx, batch, prepared, refused, results)
			}
			return tx.applyEach(ctx, batch, prepared, results)
		})
		if !errors.Is(err, errExecuteRefused) {
			break
		}
	}
	if err != nil {
		// The batch failed as a whole: apply each execute on its own, so each gets its own answer.
		for i, r := range batch {
			if refused[i] {
				continue
			}
			results[i].receipt, results[i].err = s.executeAlone(ctx, r.x, false)
		}
	}
	answered = true
	for i, r := range batch {
		results[i].size, results[i].began = len(batch), began
		r.done <- results[i]
	}
}

// batchSpan starts the span of a batch's transaction (store.execute.batch.apply): a child of
// its first traced execute's wait, linked to the others', so the batch's statements are in
// the traces of the requests that waited in it. It starts none when no execute is traced.
func batchSpan(ctx context.Context, key batchKey, batch []*executeRequest) (context.Context, trace.Span) {
	var parent trace.SpanContext
	var links []trace.Link
	for _, r := range batch {
		if !r.span.IsSampled() {
			continue
		}
		if !parent.IsValid() {
			parent = r.span
			continue
		}
		links = append(links, trace.Link{SpanContext: r.span})
	}
	if !parent.IsValid() {
		return ctx, trace.SpanFromContext(ctx)
	}
	return tracer.Start(trace.ContextWithSpanContext(ctx, parent), "store.execute.batch.apply", trace.WithLinks(links...),
		trace.WithAttributes(attribute.Int("marketd.batch.size", len(batch)), attribute.String("marketd.batch.row", key.row)))
}

// errExecuteRefused rolls back an attempt at a batch applied in one pass in which the ledger refused an
// execute: the batch is applied again without it.
var errExecuteRefused = errors.New("an execute of the batch was refused")

// lockPrepared reads the prepared rows of the batch's executes that are not refused under
// their locks, by hash: they are locked before the row the batch serializes on, as an
// execute on its own locks them.
func (tx *Tx) lockPrepared(ctx context.Context, batch []*executeRequest, refused []bool) (map[string]*PreparedTx, error) {
	var hashes [][]byte
	for i, r := range batch {
		if !refused[i] {
			hashes = append(hashes, r.x.Hash)
		}
	}
	prepared := make(map[string]*PreparedTx, len(hashes))
	if len(hashes) == 0 {
		return prepared, nil
	}
	var rows []PreparedTx
	if err := tx.ForUpdate(tx.NewSelect().Model(&rows).Where("hash IN (?)", bun.In(hashes))).Scan(ctx); err != nil {
		return nil, err
	}
	ps := make([]*PreparedTx, len(rows))
	for i := range rows {
		ps[i] = &rows[i]
		prepared[string(rows[i].Hash)] = &rows[i]
	}
	return prepared, storedReceipts(ctx, tx, ps...)
}

// pending answers the batch's executes that apply nothing (not found, executed before,
// expired) and returns the others in batch order, once per prepared transaction: their
// indexes and rows. again maps a repeat in the batch to the index of the first, whose answer
// it shares (answerRepeats).
func (tx *Tx) pending(batch []*executeRequest, prepared map[string]*PreparedTx, refused []bool, results []executeResult) (at []int, ps []*PreparedTx, again map[int]int) {
	first := map[string]int{}
	again = map[int]int{}
	for i, r := range batch {
		if refused[i] {
			continue
		}
		results[i] = executeResult{}
		p, ok := prepared[string(r.x.Hash)]
		if !ok {
			results[i].err = r.x.notFound()
			continue
		}
		if j, ok := first[string(p.Hash)]; ok {
			again[i] = j
			continue
		}
		first[string(p.Hash)] = i
		if receipt, done, err := tx.due(p); done {
			results[i] = executeResult{receipt: receipt, err: err}
			continue
		}
		at, ps = append(at, i), append(ps, p)
	}
	return at, ps, again
}

// batchEffects reads the effects of the prepared transactions ps, all of one kind, as E.
func batchEffects[E any](ps []*PreparedTx) ([]*E, error) {
	es := make([]*E, len(ps))
	for j, p := range ps {
		effects, err := p.effects()
		if err != nil {
			return nil, err
		}
		if es[j], err = decodeEffects[E](effects); err != nil {
			return nil, err
		}
	}
	return es, nil
}

// answerRepeats gives each repeat in the batch the answer of its first, and again once the
// batch has committed, when the first's receipt carries its log index.
func (tx *Tx) answerRepeats(results []executeResult, again map[int]int) {
	answer := func() {
		for i, j := range again {
			results[i] = results[j]
		}
	}
	answer()
	if len(again) > 0 {
		tx.afterCommit(answer)
	}
}

// savepoint is where applyEach rolls an execute the ledger refuses back to.
const savepoint = "execute"

// applyEach applies the batch's executes one after the other, each under a savepoint: one
// that fails with a refusal is rolled back and answered alone, and the next goes on. An
// internal error fails the batch.
func (tx *Tx) applyEach(ctx context.Context, batch []*executeRequest, prepared map[string]*PreparedTx, results []executeResult) error {
	if _, err := tx.ExecContext(ctx, "SAVEPOINT "+savepoint); err != nil {
		return err
	}
	for i, r := range batch {
		results[i] = executeResult{}
		p, ok := prepared[string(r.x.Hash)]
		if !ok {
			results[i].err = r.x.notFound()
			continue
		}
		mark, executed := tx.mark(), p.Result != nil
		receipt, err := tx.executeLocked(ctx, p, r.x.Signature, &results[i].receipt)
		if err == nil {
			// The next execute reads what this one wrote, and may roll back to after it.
			err = tx.Savepoint(ctx, savepoint)
		}
		if err == nil {
			results[i].receipt = receipt
			continue
		}
		if err = staleOnCollision(err); ErrorCode(err) == CodeInternal || ErrorCode(err) == CodeUnavailable {
			return err
		}
		if _, rerr := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT "+savepoint); rerr != nil {
			return rerr
		}
		tx.undo(mark)
		if !executed {
			p.UpdateID, p.Result, p.ExecutedAt = nil, nil, nil // its receipt rolled back with it
		}
		results[i].err = err
	}
	return nil
}

// txMark is how far a transaction's in-memory state went, to undo what a rolled-back
// savepoint added to it.
type txMark struct {
	deferred, after int
	parts           []int // each part's mark (store_txpart.go), the log's among them
}

func (tx *Tx) mark() txMark {
	return txMark{tx.Deferred(), len(tx.after), tx.markParts()}
}

// undo forgets what tx gathered since m: writes not sent, work for after the commit, and what
// each part gathered (its own undo says what it forgets: the log, the updates it would log).
func (tx *Tx) undo(m txMark) {
	tx.Forget(m.deferred)
	tx.after = tx.after[:m.after]
	tx.undoParts(m.parts)
}
