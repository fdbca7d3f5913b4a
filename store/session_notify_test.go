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
