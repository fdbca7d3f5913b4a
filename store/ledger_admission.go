package store

import (
	"container/list"
	"context"
	"database/sql/driver"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// A request that needs a database connection when every one is taken queues for one, first
// come first served, and is refused 503 unavailable (the front doors add Retry-After) only
// when the database cannot serve it in time: when the queue ahead of it is longer than the
// pool serves within the admission bound at the pace it has been serving (the measured time
// a connection is held, a moving average), or when the queue stops moving (no connection
// given back for the bound while all are taken: statements blocked, a database that stopped
// answering). A crowd that the pool serves in time waits its turn, however many arrive at
// once; what the database truly cannot serve is refused at once, not after a wait, so the
// requests admitted keep their latency. On PostgreSQL the queue is for the pool's
// connections, for every statement and transaction; on SQLite for the single writer
// connection, for write transactions (reads have connections of their own and wait as
// before). The store's own background work (the NFT index) and readiness checks wait as
// long as their context allows, and so does a batch of executes of one row
// (ledger_execute_batch.go): those are admitted by their queue, refused only when it is full.

// DefaultAdmissionWait is the admission bound by default: the longest a request is expected
// to queue for a busy pool's connection, and how long a queue may stand still. It is the
// Retry-After of a refusal: a request the pool serves sooner is better served by waiting
// than by being refused and sent again a second later.
const DefaultAdmissionWait = time.Second

// errPoolBusy is the cause of a refusal: the pool would not serve the request within the bound.
var errPoolBusy = errors.New("the database connections would not come free within the admission bound")

// Overloaded tells whether err refused a request because the database pool was busy: the
// database answers, it has no connection to spare.
func Overloaded(err error) bool { return errors.Is(err, errPoolBusy) }

// DatabaseSheds is how many requests the store refused because its pool was busy.
func (s *Store) DatabaseSheds() int64 { return s.sheds.Load() }

type patientKey struct{}

// patient marks ctx as work that waits for a connection as long as ctx allows: readiness
// checks, the NFT index's read of a change that committed, and the store's migrations and
// start-up checks. Its holds are left out of the pace: a migration holding a connection for
// 50 ms must not make the first crowd after a start look like more than the pool can serve.
func patient(ctx context.Context) context.Context { return context.WithValue(ctx, patientKey{}, true) }

// admissionWait is the admission bound for a statement run with ctx; 0 = no bound.
func (s *Store) admissionWait(ctx context.Context) time.Duration {
	if s.cfg.AdmissionWait < 0 || InBackground(ctx) || ctx.Value(patientKey{}) != nil {
		return 0
	}
	if s.cfg.AdmissionWait == 0 {
		return DefaultAdmissionWait
	}
	return s.cfg.AdmissionWait
}

// shed counts a refusal and returns its error.
func (s *Store) shed() error {
	s.sheds.Add(1)
	return &Error{Code: CodeUnavailable, Message: "the database is busy with other requests; retry in a moment", Err: errPoolBusy}
}

// admissionQueue is the queue for a set of slots (the pool's connections, SQLite's writer):
// who waits, in arrival order, how long a slot is held, when one was last given back.
type admissionQueue struct {
	slots    int64
	mu       sync.Mutex
	waiting  list.List    // of *watch, in arrival order
	holdNs   atomic.Int64 // moving average of how long a slot is held
	freedAt  atomic.Int64 // unix ns when a slot was last given back
	allTaken func() bool  // whether every slot is held now
}

// held records that a slot held for d was given back.
func (q *admissionQueue) held(d time.Duration) {
	q.freedAt.Store(time.Now().UnixNano())
	for {
		old := q.holdNs.Load()
		next := int64(d)
		if old > 0 {
			next = old + (int64(d)-old)/8
		}
		if q.holdNs.CompareAndSwap(old, next) {
			return
		}
	}
}

// tooLong tells whether a waiter with position waiters up to and including itself would
// wait past bound at the pace the slots are served; q.mu is held or not needed.
func (q *admissionQueue) tooLong(position int64, bound time.Duration) bool {
	return time.Duration(position*q.holdNs.Load()/q.slots) > bound
}

// take waits for a slot with acquire, within the bound: acquire's context is cancelled when
// the wait would go past it (errPoolBusy), and the request is then refused.
func (q *admissionQueue) take(ctx context.Context, bound time.Duration, acquire func(context.Context) error) error {
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w := &watch{q: q, bound: bound, arrival: time.Now(), cancel: cancel}
	q.mu.Lock()
	if q.allTaken() && q.tooLong(int64(q.waiting.Len()+1), bound) {
		q.mu.Unlock()
		return errPoolBusy
	}
	w.place = q.waiting.PushBack(w)
	q.mu.Unlock()
	w.arm()
	defer w.leave()
	err := acquire(wctx)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(wctx), errPoolBusy) {
		return errPoolBusy
	}
	return err
}

// position is how many wait up to and including w.
func (q *admissionQueue) position(w *watch) int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.tooLong(int64(q.waiting.Len()), w.bound) {
		return 1 // the whole queue is served in time: no need to count
	}
	n := int64(1)
	for e := q.waiting.Front(); e != nil && e != w.place; e = e.Next() {
		n++
	}
	return n
}

// watch is a waiter: it looks at its queue a few times per bound and gives up on the wait
// when the queue stood still for the bound, or its place in it is too far back.
type watch struct {
	q       *admissionQueue
	bound   time.Duration
	arrival time.Time
	cancel  context.CancelCauseFunc
	place   *list.Element

	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
}

func (w *watch) arm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.timer = time.AfterFunc(w.bound/4, w.look)
	}
}

// leave takes w out of the queue, served or refused.
func (w *watch) leave() {
	w.mu.Lock()
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
	}
	w.mu.Unlock()
	w.q.mu.Lock()
	w.q.waiting.Remove(w.place)
	w.q.mu.Unlock()
}

func (w *watch) look() {
	if w.q.allTaken() && (w.stillFor() > w.bound || w.q.tooLong(w.q.position(w), w.bound)) {
		w.cancel(errPoolBusy)
		return
	}
	w.arm()
}

// stillFor is how long the queue has not moved since the waiter arrived.
func (w *watch) stillFor() time.Duration {
	moved := time.Unix(0, w.q.freedAt.Load())
	if moved.Before(w.arrival) {
		moved = w.arrival
	}
	return time.Since(moved)
}

// poolQueue is the queue for the PostgreSQL pool's connections: pgxpool hands them out first
// come first served; its hooks time how long each is held. The pace is that of the requests
// the queue admits: a connection held by work that is not (a batch of executes, admitted by
// its own queue and applying up to 32 at once; the NFT index's reads) shows the queue
// moving, and its hold is left out of the average.
type poolQueue struct {
	admissionQueue
	since sync.Map // *pgx.Conn -> taking: when it was taken, and by whom
}

type taking struct {
	at      time.Time
	patient bool
}

func newPoolQueue(maxConns int32, allTaken func() bool) *poolQueue {
	return &poolQueue{admissionQueue: admissionQueue{slots: int64(maxConns), allTaken: allTaken}}
}

// taken is the pool's PrepareConn hook: conn is handed out now.
func (q *poolQueue) taken(ctx context.Context, conn *pgx.Conn) (bool, error) {
	q.since.Store(conn, taking{at: time.Now(), patient: InBackground(ctx) || ctx.Value(patientKey{}) != nil})
	return true, nil
}

// released is the pool's AfterRelease hook: conn is given back.
func (q *poolQueue) released(conn *pgx.Conn) bool {
	v, ok := q.since.LoadAndDelete(conn)
	switch {
	case !ok:
	case v.(taking).patient:
		q.freedAt.Store(time.Now().UnixNano())
	default:
		q.held(time.Since(v.(taking).at))
	}
	return true
}

// admittedConnector takes the PostgreSQL pool's connections for database/sql (which keeps
// none idle itself, so every statement and transaction comes here) through the queue.
type admittedConnector struct {
	driver.Connector
	s *Store
}

func (c admittedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	bound := c.s.admissionWait(ctx)
	if bound == 0 {
		return c.Connector.Connect(ctx)
	}
	var conn driver.Conn
	err := c.s.poolQueue.take(ctx, bound, func(ctx context.Context) (err error) {
		conn, err = c.Connector.Connect(ctx)
		return err
	})
	if errors.Is(err, errPoolBusy) {
		return nil, c.s.shed()
	}
	return conn, err
}

// writerSlot admits one write transaction to SQLite's single writer connection through its
// queue; release gives it back.
type writerSlot struct {
	admissionQueue
	slot    chan struct{}
	since   time.Time // when the writer was taken
	patient bool      // by work the queue does not admit: its hold is left out of the pace
}

func newWriterSlot() *writerSlot {
	w := &writerSlot{slot: make(chan struct{}, 1)}
	w.admissionQueue = admissionQueue{slots: 1, allTaken: func() bool { return len(w.slot) == cap(w.slot) }}
	return w
}

func (s *Store) enterWriter(ctx context.Context) (release func(), err error) {
	w := s.writer
	if w == nil {
		return func() {}, nil
	}
	bound := s.admissionWait(ctx)
	enter := func(ctx context.Context) error {
		select {
		case w.slot <- struct{}{}:
			w.since, w.patient = time.Now(), bound == 0
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	if bound == 0 {
		err = enter(ctx)
	} else {
		err = w.take(ctx, bound, enter)
	}
	switch {
	case errors.Is(err, errPoolBusy):
		return nil, s.shed()
	case err != nil:
		return nil, err
	}
	return w.leave, nil
}

func (w *writerSlot) leave() {
	if w.patient {
		w.freedAt.Store(time.Now().UnixNano())
	} else {
		w.held(time.Since(w.since))
	}
	<-w.slot
}
