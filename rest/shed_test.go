package rest

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx": a session of another client

	"marketd/store"
	"marketd/store/storetest"
)

// holdWrites takes the lock every prepare's write needs in a session of its own (another
// client of the same database), so the prepares that reach the database wait on it holding
// their connections; it returns the release.
func holdWrites(t *testing.T, s *store.Store) func() {
	t.Helper()
	dsn := s.Config().DB
	driver, lockSQL := "pgx", "BEGIN; LOCK TABLE prepared_txs IN ACCESS EXCLUSIVE MODE"
	if s.Dialect() == store.SQLite {
		driver, dsn, lockSQL = "sqlite", "file:"+strings.TrimPrefix(dsn, "sqlite://"), "BEGIN IMMEDIATE"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range strings.Split(lockSQL, "; ") {
		if _, err := conn.ExecContext(context.Background(), stmt); err != nil {
			t.Fatal(err)
		}
	}
	return func() {
		conn.ExecContext(context.Background(), "ROLLBACK")
		conn.Close()
		db.Close()
	}
}

// While every connection is held by prepares stuck behind a lock, further prepares are refused
// at once with 503 unavailable, Retry-After and the request id, and counted in
// marketd_database_shed_total; reads from memory keep answering; once the lock goes, the
// prepares it held complete.
func TestShed_PreparesBeyondABusyPoolAre503AtOnceAndTheHeldOnesComplete(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b, func(sc *store.Config, rc *Config) {
			sc.MaxConns = 2
			sc.AdmissionWait = 100 * time.Millisecond
		})
		p := a.onboard("shed")
		tok := a.token(p)
		a.do("GET", "/.well-known/jwks.json", nil).ok(t)
		release := holdWrites(t, a.store)
		defer release()

		const n = 12
		answers := make(chan *testResponse, n)
		took := make(chan time.Duration, n)
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				start := time.Now()
				r := a.do("POST", "/api/wallet/tap/prepare", map[string]string{"instrument": "CC", "amount": "1"}, bearer(tok))
				took <- time.Since(start)
				answers <- r
			})
		}
		// The refusals come back while the lock is still held.
		var shed int
		deadline := time.After(3 * time.Second)
		for shed < n-2 {
			select {
			case r := <-answers:
				wantProblemShape(t, r, http.StatusServiceUnavailable, store.CodeUnavailable)
				if r.header.Get("Retry-After") != "1" || !strings.Contains(string(r.body), "busy") {
					t.Fatalf("a refusal for a busy pool: %v %s", r.header, r.body)
				}
				if d := <-took; d > time.Second {
					t.Errorf("a refusal took %v", d)
				}
				shed++
			case <-deadline:
				t.Fatalf("%d refused within 3 s, want %d: the pool has 2 connections", shed, n-2)
			}
		}
		a.do("GET", "/.well-known/jwks.json", nil).ok(t)
		release()
		wg.Wait()
		close(answers)
		var held int
		for r := range answers { // the prepares that held the connections, and on SQLite's one
			switch r.status { // writer connection one more refusal
			case http.StatusOK:
				held++
			case http.StatusServiceUnavailable:
				shed++
			default:
				t.Errorf("after the lock: %d %s", r.status, r.body)
			}
		}
		if held == 0 {
			t.Error("no prepare completed once the lock was gone")
		}
		m := a.do("GET", "/metrics", nil).ok(t)
		if want := fmt.Sprintf("marketd_database_shed_total %d\n", shed); !strings.Contains(string(m.body), want) {
			t.Errorf("metrics lack %q", want)
		}
	})
}
