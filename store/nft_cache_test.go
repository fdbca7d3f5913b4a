package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// cachedMarket is a collection of two minted NFTs on a store whose pages would stay cached
// for an hour, so a test sees a change only where a write or an expiry ends a page.
type cachedMarket struct {
	s      *store.Store
	clock  *storetest.Clock
	col    *store.Collection
	seller *storetest.Party
	nfts   []string // contract ids
}

func openCachedMarket(t *testing.T, b storetest.Backend) *cachedMarket {
	t.Helper()
	ctx := context.Background()
	clock := storetest.NewClock(storetest.Epoch)
	cfg := storetest.Config(clock)
	cfg.PageCacheTTL = time.Hour
	s := b.Open(t, cfg)
	creator, seller := storetest.Onboard(t, s, "creator"), storetest.Onboard(t, s, "seller")
	col, err := s.CreateCollection(ctx, store.CollectionSpec{Slug: "apes", Name: "Apes", Creator: creator.ID, Currency: store.CC, Supply: 2})
	if err != nil {
		t.Fatal(err)
	}
	now := clock.Now()
	if _, err := s.AddPhase(ctx, store.PhaseSpec{Collection: col.ID, Name: "free", Price: "0", Start: now.Add(-time.Hour), End: now.Add(time.Hour), PerPartyLimit: 2}); err != nil {
		t.Fatal(err)
	}
	m := &cachedMarket{s: s, clock: clock, col: col, seller: seller}
	var minted struct {
		ContractIDs []string `json:"contractIds"`
	}
	prep, err := s.PrepareMint(ctx, seller.ID, col.ID, 2)
	if err := json.Unmarshal(m.exec(t, s, store.KindNFTMint, prep, err), &minted); err != nil {
		t.Fatal(err)
	}
	m.nfts = minted.ContractIDs
	return m
}

func (m *cachedMarket) exec(t *testing.T, s *store.Store, kind string, prep *store.Prepared, err error) store.Receipt {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	r, err := m.seller.Execute(s, kind, prep)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// list lists the first NFT at price, until expires when not nil, and returns the listing's cid.
func (m *cachedMarket) list(t *testing.T, s *store.Store, price string, expires *time.Time) string {
	t.Helper()
	prep, err := s.PrepareList(context.Background(), m.seller.ID, []store.ListingTerms{{ContractID: m.nfts[0], Price: price, ExpiresAt: expires}})
	var listed struct {
		CIDs []string `json:"cids"`
	}
	if err := json.Unmarshal(m.exec(t, s, store.KindNFTList, prep, err), &listed); err != nil || len(listed.CIDs) != 1 {
		t.Fatalf("list receipt: %v %+v", err, listed)
	}
	return listed.CIDs[0]
}

// listedPrices reads s's listed-only page of the collection, price ascending, and its
// price-sorted page of every NFT: the prices each shows.
func (m *cachedMarket) listedPrices(t *testing.T, s *store.Store) (listed, all []string) {
	t.Helper()
	ctx := context.Background()
	prices := func(f store.NFTFilter) []string {
		page, err := s.NFTs(ctx, m.col.ID, f, store.SortPriceAsc, store.PageRequest{})
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, n := range page.Items {
			if n.Listing == nil {
				out = append(out, "-")
				continue
			}
			out = append(out, n.Listing.Price.String())
		}
		return out
	}
	return prices(store.NFTFilter{Listed: true}), prices(store.NFTFilter{})
}

func (m *cachedMarket) wantPrices(t *testing.T, s *store.Store, when string, listed, all string) {
	t.Helper()
	l, a := m.listedPrices(t, s)
	if got, _ := json.Marshal(l); string(got) != listed {
		t.Errorf("%s: the listed page shows %s, want %s", when, got, listed)
	}
	if got, _ := json.Marshal(a); string(got) != all {
		t.Errorf("%s: the page of every NFT shows %s, want %s", when, got, all)
	}
}

// wantFloor checks the collection's floor ("-" for none) as s shows it by id, by slug and in
// the collections list, each read twice (the second from memory).
func (m *cachedMarket) wantFloor(t *testing.T, s *store.Store, when, floor string) {
	t.Helper()
	ctx := context.Background()
	show := func(c *store.Collection, err error) string {
		if err != nil {
			t.Fatal(err)
		}
		if c.FloorPrice == nil {
			return "-"
		}
		return c.FloorPrice.String()
	}
	for range 2 {
		byID := show(s.CollectionByID(ctx, m.col.ID))
		bySlug := show(s.CollectionBySlug(ctx, m.col.Slug))
		page, err := s.Collections(ctx, store.SortFloor, store.PageRequest{})
		if err != nil || len(page.Items) != 1 {
			t.Fatalf("collections %+v %v", page, err)
		}
		inList := show(&page.Items[0], nil)
		if byID != floor || bySlug != floor || inList != floor {
			t.Errorf("%s: floor %s by id, %s by slug, %s in the list; want %s", when, byID, bySlug, inList, floor)
		}
	}
}

func TestNFTPages_AWriteShowsInTheNextRead(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := openCachedMarket(t, b)
		m.wantPrices(t, m.s, "before any listing", `[]`, `["-","-"]`)
		m.wantPrices(t, m.s, "read again", `[]`, `["-","-"]`)
		m.wantFloor(t, m.s, "before any listing", "-")
		cid := m.list(t, m.s, "3", nil)
		m.wantPrices(t, m.s, "after the listing", `["3"]`, `["3","-"]`)
		m.wantFloor(t, m.s, "after the listing", "3")
		prep, err := m.s.PrepareCancel(context.Background(), m.seller.ID, []string{cid})
		m.exec(t, m.s, store.KindNFTCancel, prep, err)
		m.wantPrices(t, m.s, "after the cancel", `[]`, `["-","-"]`)
		m.wantFloor(t, m.s, "after the cancel", "-")
	})
}

func TestNFTPages_AnExpiringListingEndsThePagesThatShowIt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := openCachedMarket(t, b)
		until := m.clock.Now().Add(time.Minute)
		m.list(t, m.s, "3", &until)
		m.wantPrices(t, m.s, "before expiry", `["3"]`, `["3","-"]`)
		m.clock.Advance(59 * time.Second)
		m.wantPrices(t, m.s, "a second before expiry", `["3"]`, `["3","-"]`)
		m.wantFloor(t, m.s, "a second before expiry", "3")
		m.clock.Advance(time.Second) // expired; no sweeper has run and nothing was written
		m.wantPrices(t, m.s, "at expiry", `[]`, `["-","-"]`)
		m.wantFloor(t, m.s, "at expiry", "-")
	})
}

// Two instances on one PostgreSQL store: a write through one ends the other's cached pages
// (NFTs and collections) through the database's notification, not a time-out.
func TestNFTPages_AWriteThroughAnotherInstanceShowsWithoutWaitingForTheTTL(t *testing.T) {
	for _, b := range storetest.Backends() {
		if b.Dialect != store.Postgres {
			continue // SQLite serves one process
		}
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			m := openCachedMarket(t, b)
			cfg := m.s.Config()
			other, err := store.Open(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			other.StartNFTIndex()
			floor := func() *store.Amount {
				page, err := other.Collections(ctx, store.SortFloor, store.PageRequest{})
				if err != nil || len(page.Items) != 1 {
					t.Fatalf("collections %+v %v", page, err)
				}
				return page.Items[0].FloorPrice
			}
			m.wantPrices(t, other, "before the listing", `[]`, `["-","-"]`)
			m.wantFloor(t, other, "before the listing", "-")
			if f := floor(); f != nil {
				t.Fatalf("floor %v before any listing", f)
			}
			m.list(t, m.s, "3", nil) // through the first instance
			deadline := time.Now().Add(10 * time.Second)
			for {
				l, _ := m.listedPrices(t, other)
				c, err := other.CollectionBySlug(ctx, m.col.Slug)
				if err != nil {
					t.Fatal(err)
				}
				if len(l) == 1 && floor() != nil && c.FloorPrice != nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the other instance still shows %v and floor %v ten seconds after the listing", l, floor())
				}
				time.Sleep(5 * time.Millisecond)
			}
			m.wantPrices(t, other, "after the listing", `["3"]`, `["3","-"]`)
			m.wantFloor(t, other, "after the listing", "3")
		})
	}
}
