package rest

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/nftmeta"
	"marketd/store/storetest"
)

// nftDocFlow drives the NFT endpoints of one market and checks every answer against the
// document and the status the test expects.
type nftDocFlow struct {
	*market
	c openAPIResponseChecker
}

// want checks r against the document for method path and fails unless its status is status.
func (f *nftDocFlow) want(status int, method, path string, r *testResponse) *testResponse {
	f.t.Helper()
	if method == "POST" && strings.HasSuffix(path, "/prepare") {
		f.c.checkPrepared(method, path, r)
	} else {
		f.c.check(method, path, r)
	}
	if r.status != status {
		f.t.Errorf("%s %s answered %d, want %d: %s", method, path, r.status, status, r.body)
	}
	return r
}

// get reads path (the documented template is tmpl) and wants status.
func (f *nftDocFlow) get(status int, tmpl, path string) *testResponse {
	f.t.Helper()
	return f.want(status, "GET", tmpl, f.do("GET", path, nil))
}

// prepare posts body to the prepare endpoint tmpl (at path) as u and wants status.
func (f *nftDocFlow) prepare(status int, tmpl, path string, body any, u *walletUser) *testResponse {
	f.t.Helper()
	return f.want(status, "POST", tmpl, f.do("POST", path, body, bearer(u.tok)))
}

// execute signs prep as signer and posts it to the execute endpoint path with tok, wanting status.
func (f *nftDocFlow) execute(status int, path string, prep *testResponse, signer *walletUser, tok string) *testResponse {
	f.t.Helper()
	hash := prep.ok(f.t).str(f.t, "preparedTransactionHash")
	raw, _ := base64.StdEncoding.DecodeString(hash)
	r := f.do("POST", path, map[string]string{"preparedTransactionHash": hash, "signature": signer.SignBase64(raw)}, bearer(tok))
	return f.want(status, "POST", path, r)
}

// run prepares and executes as u, checking both, and returns the receipt.
func (f *nftDocFlow) run(tmpl, path, exec string, body any, u *walletUser) *testResponse {
	f.t.Helper()
	prep := f.prepare(http.StatusOK, tmpl, path, body, u)
	if prep.status != http.StatusOK {
		f.t.FailNow()
	}
	return f.execute(http.StatusOK, exec, prep, u, u.tok)
}

func strs(r *testResponse, t testing.TB, field string) []string {
	t.Helper()
	raw, _ := r.obj(t)[field].([]any)
	out := make([]string, len(raw))
	for i, v := range raw {
		out[i], _ = v.(string)
	}
	return out
}

func TestOpenAPI_RealNFTResponsesMatchTheDocument(t *testing.T) {
	doc := openAPIKinDoc(t)
	const (
		collections = "/api/nft/collections"
		bySlug      = "/api/nft/slug/{slug}"
		nfts        = "/api/nft/collection/{id}/nfts"
		token       = "/api/nft/token/{contractId}"
		mintPrep    = "/api/nft/mint/atomic/prepare"
		mintExec    = "/api/nft/mint/atomic/execute"
		batchPrep   = "/api/nft/mint/batch/atomic/prepare"
		batchExec   = "/api/nft/mint/batch/atomic/execute"
		listPrep    = "/api/nft/list/prepare"
		listExec    = "/api/nft/list/execute"
		listsPrep   = "/api/nft/list/batch/atomic/prepare"
		listsExec   = "/api/nft/list/batch/atomic/execute"
		cancelPrep  = "/api/nft/list/{cid}/cancel/prepare"
		cancelExec  = "/api/nft/list/cancel/execute"
		cancelsPrep = "/api/nft/listing/batch/cancel/prepare"
		cancelsExec = "/api/nft/listing/batch/cancel/execute"
		buyPrep     = "/api/nft/buy/atomic/prepare"
		buyExec     = "/api/nft/buy/atomic/execute"
		sweepPrep   = "/api/nft/sweep/buy/prepare"
		sweepExec   = "/api/nft/sweep/buy/execute"
		movePrep    = "/api/nft/transfer/prepare"
		moveExec    = "/api/nft/transfer/execute"
		burnPrep    = "/api/nft/burn/prepare"
		burnExec    = "/api/nft/burn/execute"
	)
	furs := []string{"Gold", "Red", "Blue"}
	items := make([]store.ItemSpec, 12)
	for i := range items {
		items[i] = store.ItemSpec{Fields: nftmeta.Fields{Name: fmt.Sprintf("Ape #%d", i+1), Image: fmt.Sprintf("https://img.example/apes/%d.png", i+1)},
			Traits: []store.Trait{{Type: "Fur", Value: furs[i%3]}, {Type: "Eyes", Value: []string{"Laser", "Sleepy"}[i%2]}}}
	}
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newMarket(t, b, collectionOpts{royaltyBps: 500, supply: 12, price: "1.5", perParty: 8, items: items})
		f := &nftDocFlow{market: m, c: openAPIResponseChecker{t: t, doc: doc}}
		alice, bob, carol := m.funded("alice"), m.funded("bob"), m.funded("carol")
		dave := m.walletUser("dave") // no money, no preapproval
		col := m.col.ID
		cidPath := func(cid string) string { return strings.Replace(cancelPrep, "{cid}", cid, 1) }
		free := m.addCollection(t, "free", m.creator.ID, collectionOpts{supply: 3, price: "0"})
		closed := m.addCollection(t, "closed", m.creator.ID, collectionOpts{noPhase: true})
		vip := m.addCollection(t, "vip", m.creator.ID, collectionOpts{allow: []string{bob.ID}})

		// Mint: one, a replay, a batch, a free mint, and the refusals.
		p1 := f.prepare(200, mintPrep, mintPrep, map[string]any{"collectionId": col}, alice)
		first := f.execute(200, mintExec, p1, alice, alice.tok)
		f.execute(200, mintExec, p1, alice, alice.tok)
		a1 := strs(first, t, "contractIds")[0]
		aliceNFTs := strs(f.run(batchPrep, batchPrep, batchExec, map[string]any{"collectionId": col, "quantity": 4}, alice), t, "contractIds")
		bobNFT := strs(f.run(mintPrep, mintPrep, mintExec, map[string]any{"collectionId": col}, bob), t, "contractIds")[0]
		f.run(mintPrep, mintPrep, mintExec, map[string]any{"collectionId": free.ID}, dave)
		f.prepare(400, mintPrep, mintPrep, map[string]any{"collectionId": col, "quantity": 2}, alice)
		f.prepare(400, mintPrep, mintPrep, `{"collectionId": 7}`, alice)
		f.prepare(400, batchPrep, batchPrep, map[string]any{"collectionId": col, "quantity": store.MaxBatch + 1}, alice)
		f.prepare(400, batchPrep, batchPrep, map[string]any{"collectionId": col}, alice)
		f.prepare(404, mintPrep, mintPrep, map[string]any{"collectionId": "col_00000000000000000000"}, alice)
		f.prepare(409, mintPrep, mintPrep, map[string]any{"collectionId": closed.ID}, alice)
		f.prepare(409, batchPrep, batchPrep, map[string]any{"collectionId": col, "quantity": 4}, alice) // over the per-party limit of 8
		f.prepare(409, mintPrep, mintPrep, map[string]any{"collectionId": col}, dave)                   // insufficient_funds
		f.prepare(403, mintPrep, mintPrep, map[string]any{"collectionId": vip.ID}, alice)               // not_allowlisted
		f.want(401, "POST", mintPrep, f.do("POST", mintPrep, map[string]any{"collectionId": col}))
		f.want(415, "POST", mintPrep, f.do("POST", mintPrep, "<x/>", bearer(alice.tok), withHeader("Content-Type", "text/xml")))
		f.want(413, "POST", mintPrep, f.do("POST", mintPrep, `{"collectionId": "`+strings.Repeat("c", maxBody)+`"}`, bearer(alice.tok)))
		// Execute refusals: another endpoint's hash, a wrong signer, another token, a bad body.
		tap := f.do("POST", "/api/wallet/tap/prepare", map[string]string{"instrument": "CC", "amount": "1"}, bearer(alice.tok)).ok(t)
		f.execute(404, mintExec, tap, alice, alice.tok)
		p2 := f.prepare(200, mintPrep, mintPrep, map[string]any{"collectionId": col}, alice)
		f.execute(401, mintExec, p2, bob, alice.tok)
		f.execute(403, mintExec, p2, alice, bob.tok)
		f.want(400, "POST", mintExec, f.do("POST", mintExec, map[string]string{"preparedTransactionHash": "short", "signature": "x"}, bearer(alice.tok)))

		// List one, list a batch (one with an expiry), and the refusals.
		l1 := f.run(listPrep, listPrep, listExec, map[string]any{"contractId": a1, "price": "10"}, alice).str(t, "cid")
		exp := m.clock.Now().Add(time.Hour).Unix()
		batch := strs(f.run(listsPrep, listsPrep, listsExec, map[string]any{"items": []map[string]any{
			{"contractId": aliceNFTs[0], "price": "2.5"}, {"contractId": aliceNFTs[1], "price": "3", "expiresAt": exp},
			{"contractId": aliceNFTs[2], "price": "4"},
		}}, alice), t, "cids")
		f.prepare(409, listPrep, listPrep, map[string]any{"contractId": a1, "price": "11"}, alice)
		f.prepare(403, listPrep, listPrep, map[string]any{"contractId": bobNFT, "price": "1"}, alice)
		f.prepare(404, listPrep, listPrep, map[string]any{"contractId": "00" + strings.Repeat("0", 64), "price": "1"}, alice)
		f.prepare(400, listPrep, listPrep, map[string]any{"contractId": aliceNFTs[3], "price": "1.00000000001"}, alice)
		f.prepare(400, listPrep, listPrep, map[string]any{"contractId": aliceNFTs[3], "price": 1}, alice)
		f.prepare(400, listPrep, listPrep, map[string]any{"contractId": aliceNFTs[3], "price": "1", "expiresAt": m.clock.Now().Unix()}, alice)
		f.prepare(400, listsPrep, listsPrep, map[string]any{"items": []any{}}, alice)
		f.prepare(409, listsPrep, listsPrep, map[string]any{"items": []map[string]any{{"contractId": aliceNFTs[3], "price": "1"}, {"contractId": a1, "price": "1"}}}, alice)

		// Reads: collections in every sort with pages of one, a slug, the NFTs with each filter.
		for _, sort := range []string{"", "?sort=newest", "?sort=volume", "?sort=floor"} {
			f.get(200, collections, collections+sort)
		}
		page := f.get(200, collections, collections+"?limit=1")
		next, _ := page.obj(t)["cursor"].(string)
		if next == "" {
			t.Fatalf("4 collections in pages of 1: no cursor: %s", page.body)
		}
		f.get(200, collections, collections+"?limit=1&cursor="+url.QueryEscape(next))
		f.get(400, collections, collections+"?sort=price")
		f.get(400, collections, collections+"?limit=101")
		f.get(400, collections, collections+"?cursor=bogus")
		f.get(200, bySlug, "/api/nft/slug/apes")
		f.get(404, bySlug, "/api/nft/slug/nope")
		at := "/api/nft/collection/" + col + "/nfts"
		for q, n := range map[string]int{
			"":                        6,
			"?sort=price_asc":         6,
			"?sort=price_desc":        6,
			"?listed=true":            4,
			"?listed=false":           6,
			"?minPrice=3&maxPrice=10": 3,
			"?trait=Fur:Gold":         2,
			"?trait=Fur:Gold&trait=Fur:Red&trait=Eyes:Laser": 2,
			"?owner=" + url.QueryEscape(bob.ID):              1,
		} {
			r := f.get(200, nfts, at+q)
			if got := len(r.obj(t)["items"].([]any)); got != n {
				t.Errorf("GET %s: %d NFTs, want %d: %s", at+q, got, n, r.body)
			}
		}
		f.get(200, nfts, "/api/nft/collection/apes/nfts?sort=price_asc&limit=2")
		pg := f.get(200, nfts, at+"?sort=price_asc&limit=2")
		if next, _ := pg.obj(t)["cursor"].(string); next == "" {
			t.Errorf("6 NFTs in pages of 2: no cursor: %s", pg.body)
		} else {
			f.get(200, nfts, at+"?sort=price_asc&limit=2&cursor="+url.QueryEscape(next))
			f.get(400, nfts, at+"?sort=price_desc&limit=2&cursor="+url.QueryEscape(next))
		}
		for _, q := range []string{"?trait=Fur", "?listed=yes", "?minPrice=1.00000000001", "?maxPrice=-1", "?owner=bob", "?sort=rarity", "?limit=0"} {
			f.get(400, nfts, at+q)
		}
		f.get(404, nfts, "/api/nft/collection/col_00000000000000000000/nfts")
		f.get(200, token, "/api/nft/token/"+a1)
		f.get(404, token, "/api/nft/token/"+strings.Repeat("0", 66))

		// Buy: one listing (and a replay); the same listing prepared twice is stale the second time.
		bp1 := f.prepare(200, buyPrep, buyPrep, map[string]string{"cid": l1}, bob)
		bp2 := f.prepare(200, buyPrep, buyPrep, map[string]string{"cid": l1}, carol)
		bought := f.execute(200, buyExec, bp1, bob, bob.tok)
		f.execute(200, buyExec, bp1, bob, bob.tok)
		f.execute(409, buyExec, bp2, carol, carol.tok).wantProblem(t, http.StatusConflict, store.CodeStale)
		bobBought := bought.str(t, "contractId")
		f.prepare(409, buyPrep, buyPrep, map[string]string{"cid": l1}, carol)       // sold
		f.prepare(409, buyPrep, buyPrep, map[string]string{"cid": batch[0]}, alice) // own listing
		f.prepare(404, buyPrep, buyPrep, map[string]string{"cid": "00" + strings.Repeat("1", 64)}, bob)
		f.prepare(400, buyPrep, buyPrep, map[string]string{}, bob)
		f.prepare(403, buyPrep, buyPrep, map[string]string{"cid": batch[0], "owner": alice.ID}, bob)
		f.prepare(409, buyPrep, buyPrep, map[string]string{"cid": batch[0]}, dave) // insufficient_funds

		// Sweep: by count, by cids, and the refusals.
		f.prepare(409, sweepPrep, sweepPrep, map[string]any{"collectionId": col, "count": 2, "maxTotal": "5"}, carol) // 2.5 + 3 > 5
		f.prepare(409, sweepPrep, sweepPrep, map[string]any{"collectionId": col, "count": 5, "maxTotal": "100"}, carol)
		f.prepare(400, sweepPrep, sweepPrep, map[string]any{"collectionId": col, "count": 1, "cids": batch[:1], "maxTotal": "100"}, carol)
		f.prepare(400, sweepPrep, sweepPrep, map[string]any{"collectionId": col, "maxTotal": "100"}, carol)
		f.prepare(400, sweepPrep, sweepPrep, map[string]any{"collectionId": col, "count": 1, "maxTotal": "1.00000000001"}, carol)
		f.prepare(404, sweepPrep, sweepPrep, map[string]any{"collectionId": "nope", "count": 1, "maxTotal": "100"}, carol)
		swept := f.run(sweepPrep, sweepPrep, sweepExec, map[string]any{"collectionId": "apes", "count": 2, "maxTotal": "5.5"}, carol)
		if got := strs(swept, t, "contractIds"); len(got) != 2 {
			t.Errorf("a sweep of 2 answered %s", swept.body)
		}
		f.run(sweepPrep, sweepPrep, sweepExec, map[string]any{"collectionId": col, "cids": batch[2:], "maxTotal": "4"}, bob)

		// Cancel: one by its path (and a replay), a batch, and the refusals.
		c1 := f.run(listPrep, listPrep, listExec, map[string]any{"contractId": aliceNFTs[3], "price": "7"}, alice).str(t, "cid")
		cp := f.prepare(200, cancelPrep, cidPath(c1), nil, alice)
		f.execute(200, cancelExec, cp, alice, alice.tok)
		f.execute(200, cancelExec, cp, alice, alice.tok)
		f.prepare(409, cancelPrep, cidPath(c1), map[string]any{}, alice)
		f.prepare(404, cancelPrep, cidPath("00"+strings.Repeat("2", 64)), nil, alice)
		bobListings := strs(f.run(listsPrep, listsPrep, listsExec, map[string]any{"items": []map[string]any{
			{"contractId": bobNFT, "price": "5"}, {"contractId": bobBought, "price": "6"},
		}}, bob), t, "cids")
		f.prepare(403, cancelPrep, cidPath(bobListings[0]), nil, alice)
		f.prepare(400, cancelPrep, cidPath(bobListings[0]), map[string]any{"cid": bobListings[0]}, bob)
		f.prepare(403, cancelsPrep, cancelsPrep, map[string]any{"cids": bobListings}, alice)
		f.prepare(400, cancelsPrep, cancelsPrep, map[string]any{"cids": []string{}}, bob)
		f.prepare(400, cancelsPrep, cancelsPrep, map[string]any{"cids": []string{bobListings[0], bobListings[0]}}, bob)
		f.prepare(404, cancelsPrep, cancelsPrep, map[string]any{"cids": []string{"00" + strings.Repeat("3", 64)}}, bob)
		f.run(cancelsPrep, cancelsPrep, cancelsExec, map[string]any{"cids": bobListings[:1]}, bob)

		// Transfer: one that withdraws the NFT's listing, and the refusals.
		moved := f.run(movePrep, movePrep, moveExec, map[string]any{"contractId": bobBought, "receiver": carol.ID}, bob).str(t, "contractId")
		if d := m.nft(moved); d.Owner != carol.ID || d.Listing != nil {
			t.Errorf("the transferred NFT: %+v", d)
		}
		f.prepare(409, movePrep, movePrep, map[string]any{"contractId": bobBought, "receiver": carol.ID}, bob) // no longer live
		f.prepare(409, movePrep, movePrep, map[string]any{"contractId": bobNFT, "receiver": dave.ID}, bob)     // preapproval_required
		f.prepare(404, movePrep, movePrep, map[string]any{"contractId": bobNFT, "receiver": ghostParty}, bob)
		f.prepare(404, movePrep, movePrep, map[string]any{"contractId": "00" + strings.Repeat("4", 64), "receiver": carol.ID}, bob)
		f.prepare(403, movePrep, movePrep, map[string]any{"contractId": bobNFT, "receiver": carol.ID}, alice)
		f.prepare(403, movePrep, movePrep, map[string]any{"contractId": bobNFT, "receiver": carol.ID, "owner": alice.ID}, bob)
		f.prepare(400, movePrep, movePrep, map[string]any{"contractId": bobNFT, "receiver": bob.ID}, bob)
		f.prepare(400, movePrep, movePrep, map[string]any{"contractId": bobNFT}, bob)
		t1 := f.prepare(200, movePrep, movePrep, map[string]any{"contractId": bobNFT, "receiver": carol.ID}, bob)
		t2 := f.prepare(200, movePrep, movePrep, map[string]any{"contractId": bobNFT, "receiver": alice.ID}, bob)
		f.execute(200, moveExec, t1, bob, bob.tok)
		f.execute(409, moveExec, t2, bob, bob.tok).wantProblem(t, http.StatusConflict, store.CodeStale)

		// Burn: one, then its detail is gone; the refusals.
		f.run(burnPrep, burnPrep, burnExec, map[string]any{"contractId": moved}, carol)
		f.get(404, token, "/api/nft/token/"+moved)
		f.prepare(409, burnPrep, burnPrep, map[string]any{"contractId": moved}, carol)
		f.prepare(403, burnPrep, burnPrep, map[string]any{"contractId": aliceNFTs[3]}, carol)
		f.prepare(404, burnPrep, burnPrep, map[string]any{"contractId": "00" + strings.Repeat("5", 64)}, carol)
		f.prepare(400, burnPrep, burnPrep, map[string]any{"contractId": aliceNFTs[3], "price": "1"}, alice)

		// The reads after it all, and 410 once a prepared transaction's lifetime is over.
		f.get(200, bySlug, "/api/nft/slug/apes")
		f.get(404, token, "/api/nft/token/"+a1) // burned: every contract id it had answers 404
		f.get(200, token, "/api/nft/token/"+aliceNFTs[3])
		late := f.prepare(200, burnPrep, burnPrep, map[string]any{"contractId": aliceNFTs[3]}, alice)
		m.clock.Advance(10 * time.Minute)
		f.execute(410, burnExec, late, alice, alice.tok)

		// A listing past its expiresAt shows as none, in the detail as in the list.
		expiring := f.run(listPrep, listPrep, listExec, map[string]any{"contractId": aliceNFTs[3], "price": "1", "expiresAt": m.clock.Now().Unix() + 60}, alice).str(t, "cid")
		m.clock.Advance(time.Minute)
		if d := m.nft(aliceNFTs[3]); d.Listing != nil {
			t.Errorf("an expired listing shows in the detail: %+v", d.Listing)
		}
		f.get(200, token, "/api/nft/token/"+aliceNFTs[3])
		f.prepare(409, buyPrep, buyPrep, map[string]string{"cid": expiring}, bob)

		// 429 over the read and the prepare limits.
		limited := newTestAPI(t, b, withRates(1, 1))
		lf := &nftDocFlow{market: &market{testAPI: limited}, c: f.c}
		erin := limited.walletUser("erin")
		want := []int{404, 429}
		for i := range 2 {
			lf.get(200+229*i, collections, collections)
			lf.prepare(want[i], mintPrep, mintPrep, map[string]any{"collectionId": col}, erin)
		}
	})
}
