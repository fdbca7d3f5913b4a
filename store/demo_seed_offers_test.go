package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"marketd/store"
	"marketd/store/admin"
	"marketd/store/storetest"
)

// The demo seed makes a buy side: offers of every kind from several parties, one per NFT, none
// at or above a listing it matches (each under its collection's floor), a few accepted
// (collection offers partly filled, item offers taken); each maker's locked balance is what its
// open offers and LP quotes hold; the same seed makes the same offers, and --offers=false
// (without Offers) the same market without them.
func TestSeedDemo_MakesOffersOfEveryKindUnderTheFloorAndAcceptsSome(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		seed := func(o store.DemoOptions) (*store.Store, *store.DemoSummary) {
			s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
			sum, err := s.SeedDemo(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			return s, sum
		}
		s, sum := seed(store.DemoOptions{NFTs: 400, Seed: 7, Offers: true})
		if sum.Offers != sum.NFTs || sum.OfferAccepts == 0 || sum.OffersOpen > sum.Offers || sum.OffersOpen < sum.Offers-sum.OfferAccepts {
			t.Fatalf("seeded %+v", sum)
		}
		offers := seededOffers(t, s)
		if len(offers) != sum.Offers {
			t.Fatalf("%d offers, the seed said %d", len(offers), sum.Offers)
		}
		kinds, makers := map[string]int{}, map[string]bool{}
		open, partly, taken := 0, 0, 0
		escrow := map[string]map[store.Instrument]store.Amount{} // open offers' amounts by maker
		for _, o := range offers {
			kinds[o.Kind]++
			makers[o.Maker] = true
			if o.Active() {
				open++
				if escrow[o.Maker] == nil {
					escrow[o.Maker] = map[store.Instrument]store.Amount{}
				}
				escrow[o.Maker][o.Instrument] = escrow[o.Maker][o.Instrument].Add(o.Amount)
				if o.Remaining < o.Quantity {
					partly++
				}
			}
			if o.ClosedBy == store.KindNFTOfferAccept {
				taken++
			}
			if !o.Active() && o.ClosedBy != store.KindNFTOfferAccept {
				t.Errorf("offer %s closed by %q", o.OfferID, o.ClosedBy)
			}
		}
		if kinds[store.OfferItem] == 0 || kinds[store.OfferCollection] == 0 || kinds[store.OfferTrait] == 0 || len(makers) < 4 {
			t.Errorf("offers by kind %v from %d makers", kinds, len(makers))
		}
		if open != sum.OffersOpen || partly == 0 || taken == 0 {
			t.Errorf("%d open (the seed said %d), %d partly filled, %d taken", open, sum.OffersOpen, partly, taken)
		}
		// None crosses a listing: each bids under its collection's floor, the cheapest listing.
		cols, err := s.Collections(ctx, store.SortNewest, store.PageRequest{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		floors := map[string]*store.Amount{}
		for _, c := range cols.Items {
			floors[c.ID] = c.FloorPrice
		}
		for _, o := range offers {
			if f := floors[o.CollectionID]; o.Active() && f != nil && o.Price.Cmp(*f) >= 0 {
				t.Errorf("offer %s bids %s, at least its collection's floor %s", o.OfferID, o.Price, f)
			}
		}
		// Escrow: what a maker's open offers hold is its locked balance but its LP quotes.
		for _, p := range sum.Parties {
			bs, err := s.Balances(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			quotes, err := s.ActiveLPQuotes(ctx, p, store.PageRequest{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			for _, bal := range bs {
				locked := bal.Locked
				for _, q := range quotes.Items {
					if q.Instrument == bal.Instrument {
						locked = locked.Sub(q.Amount)
					}
				}
				if want := escrow[p][bal.Instrument]; !locked.Equal(want) {
					t.Errorf("%s locks %s %s besides its LP quotes; its open offers hold %s", p, locked, bal.Instrument, want)
				}
			}
		}
		// The same seed, the same offers; without offers, the same market.
		again, againSum := seed(store.DemoOptions{NFTs: 400, Seed: 7, Offers: true})
		if got, want := offerShapes(t, again, seededOffers(t, again)), offerShapes(t, s, offers); !slices.Equal(got, want) {
			t.Errorf("the same seed made other offers: %d against %d", len(got), len(want))
		}
		if againSum.OfferAccepts != sum.OfferAccepts {
			t.Errorf("the same seed accepted %d, then %d", sum.OfferAccepts, againSum.OfferAccepts)
		}
		bare, bareSum := seed(store.DemoOptions{NFTs: 400, Seed: 7})
		if bareSum.Offers != 0 || len(seededOffers(t, bare)) != 0 || bareSum.Listings != sum.Listings || bareSum.Sales != sum.Sales {
			t.Errorf("without offers: %+v; with them: %+v", bareSum, sum)
		}
	})
}

// seededOffers is every offer of the store, open or closed, each its latest version.
func seededOffers(t *testing.T, s *store.Store) []admin.Offer {
	t.Helper()
	var all []admin.Offer
	for r := (store.PageRequest{Limit: 100}); ; {
		p, err := admin.New(s).Offers(context.Background(), admin.OfferFilter{}, r)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, p.Items...)
		if p.Cursor == "" {
			return all
		}
		r.Cursor = p.Cursor
	}
}

// offerShapes describes offers apart from their store: maker by hint, collection by slug,
// sorted.
func offerShapes(t *testing.T, s *store.Store, offers []admin.Offer) []string {
	t.Helper()
	cols, err := s.Collections(context.Background(), store.SortNewest, store.PageRequest{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	slugs := map[string]string{}
	for _, c := range cols.Items {
		slugs[c.ID] = c.Slug
	}
	var out []string
	for _, o := range offers {
		hint, _, _ := strings.Cut(o.Maker, "::")
		out = append(out, fmt.Sprintf("%s %s %s %d %s %s %d/%d %d %s", hint, slugs[o.CollectionID], o.Kind, deref(o.Serial), deref(o.Traits), o.Price, o.Remaining, o.Quantity, o.ExpiresAt.Unix(), o.ClosedBy))
	}
	slices.Sort(out)
	return out
}

func deref[T any](p *T) T {
	var v T
	if p != nil {
		v = *p
	}
	return v
}

// The seed tells its progress through the offers as it tells it through the NFTs: the offers
// made so far after each batch, up to every offer, once every NFT is minted.
func TestSeedDemo_TellsTheOffersMadeAfterTheNFTs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
		var nfts, offers [][2]int
		nftsAfterOffers := 0
		sum, err := s.SeedDemo(context.Background(), store.DemoOptions{NFTs: 300, Seed: 3, Offers: true,
			Progress: func(done, total int) {
				nfts = append(nfts, [2]int{done, total})
				if len(offers) > 0 {
					nftsAfterOffers++
				}
			},
			OfferProgress: func(done, total int) { offers = append(offers, [2]int{done, total}) }})
		if err != nil {
			t.Fatal(err)
		}
		if nftsAfterOffers > 0 {
			t.Errorf("%d reports of NFTs minted came after the first of offers made", nftsAfterOffers)
		}
		if len(offers) < 2 || offers[len(offers)-1] != [2]int{sum.Offers, sum.Offers} {
			t.Fatalf("told %v of %d offers", offers, sum.Offers)
		}
		for i, o := range offers {
			if o[1] != sum.Offers || i > 0 && o[0] <= offers[i-1][0] {
				t.Fatalf("told %v of %d offers: not ever more of them", offers, sum.Offers)
			}
		}
		if len(nfts) == 0 || nfts[len(nfts)-1] != [2]int{sum.NFTs, sum.NFTs} {
			t.Errorf("told %v of %d NFTs", nfts, sum.NFTs)
		}
	})
}
