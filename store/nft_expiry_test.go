package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

func TestNFTCollections_AnExpiredListingLeavesFloorAndListedCountOfEveryRead(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s, clock, _ := openLedger(t, b)
		creator, seller := onboardParty(t, s, "creator"), onboardParty(t, s, "seller")
		col, err := s.CreateCollection(ctx, store.CollectionSpec{Slug: "apes", Name: "Apes", Creator: creator.id, Currency: store.CC, Supply: 2})
		if err != nil {
			t.Fatal(err)
		}
		now := clock.Now()
		if _, err := s.AddPhase(ctx, store.PhaseSpec{Collection: col.ID, Name: "free", Price: "0", Start: now.Add(-time.Hour), End: now.Add(time.Hour), PerPartyLimit: 2}); err != nil {
			t.Fatal(err)
		}
		exec := func(kind string, prep *store.Prepared, err error) store.Receipt {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			r, err := seller.execute(s, kind, prep)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		prep, err := s.PrepareMint(ctx, seller.id, col.ID, 1)
		var minted struct {
			ContractIDs []string `json:"contractIds"`
		}
		if err := json.Unmarshal(exec(store.KindNFTMint, prep, err), &minted); err != nil {
			t.Fatal(err)
		}
		until := now.Add(time.Minute)
		prep, err = s.PrepareList(ctx, seller.id, []store.ListingTerms{{ContractID: minted.ContractIDs[0], Price: "3", ExpiresAt: &until}})
		exec(store.KindNFTList, prep, err)
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
