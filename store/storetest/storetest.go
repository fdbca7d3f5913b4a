// Package storetest gives each test a private, migrated store on every backend it can reach:
// SQLite always, PostgreSQL when TEST_DATABASE_URL is set (a fresh schema per test, dropped
// afterwards), and a clock the test moves by hand.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx" for the admin connection

	"marketd/store"
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

// Config is the default configuration with a test clock and quiet logs.
func Config(clock store.Clock) store.Config {
	cfg := store.DefaultConfig()
	cfg.Clock = clock
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.MaxConns = 4
	return cfg
}

// Backend is one kind of store a test can run on.
type Backend struct {
	Name    string
	Dialect store.Dialect
}

// Backends lists SQLite and, when TEST_DATABASE_URL is set, PostgreSQL.
func Backends() []Backend {
	bs := []Backend{{"sqlite", store.SQLite}}
	if os.Getenv("TEST_DATABASE_URL") != "" {
		bs = append(bs, Backend{"postgres", store.Postgres})
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

// DSN returns a fresh, empty database for the test on b, removed when the test ends.
func (b Backend) DSN(t testing.TB) string {
	t.Helper()
	if b.Dialect == store.SQLite {
		return "sqlite://" + filepath.Join(t.TempDir(), "marketd.db")
	}
	return freshSchema(t)
}

// Open returns a migrated store on b with cfg (cfg.DB is replaced), closed when the test ends.
func (b Backend) Open(t testing.TB, cfg store.Config) *store.Store {
	t.Helper()
	cfg.DB = b.DSN(t)
	s, err := store.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open %s store: %v", b.Name, err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate %s store: %v", b.Name, err)
	}
	return s
}

var (
	adminOnce sync.Once
	admin     *sql.DB
	adminErr  error
)

// freshSchema creates a schema of its own for the test and returns TEST_DATABASE_URL with
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
	return fmt.Sprint(u)
}
