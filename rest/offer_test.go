package rest

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/nftmeta"
	"marketd/store/storetest"
)

// The offer routes end to end: a trait offer made, listed where each list shows it, a listing
// that would cross it refused with the order to take, an accept that closes the seller's
// listing and pays from the offer, and the party checks of the token's lists.
func TestOffers_MakeListCrossAndAcceptOverHTTP(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newMarket(t, b, collectionOpts{price: "1", royaltyBps: 500, items: []store.ItemSpec{
			{Fields: nftmeta.Fields{Name: "a"}, Traits: []store.Trait{{Type: "Hat", Value: "Crown"}}},
			{Fields: nftmeta.Fields{Name: "b"}, Traits: []store.Trait{{Type: "Hat", Value: "Cap"}}},
			{Fields: nftmeta.Fields{Name: "c"}, Traits: []store.Trait{{Type: "Hat", Value: "Crown"}}},
		}, supply: 3})
		seller, maker := m.funded("seller"), m.funded("maker")
		nfts := m.mint(seller, 3)
		listing := m.list(seller, nfts[0], "9")
		expires := m.clock.Now().Add(time.Hour).Unix()

		crossed := m.do("POST", "/api/nft/offer/prepare", map[string]any{"collectionId": "apes", "price": "9", "expiresAt": expires}, bearer(maker.tok))
		crossed.wantProblem(t, http.StatusConflict, store.CodeCrossesListing)
		if c, ok := problemOf(t, crossed)["crossing"].(map[string]any); !ok || c["cid"] != listing || c["price"] != "9" {
			t.Errorf("crossing member: %s", crossed.body)
		}

		body := map[string]any{"collectionId": "apes", "traits": []map[string]any{{"type": "Hat", "values": []string{"Crown"}}}, "price": "5", "quantity": 2, "expiresAt": expires}
		offer := m.pe(maker, "/api/nft/offer", body).ok(t).str(t, "cid")

		var list struct {
			Items []offerView `json:"items"`
		}
		decodeAs(t, m.do("GET", "/api/nft/collection/apes/offers", nil).ok(t), &list)
		if len(list.Items) != 1 || list.Items[0].CID != offer || list.Items[0].Kind != store.OfferTrait || list.Items[0].Remaining != 2 {
			t.Fatalf("collection offers: %+v", list.Items)
		}
		for i, want := range []int{1, 0, 1} {
			decodeAs(t, m.do("GET", "/api/nft/token/"+nfts[i]+"/offers", nil).ok(t), &list)
			if len(list.Items) != want {
				t.Errorf("NFT %d: %d offers, want %d", i+1, len(list.Items), want)
			}
		}
		decodeAs(t, m.do("GET", "/api/nft/offers/received", nil, bearer(seller.tok)).ok(t), &list)
		if len(list.Items) != 1 {
			t.Errorf("seller's received offers: %+v", list.Items)
		}
		decodeAs(t, m.do("GET", "/api/nft/offers?maker="+url.QueryEscape(maker.ID), nil, bearer(maker.tok)).ok(t), &list)
		if len(list.Items) != 1 {
			t.Errorf("maker's offers: %+v", list.Items)
		}
		m.do("GET", "/api/nft/offers?maker="+url.QueryEscape(maker.ID), nil, bearer(seller.tok)).wantProblem(t, http.StatusForbidden, store.CodePartyMismatch)
		m.do("GET", "/api/nft/offers/received", nil).wantProblem(t, http.StatusUnauthorized, store.CodeUnauthenticated)

		r := m.do("POST", "/api/nft/list/prepare", map[string]any{"contractId": nfts[2], "price": "5"}, bearer(seller.tok))
		r.wantProblem(t, http.StatusConflict, store.CodeCrossesOffer)
		if c, ok := problemOf(t, r)["crossing"].(map[string]any); !ok || c["cid"] != offer || c["price"] != "5" {
			t.Errorf("crossing member: %s", r.body)
		}
		m.pe(seller, "/api/nft/offer/accept", map[string]any{"cid": offer, "contractIds": []string{nfts[1]}}).wantProblem(t, http.StatusConflict, store.CodeOfferMismatch)

		res := m.pe(seller, "/api/nft/offer/accept", map[string]any{"cid": offer, "contractIds": []string{nfts[0]}, "minProceeds": "4.5"}).ok(t)
		var receipt struct {
			ContractIDs []string         `json:"contractIds"`
			Settlement  store.Settlement `json:"settlement"`
			Remaining   int              `json:"remaining"`
		}
		decodeAs(t, res, &receipt)
		if len(receipt.ContractIDs) != 1 || receipt.Remaining != 1 || receipt.Settlement.Seller.Amount.String() != "4.625" {
			t.Fatalf("accept receipt: %s", res.body)
		}
		d := m.nft(receipt.ContractIDs[0])
		if d.Owner != maker.ID || d.Listing != nil || len(d.History) == 0 || d.History[0].Kind != store.EventOfferAccepted {
			t.Errorf("the sold NFT: owner %s listing %+v history %+v", d.Owner, d.Listing, d.History)
		}
		if c := m.collection(); c.ListedCount != 0 || c.FloorPrice != nil {
			t.Errorf("the collection after the accept closed its one listing: listed %d floor %v", c.ListedCount, c.FloorPrice)
		}
		m.pe(maker, "/api/nft/offer/cancel", map[string]any{"cids": []string{offer}}).ok(t)
		decodeAs(t, m.do("GET", "/api/nft/collection/apes/offers", nil).ok(t), &list)
		if len(list.Items) != 0 {
			t.Errorf("offers after the cancel: %+v", list.Items)
		}
	})
}

// A collection offer moves the collection's topOffer on every read of it.
func TestOffers_TopOfferFollowsTheBestCollectionOffer(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newMarket(t, b, collectionOpts{})
		a, c := m.funded("a"), m.funded("c")
		expires := m.clock.Now().Add(time.Hour).Unix()
		if got := m.collection().TopOffer; got != nil {
			t.Fatalf("topOffer with no offers: %v", got)
		}
		m.pe(a, "/api/nft/offer", map[string]any{"collectionId": m.col.ID, "price": "2", "expiresAt": expires}).ok(t)
		best := m.pe(c, "/api/nft/offer", map[string]any{"collectionId": m.col.ID, "price": "3.5", "expiresAt": expires}).ok(t).str(t, "cid")
		if got := m.collection().TopOffer; got == nil || got.String() != "3.5" {
			t.Fatalf("topOffer: %v, want 3.5", got)
		}
		m.pe(c, "/api/nft/offer/cancel", map[string]any{"cids": []string{best}}).ok(t)
		if got := m.collection().TopOffer; got == nil || got.String() != "2" {
			t.Fatalf("topOffer after the best was cancelled: %v, want 2", got)
		}
	})
}
