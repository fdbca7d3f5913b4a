package store_test

import (
	"context"
	"encoding/json"
	"testing"

	"marketd/store"
	"marketd/store/storetest"
)

// A batch of offers (PrepareOffers) is one signature over offers that each cross a listing as
// they would alone: a trait offer crosses the listings of the NFTs it matches only, at prepare
// and again at execute; the batch locks the sum of what its offers lock, and each is its own
// offer.
func TestOffers_ABatchIsOneSignatureOverOffersThatEachCrossAsAlone(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		m := openOfferMarket(t, b)
		if _, err := m.list(t, m.alice, 1, "8"); err != nil { // serial 1 has the Aura
			t.Fatal(err)
		}
		other := ""
		for _, v := range worldTraits["Hat"] {
			if v != traitsOf(1)["Hat"] {
				other = v
				break
			}
		}
		seven, qty := 7, 2
		terms := func(more ...store.OfferTerms) []store.OfferTerms {
			base := []store.OfferTerms{
				{Price: "5", Quantity: &qty},
				{Serial: &seven, Price: "6"},
				{Traits: []store.TraitMatch{{Type: "Hat", Values: []string{other}}}, Price: "8.5"}, // over the listing, of an NFT it does not match
			}
			out := append(base, more...)
			for i := range out {
				out[i].CollectionID, out[i].ExpiresAt = m.col.ID, m.expiry()
			}
			return out
		}
		_, err := m.s.PrepareOffers(ctx, m.carol.ID, terms(store.OfferTerms{Traits: []store.TraitMatch{{Type: "Aura", Values: []string{"Glow"}}}, Price: "9"}))
		wantCode(t, "a batch with a trait offer over a listing it matches", err, store.CodeCrossesListing)

		prep, err := m.s.PrepareOffers(ctx, m.carol.ID, terms())
		if err != nil {
			t.Fatal(err)
		}
		r, err := m.carol.Execute(m.s, store.KindNFTOffers, prep)
		if err != nil {
			t.Fatal(err)
		}
		var res store.OffersResult
		if err := json.Unmarshal(r, &res); err != nil || len(res.CIDs) != 3 {
			t.Fatalf("receipt %s: %v", r, err)
		}
		for i, kind := range []string{store.OfferCollection, store.OfferItem, store.OfferTrait} {
			o, err := m.s.OfferByID(ctx, res.CIDs[i])
			if err != nil || o.Kind != kind || o.Maker != m.carol.ID {
				t.Errorf("offer %d: %+v, %v; want a %s offer of carol's", i, o, err, kind)
			}
		}
		m.wantBalance(t, "carol after her batch", m.carol, "975.5", "24.5")

		// At execute: a listing under an offer of the batch came since the prepare.
		prep, err = m.s.PrepareOffers(ctx, m.dave.ID, []store.OfferTerms{{CollectionID: m.col.ID, Price: "7.9", ExpiresAt: m.expiry()}})
		if err != nil {
			t.Fatal(err)
		}
		unmatched := 8 // a serial of bob's carol's trait offer does not take
		for traitsOf(unmatched)["Hat"] == other {
			unmatched++
		}
		if _, err := m.list(t, m.bob, unmatched, "7.8"); err != nil {
			t.Fatal(err)
		}
		_, err = m.dave.Execute(m.s, store.KindNFTOffers, prep)
		wantCode(t, "a batch executed after a cheaper listing came", err, store.CodeCrossesListing)
		m.wantBalance(t, "dave after the refused batch", m.dave, "1000", "0")
	})
}
