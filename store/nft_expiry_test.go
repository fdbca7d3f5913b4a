package store_test

import (
	"context"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

func TestNFTCollections_AnExpiredListingLeavesFloorAndListedCountOfEveryRead(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		m := openCachedMarket(t, b)
		s, clock, col := m.s, m.clock, m.col
		until := clock.Now().Add(time.Minute)
		m.list(t, s, "3", &until)
		reads := func() map[string]*store.Collection {
			t.Helper()
			page, err := s.Collections(ctx, store.SortFloor, store.PageRequest{})
			if err != nil || len(page.Items) != 1 {
				t.Fatalf("collections %+v %v", page, err)
			}
			byID, err := s.CollectionsByID(ctx, []string{col.ID})
			if err != nil {
				t.Fatal(err)
			}
			one, err := s.CollectionByID(ctx, col.ID)
			if err != nil {
				t.Fatal(err)
			}
			return map[string]*store.Collection{"Collections": &page.Items[0], "CollectionsByID": byID[col.ID], "CollectionByID": one}
		}
		for name, c := range reads() {
			if c.ListedCount != 1 || c.FloorPrice == nil || c.FloorPrice.String() != "3" {
				t.Errorf("%s before expiry: listed %d floor %v", name, c.ListedCount, c.FloorPrice)
			}
		}
		clock.Advance(2 * time.Minute) // expired; no sweeper has run, and no write invalidated a cache
		for name, c := range reads() {
			if c.ListedCount != 0 || c.FloorPrice != nil {
				t.Errorf("%s after expiry: listed %d floor %v, want 0 and none", name, c.ListedCount, c.FloorPrice)
			}
		}
	})
}
