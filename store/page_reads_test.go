package store_test

import (
	"context"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// trackedRead reads the floor-sorted collections and the collection's NFTs under a fresh
// record, as a front door building one answer would.
func (m *cachedMarket) trackedRead(t *testing.T, s *store.Store) *store.Reads {
	t.Helper()
	ctx, reads := store.TrackReads(context.Background())
	if _, err := s.Collections(ctx, store.SortFloor, store.PageRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.NFTs(ctx, m.col.ID, store.NFTFilter{}, store.SortPriceAsc, store.PageRequest{}); err != nil {
		t.Fatal(err)
	}
	return reads
}

func TestReads_ServedFromCachedPagesStayCurrentUntilAWriteOrAnExpiry(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := openCachedMarket(t, b)
		if m.trackedRead(t, m.s).Keepable() {
			t.Fatal("reads that missed the cache (statements ran) are keepable")
		}
		reads := m.trackedRead(t, m.s)
		if !reads.Keepable() || !reads.Current(m.s) {
			t.Fatalf("reads served from cached pages: keepable %v, current %v; want both", reads.Keepable(), reads.Current(m.s))
		}

		expires := m.clock.Now().Add(time.Minute)
		m.list(t, m.s, "3", &expires)
		if reads.Current(m.s) {
			t.Fatal("reads are current after a write to their collection committed")
		}

		m.trackedRead(t, m.s) // the pages after the listing, into the cache
		reads = m.trackedRead(t, m.s)
		m.clock.Advance(time.Minute - time.Second)
		if !reads.Current(m.s) {
			t.Fatal("reads are not current a second before the listing they show expires")
		}
		m.clock.Advance(time.Second)
		if reads.Current(m.s) {
			t.Fatal("reads are current when the listing they show has expired")
		}
	})
}

func TestReads_SpoiledByAnyStatementOrByTheCaller(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := openCachedMarket(t, b)
		m.trackedRead(t, m.s)

		ctx, reads := store.TrackReads(context.Background())
		if _, err := m.s.Collections(ctx, store.SortFloor, store.PageRequest{}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.s.CollectionByID(ctx, m.col.ID); err != nil { // a statement, not a page
			t.Fatal(err)
		}
		if reads.Keepable() || reads.Current(m.s) {
			t.Fatal("reads that ran a statement are keepable")
		}

		ctx, reads = store.TrackReads(context.Background())
		if _, err := m.s.Collections(ctx, store.SortFloor, store.PageRequest{}); err != nil {
			t.Fatal(err)
		}
		store.Spoil(ctx)
		if reads.Keepable() || reads.Current(m.s) {
			t.Fatal("spoiled reads are keepable")
		}
	})
}

func TestReads_NeverKeepableWithThePageCacheOff(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		cfg := storetest.Config(storetest.NewClock(storetest.Epoch))
		cfg.PageCacheTTL = -1
		s := b.Open(t, cfg)
		for range 2 {
			ctx, reads := store.TrackReads(context.Background())
			if _, err := s.Collections(ctx, store.SortFloor, store.PageRequest{}); err != nil {
				t.Fatal(err)
			}
			if reads.Keepable() {
				t.Fatal("reads are keepable with the page cache off")
			}
		}
	})
}

// Two instances on one PostgreSQL store: reads served from one's cache stop being current
// when a write commits through the other, by notification, well before the TTL (an hour).
func TestReads_EndWithAWriteThroughAnotherInstance(t *testing.T) {
	for _, b := range storetest.Backends() {
		if b.Dialect != store.Postgres {
			continue // SQLite serves one process
		}
		t.Run(b.Name, func(t *testing.T) {
			m := openCachedMarket(t, b)
			other, err := store.Open(context.Background(), m.s.Config())
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			other.StartNFTIndex()
			m.trackedRead(t, other)
			reads := m.trackedRead(t, other)
			if !reads.Keepable() || !reads.Current(other) {
				t.Fatal("reads served from the other instance's cache are not current")
			}
			m.list(t, m.s, "3", nil)
			deadline := time.Now().Add(10 * time.Second)
			for reads.Current(other) {
				if time.Now().After(deadline) {
					t.Fatal("the other instance's reads are still current ten seconds after a write")
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}
