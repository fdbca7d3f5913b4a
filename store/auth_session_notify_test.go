package store_test

import (
	"context"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// Two instances on one PostgreSQL store: a logout on one is refused by the other, which had
// the session cached, without waiting for the token to expire.
func TestLogout_HoldsOnEveryInstanceOfOneStore(t *testing.T) {
	for _, b := range storetest.Backends() {
		if b.Dialect != store.Postgres {
			continue // SQLite serves one process
		}
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			a, other, _ := twoInstances(t, b, storetest.Config(new(storetest.Clock)))
			_, tok := signedIn(t, a, "alice")
			auth, err := other.Authenticate(ctx, tok) // now cached on the other instance
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Logout(ctx, auth); err != nil {
				t.Fatal(err)
			}
			awaitRevoked(t, other, tok, "logout")
		})
	}
}

// Two instances on one PostgreSQL store: a superseded token used after its grace on one ends
// the session on the other too, which had its current token cached, as a logout would.
func TestSupersededReuse_EndsTheSessionOnEveryInstance(t *testing.T) {
	for _, b := range storetest.Backends() {
		if b.Dialect != store.Postgres {
			continue // SQLite serves one process
		}
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			clock := storetest.NewClock(storetest.Epoch)
			a, other, cfg := twoInstances(t, b, storetest.Config(clock))
			_, old := signedIn(t, a, "alice")
			clock.Advance(cfg.RotateAfter + time.Second)
			auth, err := a.Authenticate(ctx, old)
			if err != nil {
				t.Fatal(err)
			}
			fresh, err := a.RotateIfDue(ctx, auth)
			if err != nil || fresh == nil {
				t.Fatalf("rotation: %v %v", fresh, err)
			}
			if _, err := other.Authenticate(ctx, fresh.Token); err != nil { // now cached there
				t.Fatal(err)
			}
			clock.Advance(cfg.RotateGrace)
			if _, err := a.Authenticate(ctx, old); store.ErrorCode(err) != store.CodeTokenRotated {
				t.Fatalf("the superseded token after its grace: %v, want token_rotated", err)
			}
			awaitRevoked(t, other, fresh.Token, "the reuse")
		})
	}
}

// twoInstances opens a store on b and a second instance of the same store, as two processes
// of a fleet would.
func twoInstances(t *testing.T, b storetest.Backend, cfg store.Config) (*store.Store, *store.Store, store.Config) {
	t.Helper()
	a := b.Open(t, cfg)
	cfg.DB = a.Config().DB
	other, err := store.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	return a, other, cfg
}

// awaitRevoked waits up to five seconds for s to refuse tok as token_revoked.
func awaitRevoked(t *testing.T, s *store.Store, tok, after string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := s.Authenticate(context.Background(), tok)
		if store.ErrorCode(err) == store.CodeTokenRevoked {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the other instance still answers %v five seconds after %s", err, after)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
