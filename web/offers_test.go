package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/admin"
	"marketd/store/nftmeta"
	"marketd/store/storetest"
)

// offerBook is a CC collection "apes" of 8 NFTs (serials 1 to 4 have the trait Hat: Crown),
// alice holding serials 1 to 4, and a book of five offers (made a minute apart from 12:00) in
// every state the console shows:
//   - carol's item offer on #1 at 5 CC, which alice filled (filled);
//   - carol's collection offer of 3 at 2 CC, of which alice sold #2 into it (open, 2 of 3 left);
//   - dave's trait offer on Hat: Crown at 3 CC (open);
//   - dave's collection offer at 1 CC, cancelled (cancelled);
//   - dave's collection offer at 1.5 CC that ran past its expiry and was released (expired).
type offerBook struct {
	col                    *store.Collection
	alice, carol, dave     *storetest.Party
	filled, partial, trait string // offer ids
	cancelled, expired     string
	accepted               []string // the update ids of alice's two accepts
}

func newOfferBook(t *testing.T, e *consoleEnv) *offerBook {
	t.Helper()
	ctx := context.Background()
	s := e.store
	creator := storetest.Onboard(t, s, "creator")
	ob := &offerBook{alice: storetest.Onboard(t, s, "alice"), carol: storetest.Onboard(t, s, "carol"), dave: storetest.Onboard(t, s, "dave")}
	ob.carol.Tap(t, s, store.CC, "100")
	ob.dave.Tap(t, s, store.CC, "100")
	items := make([]store.ItemSpec, 8)
	for i := range items {
		hat := "Cap"
		if i < 4 {
			hat = "Crown"
		}
		items[i] = store.ItemSpec{Fields: nftmeta.Fields{Name: fmt.Sprintf("Ape #%d", i+1), Image: "https://img.example/ape.png"}, Traits: []store.Trait{{Type: "Hat", Value: hat}}}
	}
	col, err := s.CreateCollection(ctx, store.CollectionSpec{Slug: "apes", Name: "Apes", Creator: creator.ID, Currency: store.CC, RoyaltyBps: 500, Supply: 8, Items: items})
	if err != nil {
		t.Fatal(err)
	}
	ob.col = col
	now := e.clock.Now()
	if _, err := s.AddPhase(ctx, store.PhaseSpec{Collection: col.ID, Name: "free", Price: "0", Start: now.Add(-time.Hour), End: now.Add(time.Hour), PerPartyLimit: 4}); err != nil {
		t.Fatal(err)
	}
	prep, err := s.PrepareMint(ctx, ob.alice.ID, col.ID, 4)
	if err != nil {
		t.Fatal(err)
	}
	var minted struct {
		ContractIDs []string `json:"contractIds"`
	}
	if err := json.Unmarshal(ob.alice.MustExecute(t, s, store.KindNFTMint, prep), &minted); err != nil {
		t.Fatal(err)
	}
	day := now.Add(24 * time.Hour).Unix()
	one, three := 1, 3
	offer := func(p *storetest.Party, terms store.OfferTerms) string {
		t.Helper()
		terms.CollectionID = col.ID
		prep, err := s.PrepareOffer(ctx, p.ID, terms)
		if err != nil {
			t.Fatalf("offer %+v: %v", terms, err)
		}
		var res struct{ CID string }
		if err := json.Unmarshal(p.MustExecute(t, s, store.KindNFTOffer, prep), &res); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Minute) // one offer a minute, so the list's order is the order made
		return res.CID
	}
	accept := func(offer, nft string) {
		t.Helper()
		prep, err := s.PrepareOfferAccept(ctx, ob.alice.ID, store.OfferAcceptance{CID: offer, ContractIDs: []string{nft}})
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			UpdateID string `json:"updateId"`
		}
		if err := json.Unmarshal(ob.alice.MustExecute(t, s, store.KindNFTOfferAccept, prep), &res); err != nil || res.UpdateID == "" {
			t.Fatalf("accept's receipt: %v", err)
		}
		ob.accepted = append(ob.accepted, res.UpdateID)
	}
	ob.filled = offer(ob.carol, store.OfferTerms{Serial: &one, Price: "5", ExpiresAt: day})
	ob.partial = offer(ob.carol, store.OfferTerms{Quantity: &three, Price: "2", ExpiresAt: day})
	ob.trait = offer(ob.dave, store.OfferTerms{Traits: []store.TraitMatch{{Type: "Hat", Values: []string{"Crown"}}}, Price: "3", ExpiresAt: day})
	ob.cancelled = offer(ob.dave, store.OfferTerms{Price: "1", ExpiresAt: day})
	ob.expired = offer(ob.dave, store.OfferTerms{Price: "1.5", ExpiresAt: now.Add(time.Hour).Unix()})
	prep, err = s.PrepareOfferCancel(ctx, ob.dave.ID, []string{ob.cancelled})
	if err != nil {
		t.Fatal(err)
	}
	ob.dave.MustExecute(t, s, store.KindNFTOfferCancel, prep)
	// Trait offer's price (3) is above the collection offer's (2): #1 goes to its item offer,
	// #2 into the collection offer, whose remainder stays open.
	accept(ob.filled, minted.ContractIDs[0])
	accept(ob.partial, minted.ContractIDs[1])
	e.clock.Advance(2 * time.Hour)
	if n, err := s.ExpireOffers(ctx, 10); err != nil || n != 1 {
		t.Fatalf("expire offers: %d %v, want 1", n, err)
	}
	return ob
}

// offerConsole is a console over an offer book, with a viewer signed in.
func offerConsole(t *testing.T, b storetest.Backend) (*consoleEnv, *offerBook, *browserless) {
	t.Helper()
	e := newConsoleEnv(t, b)
	e.user("watcher", admin.RoleViewer)
	ob := newOfferBook(t, e)
	c := e.client()
	c.mustLogin("watcher")
	return e, ob, c
}

// offerRows are the offer ids of a page's offer rows with the state each shows, in order.
func offerRows(body string) []string {
	var rows []string
	for _, part := range strings.Split(body, `<tr class="offer" data-offer="`)[1:] {
		id, rest, _ := strings.Cut(part, `"`)
		state := between(rest, `<span class="pill`, `</span>`)
		rows = append(rows, id+" "+state[strings.Index(state, ">")+1:])
	}
	return rows
}

func TestOffers_ListFiltersByCollectionMakerKindAndState(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		e, ob, c := offerConsole(t, b)
		filled, partial, trait := ob.filled+" filled", ob.partial+" open", ob.trait+" open"
		cancelled, expired := ob.cancelled+" cancelled", ob.expired+" expired"
		for _, tc := range []struct {
			name, query string
			want        []string // newest made first
		}{
			{"all", "", []string{expired, cancelled, trait, partial, filled}},
			{"by collection id", "collection=" + ob.col.ID, []string{expired, cancelled, trait, partial, filled}},
			{"by collection slug", "collection=apes", []string{expired, cancelled, trait, partial, filled}},
			{"another collection", "collection=nosuch", nil},
			{"by maker", "maker=" + url.QueryEscape(ob.carol.ID), []string{partial, filled}},
			{"by kind", "kind=collection", []string{expired, cancelled, partial}},
			{"trait offers", "kind=trait", []string{trait}},
			{"open", "state=open", []string{trait, partial}},
			{"closed", "state=closed", []string{expired, cancelled, filled}},
			{"a maker's closed collection offers", "kind=collection&state=closed&maker=" + url.QueryEscape(ob.dave.ID), []string{expired, cancelled}},
		} {
			p := c.get("/admin/offers?" + tc.query)
			if got := offerRows(p.body); p.status != http.StatusOK || strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("%s: %d with rows\n%q\nwant\n%q", tc.name, p.status, got, tc.want)
			}
		}
		p := c.get("/admin/offers?maker=" + url.QueryEscape(ob.carol.ID) + "&state=open")
		if !strings.Contains(p.body, "2 of 3") || !strings.Contains(p.body, "4.0000000000") && !strings.Contains(p.body, ">4<") {
			t.Errorf("the partly filled offer does not show 2 of 3 left, locking 4 CC:\n%s", between(p.body, "<table", "</table>"))
		}
		if p := c.get("/admin/offers?kind=trait"); !strings.Contains(p.body, "Hat: Crown") {
			t.Errorf("the trait offer does not say what it takes")
		}
		for _, q := range []string{"kind=bundle", "state=sideways", "after=forged"} {
			if p := c.get("/admin/offers?" + q); p.status != http.StatusBadRequest {
				t.Errorf("%s: %d, want 400", q, p.status)
			}
		}
		// Keyset pages both ways, and a cursor of one filter is refused by another.
		ctx := context.Background()
		first, err := admin.New(e.store).Offers(ctx, admin.OfferFilter{}, store.PageRequest{Limit: 2})
		if err != nil || len(first.Items) != 2 || first.Cursor == "" {
			t.Fatalf("first page: %d %v", len(first.Items), err)
		}
		second, err := admin.New(e.store).Offers(ctx, admin.OfferFilter{}, store.PageRequest{Limit: 2, Cursor: first.Cursor})
		if err != nil || len(second.Items) != 2 || second.Items[0].OfferID != ob.trait || second.Items[1].OfferID != ob.partial {
			t.Fatalf("second page: %v %v", second.Items, err)
		}
		back, err := admin.New(e.store).Offers(ctx, admin.OfferFilter{}, store.PageRequest{Limit: 2, Cursor: second.Cursor, Backward: true})
		if err != nil || len(back.Items) != 2 || back.Items[0].OfferID != ob.cancelled || back.Items[1].OfferID != ob.trait {
			t.Fatalf("back from the second page's end: %v %v", back.Items, err)
		}
		if _, err := admin.New(e.store).Offers(ctx, admin.OfferFilter{State: "open"}, store.PageRequest{Limit: 2, Cursor: first.Cursor}); store.ErrorCode(err) != store.CodeInvalidCursor {
			t.Errorf("a cursor of another filter: %v, want invalid_cursor", err)
		}
	})
}

func TestParty_ShowsItsOpenOffersAndItsAccepts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		e, ob, c := offerConsole(t, b)
		party := func(p *storetest.Party) (offers []string, accepts string) {
			t.Helper()
			pg := c.get("/admin/parties/" + url.PathEscape(p.ID))
			if pg.status != http.StatusOK {
				t.Fatalf("%s's page: %d", p.ID, pg.status)
			}
			return offerRows(between(pg.body, `id="party-offers"`, `</section>`)), between(pg.body, "<h2>Offers accepted</h2>", "</table>")
		}
		// carol's open offer is the rest of her collection offer; her page shows both NFTs she
		// bought through her offers, from alice.
		offers, accepts := party(ob.carol)
		if strings.Join(offers, ",") != ob.partial+" open" {
			t.Errorf("carol's open offers: %q, want only %s", offers, ob.partial)
		}
		if strings.Count(accepts, "bought through its offer") != 2 || strings.Count(accepts, `title="`+ob.alice.ID+`"`) != 2 || strings.Contains(accepts, "sold into") {
			t.Errorf("carol's accepts:\n%s", accepts)
		}
		// alice made no offer; she sold #1 at 5 CC and #2 at 2 CC into carol's.
		offers, accepts = party(ob.alice)
		if len(offers) != 0 {
			t.Errorf("alice's open offers: %q, want none", offers)
		}
		if strings.Count(accepts, "sold into an offer") != 2 || !strings.Contains(accepts, ">#1<") || !strings.Contains(accepts, ">#2<") || strings.Count(accepts, `title="`+ob.carol.ID+`"`) != 2 {
			t.Errorf("alice's accepts:\n%s", accepts)
		}
		for _, u := range ob.accepted {
			if !strings.Contains(accepts, u) {
				t.Errorf("alice's accept %s missing", u)
			}
		}
		// dave's only open offer is the trait offer; he accepted nothing and nothing of his.
		offers, accepts = party(ob.dave)
		if strings.Join(offers, ",") != ob.trait+" open" || !strings.Contains(accepts, "No NFT sold into an offer") {
			t.Errorf("dave's page: offers %q, accepts\n%s", offers, accepts)
		}
		pg := c.get("/admin/parties/" + url.PathEscape(ob.dave.ID))
		if !strings.Contains(pg.body, `href="/admin/offers?maker=`+url.QueryEscape(ob.dave.ID)+`"`) {
			t.Errorf("dave's page does not link to all of his offers")
		}
		// A party's accepts page by keyset, one side's index walk merged with the other's:
		// alice's two, newest first, one a page, and back.
		ctx := context.Background()
		first, err := e.store.OfferAccepts(ctx, ob.alice.ID, store.PageRequest{Limit: 1})
		if err != nil || len(first.Items) != 1 || first.Items[0].UpdateID != ob.accepted[1] || first.Cursor == "" {
			t.Fatalf("alice's first accept: %+v %v", first.Items, err)
		}
		second, err := e.store.OfferAccepts(ctx, ob.alice.ID, store.PageRequest{Limit: 1, Cursor: first.Cursor, ItemCursors: true})
		if err != nil || len(second.Items) != 1 || second.Items[0].UpdateID != ob.accepted[0] || second.Cursor != "" {
			t.Fatalf("alice's second accept: %+v %q %v", second.Items, second.Cursor, err)
		}
		back, err := e.store.OfferAccepts(ctx, ob.alice.ID, store.PageRequest{Limit: 5, Cursor: second.ItemCursors[0], Backward: true})
		if err != nil || len(back.Items) != 1 || back.Items[0].UpdateID != ob.accepted[1] {
			t.Fatalf("back from alice's second accept: %+v %v", back.Items, err)
		}
		// Of his 100 CC, his open trait offer locks 3; the cancelled and expired ones gave theirs back.
		if cc := between(pg.body, "<td>CC</td>", "</tr>"); !strings.HasPrefix(cc, `<td>CC</td><td class="num">97</td><td class="num">3</td>`) {
			t.Errorf("dave's CC balance row: %s, want 97 spendable and 3 locked", cc)
		}
	})
}

func TestMarket_SalesChartCountsAcceptsAsSales(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		e, _, c := offerConsole(t, b) // two accepts at 12:00, the clock now at 14:00
		sales, err := admin.New(e.store).SalesPerHour(context.Background(), 24)
		if err != nil {
			t.Fatal(err)
		}
		if sales.Count[21] != 2 || sales.Accepts[21] != 2 || total(sales.Count) != 2 || sales.Volume[store.CC][21] != 7 {
			t.Fatalf("sales at 12:00: %d (%d into offers), %v CC; want 2 sales into offers for 7 CC", sales.Count[21], sales.Accepts[21], sales.Volume[store.CC][21])
		}
		p := c.get("/admin/")
		tile := between(p.body, `id="tile-sales"`, "</div>")
		if !strings.Contains(tile, `<span class="figure">2</span> NFT sales`) || !strings.Contains(tile, `<span id="sales-accepts">2</span> into offers`) {
			t.Errorf("the sales tile: %s", tile)
		}
		if !strings.Contains(p.body, `data-label="12:00" data-series="sales" data-value="2"`) {
			t.Errorf("the sales chart has no bar of 2 sales at 12:00")
		}
	})
}

func total(xs []int64) (n int64) {
	for _, x := range xs {
		n += x
	}
	return n
}
