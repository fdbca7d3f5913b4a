// Package testdb gives tests of the store a database of their own, a clock they move and the
// plan tests' tools (plan.go). It imports nothing of the store, so the store's own internal
// tests can use it too; tests outside the store use storetest, built on it.
package testdb

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx" for the admin connection
)

// Clock is a clock a test sets and advances. Its zero value reads as Epoch.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// Epoch is where test clocks start: a whole second, as tokens and challenges state them.
var Epoch = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// NewClock returns a clock standing at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.t.IsZero() {
		c.t = Epoch
	}
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.Now()
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Set puts the clock at t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// Backend is one kind of database a test can run on.
type Backend struct {
	Name     string // "sqlite" or "postgres"
	Postgres bool
}

// Backends lists SQLite and, when TEST_DATABASE_URL is set, PostgreSQL.
func Backends() []Backend {
	bs := []Backend{{Name: "sqlite"}}
	if os.Getenv("TEST_DATABASE_URL") != "" {
		bs = append(bs, Backend{Name: "postgres", Postgres: true})
	}
	return bs
}

// Each runs fn as a parallel subtest on every backend.
func Each(t *testing.T, fn func(t *testing.T, b Backend)) {
	t.Helper()
	for _, b := range Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, b)
		})
	}
}

// DSN returns a fresh, empty database for the test on b, removed when the test ends: a file
// in the test's temporary directory, or a PostgreSQL schema of its own.
func (b Backend) DSN(t testing.TB) string {
	t.Helper()
	if !b.Postgres {
		return "sqlite://" + filepath.Join(t.TempDir(), "marketd.db")
	}
	return freshSchema(t)
}

var (
	adminOnce sync.Once
	admin     *sql.DB
	adminErr  error
)

// freshSchema creates a schema of the test's own and returns TEST_DATABASE_URL with
// search_path pointing at it.
func freshSchema(t testing.TB) string {
	t.Helper()
	base := os.Getenv("TEST_DATABASE_URL")
	adminOnce.Do(func() {
		admin, adminErr = sql.Open("pgx", base)
		if adminErr == nil {
			admin.SetMaxOpenConns(2)
			adminErr = admin.Ping()
		}
	})
	if adminErr != nil {
		t.Fatalf("TEST_DATABASE_URL: %v", adminErr)
	}
	var b [6]byte
	rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("TEST_DATABASE_URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
