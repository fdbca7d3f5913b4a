package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/nftmeta"
	"marketd/store/storetest"
)

// walk reads every page of the list at path with page size limit, following the cursor,
// and returns the items in the order served.
func walk[V any](t *testing.T, a *testAPI, path string, limit int) []V {
	t.Helper()
	var out []V
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	next := fmt.Sprintf("%s%slimit=%d", path, sep, limit)
	for pages := 0; ; pages++ {
		if pages > 200 {
			t.Fatalf("%s: more than 200 pages", path)
		}
		var page struct {
			Items  []V     `json:"items"`
			Cursor *string `json:"cursor"`
		}
		decodeAs(t, a.do("GET", next, nil), &page)
		if len(page.Items) > limit {
			t.Fatalf("%s: a page of %d items, limit %d", next, len(page.Items), limit)
		}
		out = append(out, page.Items...)
		if page.Cursor == nil {
			return out
		}
		if len(page.Items) == 0 {
			t.Fatalf("%s: an empty page with a cursor", next)
		}
		next = fmt.Sprintf("%s%slimit=%d&cursor=%s", path, sep, limit, url.QueryEscape(*page.Cursor))
	}
}

// mintOf mints n NFTs of collection col (id or slug) as u and returns their contract ids.
func (m *market) mintOf(u *walletUser, col string, n int) []string {
	m.t.Helper()
	r := m.pe(u, "/api/nft/mint/batch/atomic", map[string]any{"collectionId": col, "quantity": n}).ok(m.t)
	var out struct {
		ContractIDs []string `json:"contractIds"`
	}
	decodeAs(m.t, r, &out)
	if len(out.ContractIDs) != n {
		m.t.Fatalf("mint of %d answered %s", n, r.body)
	}
	return out.ContractIDs
}

func (m *market) listUntil(u *walletUser, contractID, price string, expires time.Time) string {
	m.t.Helper()
	return m.pe(u, "/api/nft/list", map[string]any{"contractId": contractID, "price": price, "expiresAt": expires.Unix()}).ok(m.t).str(m.t, "cid")
}

func (m *market) buy(u *walletUser, cid string) string {
	m.t.Helper()
	return m.pe(u, "/api/nft/buy/atomic", map[string]string{"cid": cid}).ok(m.t).str(m.t, "contractId")
}

func serialsOf(items []nftView) []int {
	out := make([]int, len(items))
	for i, it := range items {
		out[i] = it.Serial
	}
	return out
}

// traitItems are eight items: Color Red/Blue/Green and Hat Cap/None in a fixed pattern.
func traitItems() []store.ItemSpec {
	colors := []string{"Red", "Blue", "Green", "Red", "Blue", "Green", "Red", "Blue"}
	hats := []string{"Cap", "None", "Cap", "None", "None", "Cap", "Cap", "None"}
	items := make([]store.ItemSpec, len(colors))
	for i := range items {
		items[i] = store.ItemSpec{Fields: nftmeta.Fields{Name: fmt.Sprintf("Item %d", i+1), Image: "https://img.example/" + fmt.Sprint(i+1)},
			Traits: []store.Trait{{Type: "Color", Value: colors[i]}, {Type: "Hat", Value: hats[i]}}}
	}
	return items
}

func hasTrait(it nftView, typ string, values ...string) bool {
	for _, tr := range it.Traits {
		if tr.Type == typ && slices.Contains(values, tr.Value) {
			return true
		}
	}
	return false
}

func TestNFTRead_TraitFiltersOrValuesOfATypeAndAndTypes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newMarket(t, b, collectionOpts{supply: 8, price: "0", items: traitItems()})
		u := m.funded("holder")
		m.mintOf(u, m.col.ID, 8)
		base := "/api/nft/collection/" + m.col.ID + "/nfts"
		all := walk[nftView](t, m.testAPI, base, 100)
		if len(all) != 8 {
			t.Fatalf("%d NFTs, want 8", len(all))
		}
		cases := []struct {
			query string
			keep  func(it nftView) bool
		}{
			{"trait=Color:Red", func(it nftView) bool { return hasTrait(it, "Color", "Red") }},
			{"trait=Color:Red&trait=Color:Blue", func(it nftView) bool { return hasTrait(it, "Color", "Red", "Blue") }},
			{"trait=Color:Red&trait=Hat:Cap", func(it nftView) bool { return hasTrait(it, "Color", "Red") && hasTrait(it, "Hat", "Cap") }},
			{"trait=Color:Red&trait=Hat:None&trait=Color:Blue", func(it nftView) bool {
				return hasTrait(it, "Color", "Red", "Blue") && hasTrait(it, "Hat", "None")
			}},
			{"trait=Color:Purple", func(nftView) bool { return false }},
			{"trait=Shape:Round", func(nftView) bool { return false }},
		}
		for _, c := range cases {
			var want []int
			for _, it := range all {
				if c.keep(it) {
					want = append(want, it.Serial)
				}
			}
			for _, limit := range []int{1, 2, 100} {
				got := serialsOf(walk[nftView](t, m.testAPI, base+"?"+c.query, limit))
				if !slices.Equal(got, want) {
					t.Errorf("%s (limit %d): serials %v, want %v", c.query, limit, got, want)
				}
			}
		}
		// The slug names the collection as well as its id.
		if got := serialsOf(walk[nftView](t, m.testAPI, "/api/nft/collection/"+m.col.Slug+"/nfts?trait=Color:Green", 5)); !slices.Equal(got, []int{3, 6}) {
			t.Errorf("by slug: serials %v, want [3 6]", got)
		}
	})
}

// priceOrder is the test's own ordering of a collection's NFTs for a sort: listed first by
// price (ties by serial), then unlisted by serial.
func priceOrder(items []nftView, desc bool) []int {
	listed, unlisted := []nftView{}, []nftView{}
	for _, it := range items {
		if it.Listing != nil {
			listed = append(listed, it)
		} else {
			unlisted = append(unlisted, it)
		}
	}
	slices.SortStableFunc(listed, func(a, b nftView) int {
		c := a.Listing.Price.Cmp(b.Listing.Price)
		if desc {
			c = -c
		}
		if c != 0 {
			return c
		}
		return a.Serial - b.Serial
	})
	return append(serialsOf(listed), serialsOf(unlisted)...)
}

func TestNFTRead_EveryFilterAndSortWalksEachItemOnceInOrder(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newMarket(t, b, collectionOpts{supply: 10, price: "0", items: nil})
		alice, bob := m.funded("alice"), m.funded("bob")
		a := m.mintOf(alice, m.col.ID, 6) // serials 1-6
		bb := m.mintOf(bob, m.col.ID, 4)  // serials 7-10
		// Prices with ties and different widths: 9 < 10 < 10 < 10.5 < 100.
		m.list(alice, a[1], "10")
		m.list(alice, a[4], "9")
		m.list(bob, bb[0], "10")
		m.list(bob, bb[2], "100")
		m.list(alice, a[0], "10.5")
		base := "/api/nft/collection/" + m.col.ID + "/nfts"
		all := walk[nftView](t, m.testAPI, base, 100)
		if got := serialsOf(all); !slices.Equal(got, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}) {
			t.Fatalf("serial order %v", got)
		}
		filters := []struct {
			query string
			keep  func(it nftView) bool
		}{
			{"", func(nftView) bool { return true }},
			{"listed=true", func(it nftView) bool { return it.Listing != nil }},
			{"listed=false", func(nftView) bool { return true }},
			{"minPrice=10", func(it nftView) bool { return it.Listing != nil && it.Listing.Price.Cmp(store.MustAmount("10")) >= 0 }},
			{"maxPrice=10", func(it nftView) bool { return it.Listing != nil && it.Listing.Price.Cmp(store.MustAmount("10")) <= 0 }},
			{"minPrice=9.5&maxPrice=10.5", func(it nftView) bool {
				return it.Listing != nil && it.Listing.Price.Cmp(store.MustAmount("9.5")) >= 0 && it.Listing.Price.Cmp(store.MustAmount("10.5")) <= 0
			}},
			{"owner=" + url.QueryEscape(bob.ID), func(it nftView) bool { return it.Owner == bob.ID }},
			{"owner=" + url.QueryEscape(alice.ID) + "&listed=true", func(it nftView) bool { return it.Owner == alice.ID && it.Listing != nil }},
		}
		for _, f := range filters {
			var kept []nftView
			for _, it := range all {
				if f.keep(it) {
					kept = append(kept, it)
				}
			}
			for _, sort := range []string{"", "serial", "price_asc", "price_desc"} {
				want := serialsOf(kept)
				switch sort {
				case "price_asc":
					want = priceOrder(kept, false)
				case "price_desc":
					want = priceOrder(kept, true)
				}
				q := f.query
				if sort != "" {
					q = strings.TrimPrefix(q+"&sort="+sort, "&")
				}
				for _, limit := range []int{1, 2, 3, 100} {
					got := walk[nftView](t, m.testAPI, base+"?"+q, limit)
					if !slices.Equal(serialsOf(got), want) {
						t.Errorf("?%s limit %d: serials %v, want %v", q, limit, serialsOf(got), want)
					}
				}
			}
		}
		// Owners and listings as the list shows them are each NFT's detail.
		for _, it := range all {
			d := m.nft(it.ContractID)
			if d.Owner != it.Owner || (d.Listing == nil) != (it.Listing == nil) || d.Serial != it.Serial {
				t.Errorf("serial %d: list %+v, detail %+v", it.Serial, it, d.nftView)
			}
		}
	})
}

func TestNFTRead_ExpiredListingsNeverShowAsListedBeforeOrAfterTheSweeper(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newMarket(t, b, collectionOpts{supply: 4, price: "0"})
		seller, buyer := m.funded("seller"), m.funded("buyer")
		nfts := m.mintOf(seller, m.col.ID, 4)
		expiring := m.listUntil(seller, nfts[0], "1", m.clock.Now().Add(time.Minute)) // the floor, until it expires
		m.list(seller, nfts[2], "5")
		if c := m.collection(); c.FloorPrice == nil || c.FloorPrice.String() != "1" || c.ListedCount != 2 {
			t.Fatalf("before expiry: floor %v, listed %d", c.FloorPrice, c.ListedCount)
		}
		m.clock.Advance(2 * time.Minute)
		check := func(when string) {
			t.Helper()
			if d := m.nft(nfts[0]); d.Listing != nil {
				t.Errorf("%s: the detail shows the expired listing %+v", when, d.Listing)
			}
			base := "/api/nft/collection/" + m.col.ID + "/nfts"
			for q, want := range map[string][]int{
				"listed=true":     {3},
				"maxPrice=2":      {},
				"sort=price_asc":  {3, 1, 2, 4},
				"sort=price_desc": {3, 1, 2, 4},
				"":                {1, 2, 3, 4},
			} {
				for _, limit := range []int{1, 3} {
					got := walk[nftView](t, m.testAPI, base+"?"+q, limit)
					if s := serialsOf(got); !slices.Equal(s, want) && !(len(s) == 0 && len(want) == 0) {
						t.Errorf("%s: ?%s limit %d: serials %v, want %v", when, q, limit, s, want)
					}
					for _, it := range got {
						if it.Serial == 1 && it.Listing != nil {
							t.Errorf("%s: ?%s shows the expired listing", when, q)
						}
					}
				}
			}
			c := m.collection()
			if c.FloorPrice == nil || c.FloorPrice.String() != "5" || c.ListedCount != 1 {
				t.Errorf("%s: floor %v, listed %d; want 5 and 1", when, c.FloorPrice, c.ListedCount)
			}
			var cols struct {
				Items []collectionView `json:"items"`
			}
			decodeAs(t, m.do("GET", "/api/nft/collections?sort=floor", nil), &cols)
			if len(cols.Items) != 1 || cols.Items[0].FloorPrice == nil || cols.Items[0].FloorPrice.String() != "5" || cols.Items[0].ListedCount != 1 {
				t.Errorf("%s: collections list %+v", when, cols.Items)
			}
			m.do("POST", "/api/nft/buy/atomic/prepare", map[string]string{"cid": expiring}, bearer(buyer.tok)).wantProblem(t, 409, store.CodeConflict)
		}
		check("before the sweeper")
		// A sweep of the cheapest buys the live listing, not the expired one.
		prep := m.do("POST", "/api/nft/sweep/buy/prepare", map[string]any{"collectionId": m.col.ID, "count": 1, "maxTotal": "5"}, bearer(buyer.tok)).ok(t)
		if n, err := m.store.ExpireListings(context.Background(), 100); err != nil || n != 1 {
			t.Fatalf("sweeper archived %d listings: %v", n, err)
		}
		check("after the sweeper")
		if d := m.nft(nfts[0]); len(d.History) != 3 || d.History[0].Kind != store.EventDelisted {
			t.Errorf("history after expiry %+v, want delisted, listed, minted", d.History)
		}
		m.walletExecute("/api/nft/sweep/buy", prep, buyer.Party, buyer.tok).ok(t)
		if d := m.nft(nfts[2]); d.Owner != buyer.ID {
			t.Errorf("the sweep bought %+v", d.nftView)
		}
		// The seller can list the NFT whose listing expired again.
		m.list(seller, nfts[0], "2")
		if c := m.collection(); c.FloorPrice == nil || c.FloorPrice.String() != "2" || c.ListedCount != 1 {
			t.Errorf("relisted: floor %v, listed %d", c.FloorPrice, c.ListedCount)
		}
	})
}

func TestNFTRead_ListingAnNFTWhoseListingExpiredWithdrawsTheOldOne(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newMarket(t, b, collectionOpts{supply: 2, price: "0"})
		seller := m.funded("seller")
		nft := m.mintOf(seller, m.col.ID, 1)[0]
		old := m.listUntil(seller, nft, "3", m.clock.Now().Add(time.Minute))
		m.clock.Advance(2 * time.Minute)
		// The sweeper has not run: the NFT shows unlisted, so its owner can list it.
		cid := m.list(seller, nft, "4")
		d := m.nft(nft)
		if d.Listing == nil || d.Listing.CID != cid || d.Listing.Price.String() != "4" {
			t.Fatalf("relisted NFT %+v", d.nftView)
		}
		if l, err := m.store.ListingByCID(context.Background(), old); err != nil || l.Active() {
			t.Errorf("the expired listing is still active: %+v %v", l, err)
		}
		if c := m.collection(); c.ListedCount != 1 || c.FloorPrice == nil || c.FloorPrice.String() != "4" {
			t.Errorf("collection floor %v listed %d, want 4 and 1", c.FloorPrice, c.ListedCount)
		}
		if n, err := m.store.ExpireListings(context.Background(), 100); err != nil || n != 0 {
			t.Errorf("the sweeper found %d listings due: %v", n, err)
		}
	})
}

func TestNFTRead_DetailCarriesTraitsListingAndTheHundredLatestEventsNewestFirst(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newMarket(t, b, collectionOpts{supply: 8, price: "0", items: traitItems()})
		alice, bob := m.funded("alice"), m.funded("bob")
		cur := m.mintOf(alice, m.col.ID, 1)[0]
		first := cur
		owners := []*walletUser{alice, bob}
		// minted + 104 transfers + listed: 106 events.
		for i := range 104 {
			from, to := owners[i%2], owners[(i+1)%2]
			cur = m.pe(from, "/api/nft/transfer", map[string]string{"contractId": cur, "receiver": to.ID}).ok(t).str(t, "contractId")
		}
		cid := m.list(alice, cur, "7.25")
		d := m.nft(first)
		if d.ContractID != cur || d.Owner != alice.ID || d.Serial != 1 || d.Name != "Item 1" {
			t.Fatalf("detail %+v", d.nftView)
		}
		if !slices.Equal(d.Traits, []store.Trait{{Type: "Color", Value: "Red"}, {Type: "Hat", Value: "Cap"}}) {
			t.Errorf("traits %+v", d.Traits)
		}
		if d.Listing == nil || d.Listing.CID != cid || d.Listing.Seller != alice.ID || d.Listing.Price.String() != "7.25" || d.Listing.Currency != store.CC {
			t.Errorf("listing %+v", d.Listing)
		}
		if len(d.History) != 100 {
			t.Fatalf("%d history events, want the 100 latest", len(d.History))
		}
		if h := d.History[0]; h.Kind != store.EventListed || h.Price == nil || h.Price.String() != "7.25" {
			t.Errorf("newest event %+v, want listed at 7.25", h)
		}
		// Then transfers 104 back to 6, newest first, alternating direction.
		for k := 1; k < 100; k++ {
			i := 104 - k // the transfer's index
			from, to := owners[i%2], owners[(i+1)%2]
			h := d.History[k]
			if h.Kind != store.EventTransferred || h.From == nil || *h.From != from.ID || h.To == nil || *h.To != to.ID {
				t.Fatalf("event %d: %+v, want transfer %d from %s", k, h, i, from.ID)
			}
			if h.At > d.History[k-1].At {
				t.Fatalf("event %d at %d is later than the newer event %d", k, h.At, k-1)
			}
		}
		raw := m.do("GET", "/api/nft/token/"+first, nil).obj(t)
		for _, f := range []string{"contractId", "collectionId", "serial", "name", "image", "traits", "owner", "listing", "history"} {
			if _, ok := raw[f]; !ok {
				t.Errorf("detail has no %q", f)
			}
		}
		// A burned NFT's detail is 404, by any of its contract ids.
		m.pe(alice, "/api/nft/burn", map[string]string{"contractId": cur}).ok(t)
		m.do("GET", "/api/nft/token/"+cur, nil).wantProblem(t, 404, store.CodeNotFound)
		m.do("GET", "/api/nft/token/"+first, nil).wantProblem(t, 404, store.CodeNotFound)
	})
}

// recomputed is a collection's statistics worked out from its NFTs as the API lists them.
func recomputed(t *testing.T, m *market, colID string) (floor *store.Amount, listed, owners int) {
	t.Helper()
	seen := map[string]bool{}
	for _, it := range walk[nftView](t, m.testAPI, "/api/nft/collection/"+colID+"/nfts", 100) {
		seen[it.Owner] = true
		if it.Listing != nil {
			listed++
			if floor == nil || it.Listing.Price.Cmp(*floor) < 0 {
				p := it.Listing.Price
				floor = &p
			}
		}
	}
	return floor, listed, len(seen)
}

func TestNFTRead_CollectionStatsEqualARecomputationAndSortTheCollections(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newMarket(t, b, collectionOpts{supply: 6, price: "0"})
		m.clock.Advance(time.Second)
		birdsCol := m.addCollection(t, "birds", m.creator.ID, collectionOpts{supply: 6, price: "0"})
		m.clock.Advance(time.Second)
		catsCol := m.addCollection(t, "cats", m.creator.ID, collectionOpts{supply: 6, price: "0"})
		m.clock.Advance(time.Second)
		m.addCollection(t, "dogs", m.creator.ID, collectionOpts{supply: 6, price: "0", noPhase: true})
		alice, bob, carol := m.funded("alice"), m.funded("bob"), m.funded("carol")
		volume := map[string]store.Amount{"apes": store.Zero, "birds": store.Zero, "cats": store.Zero, "dogs": store.Zero}
		sell := func(slug string, seller, buyer *walletUser, nft, price string) {
			t.Helper()
			m.buy(buyer, m.list(seller, nft, price))
			volume[slug] = volume[slug].Add(store.MustAmount(price))
		}
		apes := m.mintOf(alice, m.col.ID, 4)
		birds := m.mintOf(bob, birdsCol.ID, 3)
		cats := m.mintOf(carol, catsCol.ID, 2)
		sell("apes", alice, bob, apes[0], "3")
		sell("apes", alice, carol, apes[1], "4.5")
		sell("birds", bob, alice, birds[0], "20")
		sell("cats", carol, alice, cats[0], "0.0000000001")
		m.list(alice, apes[2], "8")
		m.list(alice, apes[3], "2")
		m.list(bob, birds[1], "50")
		m.pe(bob, "/api/nft/burn", map[string]string{"contractId": birds[2]}).ok(t)

		cols := walk[collectionView](t, m.testAPI, "/api/nft/collections", 100)
		if len(cols) != 4 {
			t.Fatalf("%d collections, want 4", len(cols))
		}
		for _, c := range cols {
			floor, listed, owners := recomputed(t, m, c.ID)
			if (floor == nil) != (c.FloorPrice == nil) || (floor != nil && !floor.Equal(*c.FloorPrice)) || listed != c.ListedCount || owners != c.Owners {
				t.Errorf("%s: floor %v listed %d owners %d; recomputed %v, %d, %d", c.Slug, c.FloorPrice, c.ListedCount, c.Owners, floor, listed, owners)
			}
			if !c.Volume.Equal(volume[c.Slug]) {
				t.Errorf("%s: volume %s, want %s", c.Slug, c.Volume, volume[c.Slug])
			}
			var one collectionView
			decodeAs(t, m.do("GET", "/api/nft/slug/"+c.Slug, nil), &one)
			if one.ID != c.ID || one.ListedCount != c.ListedCount || !one.Volume.Equal(c.Volume) || one.Owners != c.Owners {
				t.Errorf("%s by slug %+v, in the list %+v", c.Slug, one, c)
			}
		}
		if c := colBySlug(cols, "birds"); c.Minted != 3 || c.Burned != 1 {
			t.Errorf("birds minted %d burned %d, want 3 and 1", c.Minted, c.Burned)
		}
		// Each sort, walked one collection per page.
		for _, s := range []struct {
			sort string
			want []string
		}{
			{"", []string{"dogs", "cats", "birds", "apes"}},
			{"newest", []string{"dogs", "cats", "birds", "apes"}},
			{"volume", []string{"birds", "apes", "cats", "dogs"}}, // 20, 7.5, 1e-10, 0
			{"floor", []string{"apes", "birds"}},                  // then cats and dogs, nothing listed, by id
		} {
			got := walk[collectionView](t, m.testAPI, "/api/nft/collections?sort="+s.sort, 1)
			slugs := make([]string, len(got))
			for i, c := range got {
				slugs[i] = c.Slug
			}
			want := s.want
			if s.sort == "floor" {
				rest := []collectionView{colBySlug(cols, "cats"), colBySlug(cols, "dogs")}
				slices.SortFunc(rest, func(a, b collectionView) int { return strings.Compare(a.ID, b.ID) })
				want = append(want, rest[0].Slug, rest[1].Slug)
			}
			if !slices.Equal(slugs, want) {
				t.Errorf("sort=%s: %v, want %v", s.sort, slugs, want)
			}
		}
	})
}

func colBySlug(cs []collectionView, slug string) collectionView {
	for _, c := range cs {
		if c.Slug == slug {
			return c
		}
	}
	return collectionView{}
}

func TestNFTMint_AcceptsTheCollectionsSlugAsWellAsItsID(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newMarket(t, b, collectionOpts{supply: 4, price: "1"})
		u := m.funded("minter")
		byID := m.mintOf(u, m.col.ID, 1)
		bySlug := m.pe(u, "/api/nft/mint/atomic", map[string]any{"collectionId": m.col.Slug}).ok(t)
		var out struct {
			ContractIDs []string `json:"contractIds"`
		}
		if err := json.Unmarshal(bySlug.body, &out); err != nil || len(out.ContractIDs) != 1 {
			t.Fatalf("mint by slug %s", bySlug.body)
		}
		if d := m.nft(out.ContractIDs[0]); d.Serial != 2 || d.CollectionID != m.col.ID || d.Owner != u.ID {
			t.Errorf("minted by slug %+v after %v", d.nftView, byID)
		}
		if got := amountOf(m.walletBalance(u), store.CC); got != "998" {
			t.Errorf("minter paid %s, want 998 left", got)
		}
	})
}

func TestNFTRead_CollectionsByFloorOrderAnExpiredFloorByTheLiveOne(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newMarket(t, b, collectionOpts{supply: 4, price: "0"})
		birds := m.addCollection(t, "birds", m.creator.ID, collectionOpts{supply: 4, price: "0"})
		cats := m.addCollection(t, "cats", m.creator.ID, collectionOpts{supply: 4, price: "0"})
		u := m.funded("seller")
		apes := m.mintOf(u, m.col.ID, 2)
		m.listUntil(u, apes[0], "1", m.clock.Now().Add(time.Minute)) // apes' floor until it expires
		m.list(u, apes[1], "8")
		m.list(u, m.mintOf(u, birds.ID, 1)[0], "5")
		m.list(u, m.mintOf(u, cats.ID, 1)[0], "9")
		order := func() []string {
			var slugs []string
			for _, c := range walk[collectionView](t, m.testAPI, "/api/nft/collections?sort=floor", 1) {
				slugs = append(slugs, fmt.Sprintf("%s@%v", c.Slug, c.FloorPrice))
			}
			return slugs
		}
		if got := order(); !slices.Equal(got, []string{"apes@1", "birds@5", "cats@9"}) {
			t.Fatalf("before expiry: %v", got)
		}
		m.clock.Advance(2 * time.Minute)
		if got := order(); !slices.Equal(got, []string{"birds@5", "apes@8", "cats@9"}) {
			t.Errorf("expired, before the sweeper: %v, want birds@5 apes@8 cats@9", got)
		}
		if _, err := m.store.ExpireListings(context.Background(), 100); err != nil {
			t.Fatal(err)
		}
		if got := order(); !slices.Equal(got, []string{"birds@5", "apes@8", "cats@9"}) {
			t.Errorf("after the sweeper: %v", got)
		}
	})
}
