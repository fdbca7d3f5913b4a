package rest

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/nftmeta"
	"marketd/store/storetest"
)

// Every offer, activity and stats answer, success and refusal, as the document describes it.
func TestOpenAPI_RealOfferResponsesMatchTheDocument(t *testing.T) {
	doc := openAPIKinDoc(t)
	const (
		offerPrep   = "/api/nft/offer/prepare"
		offerExec   = "/api/nft/offer/execute"
		cancelPrep  = "/api/nft/offer/cancel/prepare"
		cancelExec  = "/api/nft/offer/cancel/execute"
		acceptPrep  = "/api/nft/offer/accept/prepare"
		acceptExec  = "/api/nft/offer/accept/execute"
		colOffers   = "/api/nft/collection/{id}/offers"
		nftOffers   = "/api/nft/token/{contractId}/offers"
		made        = "/api/nft/offers"
		received    = "/api/nft/offers/received"
		activity    = "/api/nft/collection/{id}/activity"
		stats       = "/api/nft/collection/{id}/stats"
		listPrep    = "/api/nft/list/prepare"
		nftDetail   = "/api/nft/token/{contractId}"
		collectionP = "/api/nft/slug/{slug}"
	)
	items := []store.ItemSpec{
		{Fields: nftmeta.Fields{Name: "a"}, Traits: []store.Trait{{Type: "Hat", Value: "Crown"}}},
		{Fields: nftmeta.Fields{Name: "b"}, Traits: []store.Trait{{Type: "Hat", Value: "Cap"}}},
		{Fields: nftmeta.Fields{Name: "c"}, Traits: []store.Trait{{Type: "Hat", Value: "Crown"}}},
	}
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newMarket(t, b, collectionOpts{royaltyBps: 500, supply: 4, price: "1", items: append(items, store.ItemSpec{Fields: nftmeta.Fields{Name: "d"}, Traits: []store.Trait{{Type: "Hat", Value: "Crown"}}})})
		f := &nftDocFlow{market: m, c: openAPIResponseChecker{t: t, doc: doc}}
		seller, maker := m.funded("seller"), m.funded("maker")
		nfts := m.mint(seller, 3)
		makers := m.mint(maker, 1)[0]
		expires := m.clock.Now().Add(time.Hour).Unix()
		col := m.col.ID
		at := func(tmpl, v string) string { return strings.NewReplacer("{id}", v, "{contractId}", v).Replace(tmpl) }

		listing := m.list(seller, nfts[1], "6")
		f.prepare(409, offerPrep, offerPrep, map[string]any{"collectionId": col, "price": "7", "expiresAt": expires}, maker) // crosses_listing
		f.prepare(400, offerPrep, offerPrep, map[string]any{"collectionId": col, "price": "0", "expiresAt": expires}, maker)
		f.prepare(400, offerPrep, offerPrep, map[string]any{"collectionId": col, "price": "1"}, maker)
		f.prepare(404, offerPrep, offerPrep, map[string]any{"collectionId": "nope", "price": "1", "expiresAt": expires}, maker)
		trait := f.run(offerPrep, offerPrep, offerExec, map[string]any{"collectionId": col, "traits": []map[string]any{{"type": "Hat", "values": []string{"Crown"}}},
			"price": "2", "quantity": 2, "expiresAt": expires}, maker).str(t, "cid")
		item := f.run(offerPrep, offerPrep, offerExec, map[string]any{"contractId": nfts[1], "price": "3", "expiresAt": expires}, maker).str(t, "cid")
		f.run(offerPrep, offerPrep, offerExec, map[string]any{"collectionId": col, "price": "1", "expiresAt": expires}, maker)

		f.get(200, colOffers, at(colOffers, col))
		f.get(200, nftOffers, at(nftOffers, nfts[0]))
		f.get(404, nftOffers, at(nftOffers, "00nope"))
		f.want(200, "GET", made, f.do("GET", made, nil, bearer(maker.tok)))
		f.want(403, "GET", made, f.do("GET", made+"?maker="+url.QueryEscape(maker.ID), nil, bearer(seller.tok)))
		f.want(200, "GET", received, f.do("GET", received, nil, bearer(seller.tok)))
		f.want(401, "GET", received, f.do("GET", received, nil))
		f.get(200, nftDetail, at(nftDetail, nfts[0]))
		f.get(200, collectionP, "/api/nft/slug/apes")
		f.prepare(409, listPrep, listPrep, map[string]any{"contractId": nfts[2], "price": "2"}, seller) // crosses_offer

		f.prepare(409, acceptPrep, acceptPrep, map[string]any{"cid": trait, "contractIds": []string{nfts[1]}}, seller) // offer_mismatch
		f.prepare(409, acceptPrep, acceptPrep, map[string]any{"cid": item, "contractIds": []string{nfts[1]}, "minProceeds": "3"}, seller)
		f.prepare(400, acceptPrep, acceptPrep, map[string]any{"cid": item}, seller)
		f.prepare(404, acceptPrep, acceptPrep, map[string]any{"cid": "00nope", "contractIds": []string{nfts[1]}}, seller)
		f.prepare(403, acceptPrep, acceptPrep, map[string]any{"cid": trait, "contractIds": []string{makers}}, seller)
		f.run(acceptPrep, acceptPrep, acceptExec, map[string]any{"cid": item, "contractIds": []string{nfts[1]}}, seller)
		_ = listing
		f.run(acceptPrep, acceptPrep, acceptExec, map[string]any{"cid": trait, "contractIds": []string{nfts[0], nfts[2]}}, seller)
		f.prepare(409, acceptPrep, acceptPrep, map[string]any{"cid": trait, "contractIds": []string{nfts[0]}}, seller) // offer_exhausted

		f.prepare(400, cancelPrep, cancelPrep, map[string]any{"cids": []string{}}, maker)
		f.prepare(404, cancelPrep, cancelPrep, map[string]any{"cids": []string{"00nope"}}, maker)
		f.prepare(409, cancelPrep, cancelPrep, map[string]any{"cids": []string{item}}, maker) // accepted in full
		page := f.want(200, "GET", made, f.do("GET", made, nil, bearer(maker.tok)))
		var open struct {
			Items []offerView `json:"items"`
		}
		decodeAs(t, page, &open)
		if len(open.Items) != 1 {
			t.Fatalf("maker's open offers: %s", page.body)
		}
		f.run(cancelPrep, cancelPrep, cancelExec, map[string]any{"cids": []string{open.Items[0].CID}}, maker)

		f.get(200, activity, at(activity, col))
		f.get(200, activity, at(activity, col)+"?kind=offer&kind=offer-accepted&limit=2")
		f.get(400, activity, at(activity, col)+"?kind=bought")
		f.get(404, activity, at(activity, "nope"))
		f.get(200, stats, at(stats, col))
		f.get(404, stats, at(stats, "nope"))
	})
}
