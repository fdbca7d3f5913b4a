package store_test

import (
	"context"
	"sync"
	"testing"

	"marketd/store"
	"marketd/store/storetest"
)

// Offsets follow commit order: a follower that polls for offsets above the last one it saw,
// while many writers commit at once, sees every update exactly once.
func TestUpdateLog_FollowerByOffsetMissesNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		cfg := storetest.Config(new(storetest.Clock))
		cfg.MaxConns = 8
		s := b.Open(t, cfg)
		parties := make([]*storetest.Party, 6)
		for i := range parties {
			parties[i] = storetest.Onboard(t, s, "p")
		}
		var committed sync.Map
		var wg sync.WaitGroup
		for _, p := range parties {
			wg.Go(func() {
				for range 25 {
					prep, err := s.PrepareTap(ctx, p.ID, store.CC, store.MustAmount("1"))
					if err != nil {
						t.Error(err)
						return
					}
					r, err := p.Execute(s, store.KindTap, prep)
					if err != nil {
						t.Error(err)
						return
					}
					committed.Store(string(r), true)
				}
			})
		}
		seen := map[string]int{}
		var last int64
		follow := func() {
			us, err := s.UpdatesAfter(ctx, last, 1000)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range us {
				if u.Offset <= last {
					t.Fatalf("offset %d after %d", u.Offset, last)
				}
				last = u.Offset
				seen[u.UpdateID]++
			}
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		for running := true; running; {
			select {
			case <-done:
				running = false
			default:
			}
			follow()
		}
		follow()
		total := 0
		committed.Range(func(k, _ any) bool { total++; return true })
		// The operator party's creation at the first migration is the first update.
		if want := 1 + total + len(parties); len(seen) != want {
			t.Fatalf("follower saw %d updates, %d were committed", len(seen), want)
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("update %s seen %d times", id, n)
			}
		}
	})
}
