package store_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/uptrace/bun"

	"marketd/store"
	"marketd/store/storetest"
)

// writes records the statements that are not reads.
type writes struct {
	mu   sync.Mutex
	list []string
}

func (w *writes) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }
func (w *writes) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	if q := strings.TrimSpace(e.Query); !strings.HasPrefix(q, "SELECT") && !strings.HasPrefix(q, "WITH") {
		w.mu.Lock()
		w.list = append(w.list, q)
		w.mu.Unlock()
	}
}

// Migrate makes the service's keys, so an instance's first read of them writes nothing, and
// a store that lacks one (not migrated since its purpose came) answers unavailable until
// Migrate makes it.
func TestServiceKeys_MigrateMakesThemAndNoReadWrites(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))

		fresh := b.Reopen(t, s.Config())
		w := &writes{}
		fresh.AddQueryHook(w)
		if keys, err := fresh.JWKS(ctx); err != nil || len(keys) != 1 {
			t.Fatalf("JWKS: %v %v, want the one signing key", keys, err)
		}
		if len(w.list) > 0 {
			t.Errorf("the first read of the keys wrote: %q", w.list)
		}

		if err := s.ExecRaw(ctx, "DELETE FROM service_keys WHERE purpose = 'log-note'"); err != nil {
			t.Fatal(err)
		}
		behind := b.Reopen(t, s.Config())
		_, err := behind.JWKS(ctx)
		if store.ErrorCode(err) != store.CodeUnavailable || !strings.Contains(store.ErrorMessage(err), "migrate") {
			t.Fatalf("a store without its log key: %v, want unavailable naming migrate", err)
		}
		if _, err := behind.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := behind.JWKS(ctx); err != nil {
			t.Fatalf("JWKS after migrate: %v", err)
		}
	})
}
