// Package storetest gives each test a private, migrated store on every backend it can reach:
// SQLite always, PostgreSQL when TEST_DATABASE_URL is set (a fresh schema per test, dropped
// afterwards), and a clock the test moves by hand. It is also the one way every package's
// tests make a party: Party, a key that signs prepared hashes and sign-in challenges, onboarded
// on a store here or through a door by the test.
package storetest

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/internal/testdb"
	"marketd/store/storetest/pgproxy"
)

// Clock is a clock a test sets and advances.
type Clock = testdb.Clock

// Epoch is where test clocks start.
var Epoch = testdb.Epoch

// NewClock returns a clock standing at t.
func NewClock(t time.Time) *Clock { return testdb.NewClock(t) }

// Config is the default configuration with a test clock and quiet logs.
func Config(clock store.Clock) store.Config {
	cfg := store.DefaultConfig()
	cfg.Clock = clock
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.MaxConns = 4
	// Tests that pin what concurrent writes do need every one of them run, however long the
	// pool is busy; the admission tests set their own bound.
	cfg.AdmissionWait = -1
	cfg.KEK = KEK[:]
	return cfg
}

// KEK is the key-encryption key of Config's stores: one fixed key, so a test opening a store
// again with a Config of its own opens its sealed secrets.
var KEK = sha256.Sum256([]byte("storetest key-encryption key"))

// Backend is one kind of store a test can run on.
type Backend struct {
	testdb.Backend
	Dialect store.Dialect
}

func backend(b testdb.Backend) Backend {
	if b.Postgres {
		return Backend{Backend: b, Dialect: store.Postgres}
	}
	return Backend{Backend: b, Dialect: store.SQLite}
}

// Backends lists SQLite and, when TEST_DATABASE_URL is set, PostgreSQL.
func Backends() []Backend {
	var out []Backend
	for _, b := range testdb.Backends() {
		out = append(out, backend(b))
	}
	return out
}

// Each runs fn as a parallel subtest on every backend.
func Each(t *testing.T, fn func(t *testing.T, b Backend)) {
	t.Helper()
	testdb.Each(t, func(t *testing.T, b testdb.Backend) { fn(t, backend(b)) })
}

// Open returns a migrated store on b with cfg (cfg.DB is replaced), closed when the test ends.
func (b Backend) Open(t testing.TB, cfg store.Config) *store.Store {
	t.Helper()
	cfg.DB = b.DSN(t)
	return b.open(t, cfg)
}

// OpenProxied is Open on PostgreSQL through a pgproxy.Proxy, which the test uses to take the
// database away or cut a connection at COMMIT.
func (b Backend) OpenProxied(t testing.TB, cfg store.Config) (*store.Store, *pgproxy.Proxy) {
	t.Helper()
	dsn := b.DSN(t)
	proxy := pgproxy.Start(t, dsn)
	cfg.DB = proxy.DSN(dsn)
	return b.open(t, cfg), proxy
}

// open opens, migrates and starts the store cfg.DB names, closed when the test ends.
func (b Backend) open(t testing.TB, cfg store.Config) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open %s store: %v", b.Name, err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate %s store: %v", b.Name, err)
	}
	s.StartNFTIndex()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.AwaitNFTIndex(ctx); err != nil {
		t.Fatalf("%s store: %v", b.Name, err)
	}
	return s
}

// Reopen opens another instance of a store opened before (cfg is its Config()), closed when
// the test ends. Its NFT index builds in the background, as marketd serve's does.
func (b Backend) Reopen(t testing.TB, cfg store.Config) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("reopen %s store: %v", b.Name, err)
	}
	t.Cleanup(func() { s.Close() })
	s.StartNFTIndex()
	return s
}
