package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// BenchmarkHistoryPages reads the first page and a deep page of five growing histories, at
// one size and at ten times it, on each store: an NFT's history (one NFT listed and cancelled
// over and over), a seller's listings (the same cycles), a party's rewards (cc-transfers), and
// a pool's outcomes and a taker's swap history (a swap that fills each cycle).
// A page costs the same at both sizes when the read walks only the page.
func BenchmarkHistoryPages(b *testing.B) {
	for _, be := range storetest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			ctx := context.Background()
			clock := storetest.NewClock(storetest.Epoch)
			s := be.Open(b, storetest.Config(clock))
			alice, bob := storetest.Onboard(b, s, "alice"), storetest.Onboard(b, s, "bob")
			alice.Tap(b, s, store.CC, "1000000")
			col, err := s.CreateCollection(ctx, store.CollectionSpec{Slug: "hist", Name: "hist", Creator: alice.ID, Currency: store.CC, Supply: 10})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.AddPhase(ctx, store.PhaseSpec{Collection: col.ID, Name: "open", Price: "0", Start: clock.Now().Add(-time.Hour), End: clock.Now().Add(time.Hour), PerPartyLimit: 10}); err != nil {
				b.Fatal(err)
			}
			runAs := func(p *storetest.Party, kind string, prep *store.Prepared, err error) store.Receipt {
				if err != nil {
					b.Fatal(err)
				}
				r, err := s.Execute(ctx, p.Execution(kind, prep))
				if err != nil {
					b.Fatal(err)
				}
				return r
			}
			run := func(kind string, prep *store.Prepared, err error) store.Receipt { return runAs(alice, kind, prep, err) }
			// A pool where bob bids for whatever CC alice sells.
			if _, err := s.SetOraclePrice(ctx, store.CC, store.USDCx, "2.5"); err != nil {
				b.Fatal(err)
			}
			pool, err := s.CreatePool(ctx, store.CC, store.USDCx, 30)
			if err != nil {
				b.Fatal(err)
			}
			bob.Tap(b, s, store.USDCx, "1000000")
			prep, err := s.PrepareLPQuote(ctx, bob.ID, store.LPQuoteTerms{PoolID: pool.PoolID, Side: store.SideBid, Price: "2.5", Size: "100000", ExpiresAt: clock.Now().Add(24 * time.Hour).Unix()})
			runAs(bob, store.KindLPQuote, prep, err)
			prep, err = s.PrepareMint(ctx, alice.ID, col.ID, 1)
			run(store.KindNFTMint, prep, err)
			ref := store.NFTRef{CollectionID: col.ID, Serial: 1}
			grow := func(cycles int) { // each cycle: a listing, its cancel, a rewarded transfer and a swap
				for range cycles {
					page, err := s.NFTs(ctx, col.ID, store.NFTFilter{Owner: alice.ID}, store.SortSerial, store.PageRequest{})
					if err != nil || len(page.Items) == 0 {
						b.Fatalf("alice's NFT: %v", err)
					}
					prep, err := s.PrepareList(ctx, alice.ID, []store.ListingTerms{{ContractID: page.Items[0].ContractID, Price: "5"}})
					run(store.KindNFTList, prep, err)
					l, err := s.Listings(ctx, store.ListingFilter{Seller: alice.ID, State: "active"}, store.PageRequest{Limit: 1})
					if err != nil || len(l.Items) == 0 {
						b.Fatalf("alice's listing: %v", err)
					}
					prep, err = s.PrepareCancel(ctx, alice.ID, []string{l.Items[0].CID})
					run(store.KindNFTCancel, prep, err)
					prep, err = s.PrepareCCTransfer(ctx, alice.ID, bob.ID, store.MustAmount("1"))
					run(store.KindCCTransfer, prep, err)
					prep, err = s.PrepareSwap(ctx, alice.ID, store.SwapTerms{PoolID: pool.PoolID, Sell: "CC", Amount: "1", MinReceive: "2", Deadline: clock.Now().Add(time.Hour).Unix()})
					run(store.KindSwapIntent, prep, err)
				}
			}
			reads := []struct {
				name string
				read func(store.PageRequest) (string, error)
			}{
				{"nft-history", func(r store.PageRequest) (string, error) { p, err := s.NFTHistory(ctx, ref, r); return p.Cursor, err }},
				{"seller-listings", func(r store.PageRequest) (string, error) {
					p, err := s.Listings(ctx, store.ListingFilter{Seller: alice.ID}, r)
					return p.Cursor, err
				}},
				{"rewards", func(r store.PageRequest) (string, error) {
					p, err := s.RewardHistory(ctx, alice.ID, r)
					return p.Cursor, err
				}},
				{"pool-outcomes", func(r store.PageRequest) (string, error) {
					p, err := s.SwapHistory(ctx, store.SwapHistoryFilter{PoolID: pool.PoolID}, r)
					return p.Cursor, err
				}},
				{"taker-history", func(r store.PageRequest) (string, error) {
					p, err := s.SwapHistory(ctx, store.SwapHistoryFilter{Taker: alice.ID}, r)
					return p.Cursor, err
				}},
			}
			const base = 150
			grown := 0
			for _, size := range []int{base, 10 * base} {
				grow(size - grown)
				grown = size
				// What autovacuum does in a deployment (this machine's PostgreSQL runs without
				// it): the planner's statistics follow the history's size.
				if be.Dialect == store.Postgres {
					raw, err := sql.Open("pgx", s.Config().DB)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := raw.Exec("ANALYZE"); err != nil {
						b.Fatal(err)
					}
					raw.Close()
				}
				for _, rd := range reads {
					// The deep page: 5 pages of 20 in.
					deep := store.PageRequest{Limit: 20}
					for range 5 {
						c, err := rd.read(deep)
						if err != nil || c == "" {
							b.Fatalf("%s: %v", rd.name, err)
						}
						deep.Cursor = c
					}
					for _, at := range []struct {
						name string
						r    store.PageRequest
					}{{"first", store.PageRequest{Limit: 20}}, {"deep", deep}} {
						b.Run(fmt.Sprintf("%s/%s/history=%d", rd.name, at.name, size), func(b *testing.B) {
							for b.Loop() {
								if _, err := rd.read(at.r); err != nil {
									b.Fatal(err)
								}
							}
						})
					}
				}
			}
		})
	}
}
