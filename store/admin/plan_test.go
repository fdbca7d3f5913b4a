package admin_test

import (
	"context"
	"testing"

	"marketd/store"
	"marketd/store/admin"
	"marketd/store/storetest"
)

// Every page of the console's growing lists is a keyset read that an index serves in order:
// on PostgreSQL, with sequential scans and sorts priced out, its plan has neither, so the
// database walks only the page however long the list grows. The store's own histories have the
// test of this name in package store.
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
			c := admin.New(s)
			party := sum.Parties[0]
			col, err := s.CollectionBySlug(ctx, sum.Collections[0])
			if err != nil {
				t.Fatal(err)
			}
			page := store.PageRequest{Limit: 5}
			storetest.WalkIndexes(t, s, []storetest.PlanRead{
				{Name: "the console's offers", Read: func() error { _, err := c.Offers(ctx, admin.OfferFilter{}, page); return err }},
				{Name: "the console's offers of a maker", Read: func() error {
					_, err := c.Offers(ctx, admin.OfferFilter{Maker: party, State: "open"}, page)
					return err
				}},
				{Name: "the console's offers of a collection", Read: func() error {
					_, err := c.Offers(ctx, admin.OfferFilter{CollectionID: col.ID, Kind: store.OfferTrait}, page)
					return err
				}},
			})
		})
	}
}
