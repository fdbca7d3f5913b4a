package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// The activity feed: newest first, offers' events beside the NFTs', filtered by kind, and a
// page read with a cursor skips and repeats nothing while events are added.
func TestActivity_NewestFirstByKindAndStableWhileEventsAreAdded(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		m := openOfferMarket(t, b)
		item := m.offer(t, m.carol, store.OfferTerms{ContractID: m.nfts[3], Price: "2"})
		whole := m.offer(t, m.dave, store.OfferTerms{Price: "1.5"})
		if _, err := m.list(t, m.alice, 1, "9"); err != nil {
			t.Fatal(err)
		}
		if _, err := m.accept(m.alice, item, 3); err != nil {
			t.Fatal(err)
		}
		if err := m.cancel(t, m.dave, whole); err != nil {
			t.Fatal(err)
		}
		all, err := m.s.CollectionActivity(ctx, "apes", nil, store.PageRequest{Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, e := range all.Items {
			kinds = append(kinds, e.Kind)
		}
		if want := []string{store.EventOfferCancelled, store.EventOfferAccepted, store.EventListed, store.EventOffer, store.EventOffer}; !slices.Equal(kinds, want) {
			t.Fatalf("newest five kinds %v, want %v", kinds, want)
		}
		if e := all.Items[1]; e.Serial == nil || *e.Serial != 3 || e.OfferCID == nil || *e.OfferCID != item || *e.From != m.alice.ID || *e.To != m.carol.ID || e.Price.String() != "2" {
			t.Errorf("the accept's event: %+v", e)
		}
		if e := all.Items[3]; e.Serial != nil || e.OfferCID == nil || *e.OfferCID != whole {
			t.Errorf("the collection offer's event: %+v", e)
		}
		if e := all.Items[4]; e.Serial == nil || *e.Serial != 3 {
			t.Errorf("the item offer's event names its NFT: %+v", e)
		}
		offers, err := m.s.CollectionActivity(ctx, m.col.ID, []string{store.EventOffer, store.EventOfferCancelled}, store.PageRequest{})
		if err != nil || len(offers.Items) != 3 {
			t.Fatalf("offer kinds: %+v %v", offers.Items, err)
		}
		_, err = m.s.CollectionActivity(ctx, m.col.ID, []string{"bought"}, store.PageRequest{})
		wantCode(t, "an unknown kind", err, store.CodeInvalidRequest)

		// Page through everything two at a time while more events commit.
		var seen []string
		page, err := m.s.CollectionActivity(ctx, m.col.ID, nil, store.PageRequest{Limit: 2})
		for n := 0; ; n++ {
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page.Items {
				seen = append(seen, e.UpdateID+"/"+e.Kind+fmt.Sprint(e.Serial))
			}
			if page.Cursor == "" {
				break
			}
			if n < 3 {
				m.offer(t, m.carol, store.OfferTerms{Price: fmt.Sprintf("0.%d", n+1)})
			}
			page, err = m.s.CollectionActivity(ctx, m.col.ID, nil, store.PageRequest{Limit: 2, Cursor: page.Cursor})
		}
		total, err := m.s.CollectionActivity(ctx, m.col.ID, nil, store.PageRequest{Limit: store.MaxPageSize})
		if err != nil {
			t.Fatal(err)
		}
		if want := len(total.Items) - 3; len(seen) != want || len(slices.Compact(slices.Sorted(slices.Values(seen)))) != len(seen) {
			t.Fatalf("paged %d events (%d distinct), want the %d there were when it began", len(seen), len(slices.Compact(slices.Sorted(slices.Values(seen)))), want)
		}
	})
}

// A collection's figures by day and interval follow its sales across days, and the trait
// figures of the NFT index are those of SQL.
func TestStats_DailyIntervalAndTraitFigures(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		m := openOfferMarket(t, b)
		m.carol.Tap(t, m.s, store.CC, "1000")
		// Day 0: a listing at 8 (the floor), a sale of it; a listing at 10 left as the floor.
		buy := func(serial int, price string) {
			t.Helper()
			cid, err := m.list(t, m.owner[serial], serial, price)
			if err != nil {
				t.Fatal(err)
			}
			prep, err := m.s.PrepareBuy(ctx, m.carol.ID, cid)
			if err != nil {
				t.Fatal(err)
			}
			m.carol.MustExecute(t, m.s, store.KindNFTBuy, prep)
		}
		buy(1, "8")
		if _, err := m.list(t, m.alice, 2, "10"); err != nil {
			t.Fatal(err)
		}
		m.clock.Advance(24 * time.Hour)
		// Day 1: two NFTs sold into one offer at 4 each; the floor falls to 5.
		q := 2
		offer := m.offer(t, m.dave, store.OfferTerms{Price: "4", Quantity: &q})
		if _, err := m.accept(m.bob, offer, 7, 8); err != nil {
			t.Fatal(err)
		}
		if _, err := m.list(t, m.bob, 9, "5"); err != nil {
			t.Fatal(err)
		}
		st, err := m.s.Stats(ctx, "apes")
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Daily) != 30 {
			t.Fatalf("%d days", len(st.Daily))
		}
		today, yesterday := st.Daily[29], st.Daily[28]
		if today.Sales != 2 || today.Volume.String() != "8" || today.FloorPrice.String() != "5" ||
			yesterday.Sales != 1 || yesterday.Volume.String() != "8" || yesterday.FloorPrice.String() != "10" || st.Daily[27].FloorPrice != nil {
			t.Fatalf("daily figures: yesterday %+v, today %+v, the day before %+v", yesterday, today, st.Daily[27])
		}
		if want := time.Unix(m.clock.Now().Unix()/86400*86400, 0).UTC().Format(time.DateOnly); today.Day != want {
			t.Errorf("today is %s, want %s", today.Day, want)
		}
		d1, d7, all := st.Intervals["1d"], st.Intervals["7d"], st.Intervals["all"]
		if d1.Sales != 2 || d1.Volume.String() != "8" || d1.AveragePrice.String() != "4" || d1.FloorChange == nil || *d1.FloorChange != "-0.5" {
			t.Errorf("1d: %+v (floor change %v)", d1, d1.FloorChange)
		}
		if d7.Sales != 3 || d7.Volume.String() != "16" || d7.FloorChange != nil {
			t.Errorf("7d: %+v (no floor before the window: no change)", d7)
		}
		if all.Sales != 3 || all.Volume.String() != "16" || all.AveragePrice.String() != "5.3333333333" {
			t.Errorf("all: %+v", all)
		}
		if st.FloorPrice.String() != "5" || st.ListedCount != 2 || st.Supply != 12 {
			t.Errorf("now: floor %v listed %d supply %d", st.FloorPrice, st.ListedCount, st.Supply)
		}
		indexed, err := m.s.IndexedTraitStats(ctx, m.col.ID)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := m.s.ReferenceTraitStats(ctx, m.col.ID)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(indexed) != fmt.Sprint(ref) || len(ref) == 0 {
			t.Fatalf("trait figures: index %v, SQL %v", indexed, ref)
		}
		counted := 0
		for _, tr := range ref {
			if tr.Type == "Hat" {
				counted += tr.Count
			}
		}
		if counted != 12 {
			t.Errorf("Hat values count %d NFTs, want 12", counted)
		}
	})
}
