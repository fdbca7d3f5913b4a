package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"time"
)

// When every database connection is busy (slow statements, a burst of writes), a request
// that needs one waits at most AdmissionWait for a connection to come free; past that it is
// refused at once with 503 unavailable (the front doors add Retry-After) instead of queueing
// without bound behind the others, so the requests admitted keep their latency. On
// PostgreSQL the bound is on taking a connection from the pool, for every statement and
// transaction; on SQLite it is on the single writer connection, for write transactions
// (reads have connections of their own and wait as before). The store's own background
// work (the NFT index) and readiness checks wait as long as their context allows, and so
// does a batch of executes of one row (execute_batch.go): those are admitted by their queue,
// refused only when it is full.

// DefaultAdmissionWait is how long a request waits for a busy pool's connection by default.
const DefaultAdmissionWait = 100 * time.Millisecond

// errPoolBusy is the cause of a refusal: no connection came free within the wait.
var errPoolBusy = errors.New("every database connection stayed busy for the admission wait")

// Overloaded tells whether err refused a request because the database pool was busy: the
// database answers, it has no connection to spare.
func Overloaded(err error) bool { return errors.Is(err, errPoolBusy) }

// DatabaseSheds is how many requests the store refused because its pool was busy.
func (s *Store) DatabaseSheds() int64 { return s.sheds.Load() }

type patientKey struct{}

// patient marks ctx as work that waits for a connection as long as ctx allows: readiness
// checks and the NFT index's read of a change that committed.
func patient(ctx context.Context) context.Context { return context.WithValue(ctx, patientKey{}, true) }

// admissionWait is how long a statement run with ctx may wait for a connection; 0 = no bound.
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

// admittedConnector takes the PostgreSQL pool's connections for database/sql (which keeps
// none idle itself, so every statement and transaction comes here) within the wait.
type admittedConnector struct {
	driver.Connector
	s *Store
}

func (c admittedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	wait := c.s.admissionWait(ctx)
	if wait == 0 {
		return c.Connector.Connect(ctx)
	}
	actx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	conn, err := c.Connector.Connect(actx)
	if err == nil || ctx.Err() != nil || !errors.Is(actx.Err(), context.DeadlineExceeded) {
		return conn, err
	}
	// Only a pool whose every connection is taken is busy; with one still being made (at
	// start, after an outage) the wait was for the server to accept it: keep waiting.
	if st := c.s.pool.Stat(); st.AcquiredConns() < st.MaxConns() {
		return c.Connector.Connect(ctx)
	}
	return nil, c.s.shed()
}

// writerSlot admits one write transaction to SQLite's single writer connection within the
// wait; release gives it back.
type writerSlot chan struct{}

func (s *Store) enterWriter(ctx context.Context) (release func(), err error) {
	if s.writer == nil {
		return func() {}, nil
	}
	select {
	case s.writer <- struct{}{}:
		return s.leaveWriter, nil
	default:
	}
	var timeout <-chan time.Time
	if wait := s.admissionWait(ctx); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case s.writer <- struct{}{}:
		return s.leaveWriter, nil
	case <-timeout:
		return nil, s.shed()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *Store) leaveWriter() { <-s.writer }
