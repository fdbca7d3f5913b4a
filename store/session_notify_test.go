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
			cfg := storetest.Config(new(storetest.Clock))
			a := b.Open(t, cfg)
			cfg.DB = a.Config().DB
			other, err := store.Open(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()

			_, tok := signedIn(t, a, "alice")
			auth, err := other.Authenticate(ctx, tok) // now cached on the other instance
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Logout(ctx, auth); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				_, err := other.Authenticate(ctx, tok)
				if store.ErrorCode(err) == store.CodeTokenRevoked {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("the other instance still answers %v five seconds after logout", err)
				}
				time.Sleep(5 * time.Millisecond)
			}
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
			cfg := storetest.Config(clock)
			a := b.Open(t, cfg)
			cfg.DB = a.Config().DB
			other, err := store.Open(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()

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
			deadline := time.Now().Add(5 * time.Second)
			for {
				_, err := other.Authenticate(ctx, fresh.Token)
				if store.ErrorCode(err) == store.CodeTokenRevoked {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("the other instance still answers %v for the current token five seconds after the reuse", err)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}
