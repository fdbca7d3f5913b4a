package store_test

import (
	"context"
	"fmt"
	"testing"

	"marketd/store"
	"marketd/store/storetest"
)

// Every page of a growing history (NFT histories, listings, rewards, swap outcomes and
// histories, open intents and quotes, sessions, a party's accepts into offers) is a keyset
// read that an index serves in order: on PostgreSQL, with sequential scans and sorts priced
// out, its plan has neither, so the database walks only the page however long the history
// grows. That holds for a collection's activity feed and a pool's outcomes feed too, read in
// log order from a position: their rows carry their update's offset. The console's list of
// offers has the test of this name in store/admin.
func TestHistories_EveryPageIsAnIndexWalkWithoutASort(t *testing.T) {
	for _, b := range storetest.Backends() {
		if b.Dialect != store.Postgres {
			continue // the plan is PostgreSQL's; SQLite's indexes are the same
		}
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			s := b.Open(t, storetest.Config(nil))
			sum, err := s.SeedDemo(ctx, store.DemoOptions{NFTs: 40, Seed: 5})
			if err != nil {
				t.Fatal(err)
			}
			party, pool := sum.Parties[0], sum.Pools[0]
			col, err := s.CollectionBySlug(ctx, sum.Collections[0])
			if err != nil {
				t.Fatal(err)
			}
			page := store.PageRequest{Limit: 5}
			storetest.WalkIndexes(t, s, []storetest.PlanRead{
				{Name: "NFT history", Read: func() error {
					_, err := s.NFTHistory(ctx, store.NFTRef{CollectionID: col.ID, Serial: 1}, page)
					return err
				}},
				{Name: "NFT histories of a page", PageSorts: true, Read: func() error {
					_, err := s.NFTHistories(ctx, []store.NFTRef{{CollectionID: col.ID, Serial: 1}, {CollectionID: col.ID, Serial: 2}}, page)
					return err
				}},
				{Name: "listings of a collection", Read: func() error {
					_, err := s.Listings(ctx, store.ListingFilter{CollectionID: col.ID}, page)
					return err
				}},
				{Name: "listings of a seller", Read: func() error {
					_, err := s.Listings(ctx, store.ListingFilter{Seller: party}, page)
					return err
				}},
				{Name: "rewards", Read: func() error { _, err := s.RewardHistory(ctx, party, page); return err }},
				{Name: "swap history of a taker", Read: func() error {
					_, err := s.SwapHistory(ctx, store.SwapHistoryFilter{Taker: party}, page)
					return err
				}},
				{Name: "outcomes of a pool", Read: func() error {
					_, err := s.SwapHistory(ctx, store.SwapHistoryFilter{PoolID: pool}, page)
					return err
				}},
				{Name: "open intents of a taker", Read: func() error { _, err := s.ActiveIntents(ctx, party, page); return err }},
				{Name: "open quotes of an LP", Read: func() error { _, err := s.ActiveLPQuotes(ctx, party, page); return err }},
				{Name: "sessions of a party", Read: func() error { _, err := s.Sessions(ctx, party, page); return err }},
				{Name: "a party's accepts", Read: func() error { _, err := s.OfferAccepts(ctx, party, page); return err }},
				{Name: "a pool's outcomes from a position", Read: func() error {
					outs, err := s.PoolOutcomesAfter(ctx, pool, store.LogPosition{}, 2)
					if err != nil || len(outs) == 0 {
						return fmt.Errorf("the feed's start: %d outcomes, %v", len(outs), err)
					}
					_, err = s.PoolOutcomesAfter(ctx, pool, outs[len(outs)-1].Position(), 5)
					return err
				}},
				{Name: "a collection's activity, a page and the next, of every kind and of two", Read: func() error {
					for _, kinds := range [][]string{nil, {store.EventMinted, store.EventListed}} {
						first, err := s.CollectionActivity(ctx, col.ID, kinds, page)
						if err != nil || first.Cursor == "" {
							return fmt.Errorf("the first page of %v: %d events, %v", kinds, len(first.Items), err)
						}
						if _, err := s.CollectionActivity(ctx, col.ID, kinds, store.PageRequest{Limit: 5, Cursor: first.Cursor}); err != nil {
							return err
						}
					}
					return nil
				}},
				{Name: "a collection's activity from a position", Read: func() error {
					evs, err := s.CollectionActivityAfter(ctx, col.ID, store.LogPosition{}, 3)
					if err != nil || len(evs) == 0 {
						return fmt.Errorf("the feed's start: %d events, %v", len(evs), err)
					}
					_, err = s.CollectionActivityAfter(ctx, col.ID, evs[len(evs)-1].Position(), 5)
					return err
				}},
			})
		})
	}
}
