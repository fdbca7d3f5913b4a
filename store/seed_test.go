package store_test

import (
	"context"
	"testing"

	"marketd/store"
	"marketd/store/storetest"
)

func TestSeedDemo_FillsAnEmptyStoreOnceWithConsistentStats(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
		sum, err := s.SeedDemo(ctx, store.DemoOptions{NFTs: 400, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		if sum.NFTs != 400 || len(sum.Collections) < 3 || len(sum.Parties) < 4 || sum.Listings == 0 || sum.Sales == 0 {
			t.Fatalf("seeded %+v", sum)
		}
		page, err := s.Collections(ctx, store.SortNewest, store.PageRequest{Limit: 100})
		if err != nil || len(page.Items) != len(sum.Collections) {
			t.Fatalf("collections %d, %v; want %d", len(page.Items), err, len(sum.Collections))
		}
		nfts, listed, volumeSeen := 0, 0, false
		for _, c := range page.Items {
			if c.Phases[0].Name != "public" || !c.Phases[0].ActiveAt(storetest.Epoch) {
				t.Errorf("%s has no open phase: %+v", c.Slug, c.Phases)
			}
			owners := map[string]bool{}
			n, l := 0, 0
			var floor *store.Amount
			for r := (store.PageRequest{Limit: 100}); ; {
				p, err := s.NFTs(ctx, c.ID, store.NFTFilter{}, store.SortSerial, r)
				if err != nil {
					t.Fatal(err)
				}
				for _, it := range p.Items {
					n++
					owners[it.Owner] = true
					if it.Listing != nil {
						l++
						if floor == nil || it.Listing.Price.Cmp(*floor) < 0 {
							price := it.Listing.Price
							floor = &price
						}
					}
				}
				if p.Cursor == "" {
					break
				}
				r.Cursor = p.Cursor
			}
			if c.Minted != n || c.ListedCount != l || c.Owners != len(owners) || (floor == nil) != (c.FloorPrice == nil) || (floor != nil && !floor.Equal(*c.FloorPrice)) {
				t.Errorf("%s stats minted %d listed %d owners %d floor %v; the NFTs say %d, %d, %d, %v", c.Slug, c.Minted, c.ListedCount, c.Owners, c.FloorPrice, n, l, len(owners), floor)
			}
			nfts += n
			listed += l
			volumeSeen = volumeSeen || c.Volume.IsPositive()
		}
		if nfts != sum.NFTs || listed != sum.Listings || !volumeSeen {
			t.Errorf("NFTs %d listed %d volume %v; the seed said %+v", nfts, listed, volumeSeen, sum)
		}
		if _, err := s.SeedDemo(ctx, store.DemoOptions{NFTs: 400}); store.ErrorCode(err) != store.CodeConflict {
			t.Fatalf("a second seed: %v, want conflict", err)
		}
		again, err := s.Collections(ctx, store.SortNewest, store.PageRequest{Limit: 100})
		if err != nil || len(again.Items) != len(page.Items) {
			t.Fatalf("after a refused second seed there are %d collections", len(again.Items))
		}
	})
}
