package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/nftmeta"
	"marketd/store/storetest"
	"marketd/store/wallet"
)

// furApes creates the collection "apes" of creator (10 NFTs in CC, 5% royalty) whose NFTs
// have a Fur (gold, red, blue in turn from serial 1) and a Hat (cap on odd serials, crown on
// even ones), with a public phase open now at 1 CC, 5 per party.
func (w *ctlWorld) furApes(creator string) *store.Collection {
	w.t.Helper()
	ctx := context.Background()
	items := make([]store.ItemSpec, 10)
	for k := range items {
		hat := "cap"
		if k%2 == 1 {
			hat = "crown"
		}
		items[k] = store.ItemSpec{Fields: nftmeta.Fields{Name: fmt.Sprintf("Ape #%d", k+1), Image: "https://img.example/ape.png"},
			Traits: []store.Trait{{Type: "Fur", Value: []string{"gold", "red", "blue"}[k%3]}, {Type: "Hat", Value: hat}}}
	}
	col, err := w.store.CreateCollection(ctx, store.CollectionSpec{Slug: "apes", Name: "Apes", Creator: creator, Currency: store.CC, RoyaltyBps: 500, Supply: 10, Items: items})
	if err != nil {
		w.t.Fatal(err)
	}
	now := time.Now()
	if _, err := w.store.AddPhase(ctx, store.PhaseSpec{Collection: col.ID, Name: "public", Price: "1", Start: now.Add(-time.Hour), End: now.Add(time.Hour), PerPartyLimit: 5}); err != nil {
		w.t.Fatal(err)
	}
	return col
}

// nftsOf are the NFTs of the collection that owner holds, by serial.
func (w *ctlWorld) nftsOf(collectionID, owner string) []store.NFTView {
	w.t.Helper()
	page, err := w.store.NFTs(context.Background(), collectionID, store.NFTFilter{Owner: owner}, store.SortSerial, store.PageRequest{})
	if err != nil {
		w.t.Fatal(err)
	}
	return page.Items
}

// cidsOf are the cids of a list's items.
func cidsOf(v map[string]any) []string {
	var out []string
	for _, it := range v["items"].([]any) {
		out = append(out, it.(map[string]any)["cid"].(string))
	}
	return out
}

func TestOfferShortcuts_ItemCollectionTraitOffersAcceptAndCancel(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		w := newCtlWorld(t, b)
		ctx := context.Background()
		creator, alice, bob := w.party("creator"), w.party("alice"), w.party("bob")
		col := w.furApes(creator)
		if _, err := w.store.CreateCollection(ctx, store.CollectionSpec{Slug: "cats", Name: "Cats", Creator: creator, Currency: store.CC, Supply: 1}); err != nil {
			t.Fatal(err)
		}
		w.must("alice", "tap", "CC", "100")
		w.must("bob", "tap", "CC", "100")
		w.must("alice", "mint", "apes", "4")
		nfts := w.nftsOf(col.ID, alice)
		if len(nfts) != 4 {
			t.Fatalf("alice minted %d NFTs", len(nfts))
		}

		// An item offer by serial, one by contract id (the collection named by id, the flags
		// after the arguments), a collection offer and a trait offer (gold or red fur).
		item := w.must("bob", "offer", "apes", "2", "--serial", strconv.Itoa(nfts[0].Serial))["cid"].(string)
		item2 := w.must("bob", "offer", col.ID, "3", "--contract", nfts[1].ContractID, "--expires", "48h")["cid"].(string)
		coll := w.must("bob", "offer", "--quantity", "3", "apes", "1.5")["cid"].(string)
		trait := w.must("bob", "offer", "apes", "2.5", "--trait", "Fur=red", "--trait", "Fur=gold", "--quantity", "2",
			"--expires", time.Now().Add(72*time.Hour).UTC().Format(time.RFC3339))["cid"].(string)
		if got := w.balances(bob); !strings.HasPrefix(got, "bob CC 85.5/14.5,") { // 2 + 3 + 1.5 × 3 + 2.5 × 2 locked
			t.Errorf("bob after four offers: %s", got)
		}
		o, err := w.store.OfferByID(ctx, trait)
		if err != nil || o.Kind != store.OfferTrait || o.Quantity != 2 || traitsText(o.OfferCriteria()) != "Fur=gold|red" {
			t.Errorf("the trait offer: %+v %v", o, err)
		}

		// The lists: bob's own, by collection, and the offers alice's NFTs can be accepted into.
		mine := map[string]bool{item: true, item2: true, coll: true, trait: true}
		for _, args := range [][]string{{"offers"}, {"offers", "--collection", "apes"}, {"offers", "--collection", col.ID}} {
			got := cidsOf(w.must("bob", args...))
			if len(got) != 4 || !mine[got[0]] || !mine[got[1]] || !mine[got[2]] || !mine[got[3]] {
				t.Errorf("bob: walletctl %s: %v", strings.Join(args, " "), got)
			}
		}
		if got := cidsOf(w.must("bob", "offers", "--collection", "cats")); len(got) != 0 {
			t.Errorf("bob's offers of cats: %v", got)
		}
		if got := cidsOf(w.must("alice", "offers", "--received")); len(got) != 4 {
			t.Errorf("alice's received offers: %v", got)
		}
		if got := cidsOf(w.must("alice", "offers")); len(got) != 0 {
			t.Errorf("alice's own offers: %v", got)
		}

		// alice sells two NFTs into the collection offer, which keeps one unit open; then one
		// into the item offer for it.
		filled := w.must("alice", "accept", coll, nfts[2].ContractID, nfts[3].ContractID, "--min-proceeds", "2.775")
		st := filled["settlement"].(map[string]any)
		if filled["remaining"] != 1.0 || st["seller"].(map[string]any)["amount"] != "2.775" { // 2 × (1.5 - 0.0375 fee - 0.075 royalty)
			t.Errorf("a partial fill answered %v", filled)
		}
		w.must("alice", "accept", item, nfts[0].ContractID)

		// bob withdraws two offers at once; the collection offer's last unit stays open.
		w.must("bob", "offer", "cancel", item2, trait)
		left := w.must("bob", "offers")["items"].([]any)
		if len(left) != 1 || left[0].(map[string]any)["cid"] != coll || left[0].(map[string]any)["remaining"] != 1.0 {
			t.Errorf("bob's offers after the accepts and the cancel: %v", left)
		}
		if got := w.balances(bob); !strings.HasPrefix(got, "bob CC 93.5/1.5,") { // 100 - 2 × 1.5 - 2 - 1.5 locked
			t.Errorf("bob at the end: %s", got)
		}
		if got := len(w.nftsOf(col.ID, bob)); got != 3 {
			t.Errorf("bob holds %d NFTs, want 3", got)
		}

		// Arguments that cannot make a sensible offer are refused before any request.
		w.refused("bob", []string{"at most one of"}, "offer", "apes", "1", "--serial", "1", "--trait", "Fur=red")
		w.refused("bob", []string{"item offer", "buys 1"}, "offer", "apes", "1", "--serial", "1", "--quantity", "2")
		w.refused("bob", []string{"--expires"}, "offer", "apes", "1", "--expires", "soon")
		w.refused("bob", []string{"TYPE=VALUE"}, "offer", "apes", "1", "--trait", "Fur")
		w.refused("bob", []string{"PRICE"}, "offer", "apes", "cheap")
		w.refused("bob", []string{"usage"}, "offer", "apes")
		w.refused("bob", []string{"usage"}, "offer", "cancel")
		w.refused("alice", []string{"usage"}, "accept", coll)
		w.refused("alice", []string{"named twice"}, "accept", coll, nfts[1].ContractID, nfts[1].ContractID)
		w.refused("alice", []string{"not among the open offers"}, "accept", item, nfts[1].ContractID)
		w.refused("bob", []string{"NFT " + nfts[1].ContractID, "not cats"}, "offer", "cats", "1", "--contract", nfts[1].ContractID)
	})
}

// forged rewrites the prepared transaction's bytes on the path, old to new, and puts the hash
// of the new bytes beside them: a transaction no honest server prepared, whose hash matches.
func forged(old, new string) func(p *pathProxy, r *http.Request, body []byte, answer map[string]any) {
	return func(p *pathProxy, r *http.Request, body []byte, answer map[string]any) {
		tx, _ := base64.StdEncoding.DecodeString(answer["preparedTransaction"].(string))
		if !bytes.Contains(tx, []byte(old)) {
			panic(fmt.Sprintf("forged: no %s in %s", old, tx))
		}
		tx = bytes.Replace(tx, []byte(old), []byte(new), 1)
		answer["preparedTransaction"] = base64.StdEncoding.EncodeToString(tx)
		answer["preparedTransactionHash"] = base64.StdEncoding.EncodeToString(wallet.PreparedHash(tx))
	}
}

func TestOfferShortcuts_RefuseWhatWasNotAsked(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		w := newCtlWorld(t, b)
		p := w.proxied()
		creator, alice, bob, eve := w.party("creator"), w.party("alice"), w.party("bob"), w.party("eve")
		col := w.furApes(creator)
		for _, k := range []string{"alice", "bob", "eve"} {
			w.must(k, "tap", "CC", "100")
		}
		w.must("alice", "mint", "apes", "2")
		nfts := w.nftsOf(col.ID, alice)
		parties := []string{creator, alice, bob, eve}
		const offerPrep, acceptPrep, cancelPrep = "/api/nft/offer/prepare", "/api/nft/offer/accept/prepare", "/api/nft/offer/cancel/prepare"

		// The proxy raises the price bob bids.
		w.refusedUnsigned(p, &tamper{path: offerPrep, request: func(m map[string]any) { m["price"] = "20" }}, parties,
			[]string{"you asked to offer 2 CC each for 3 NFT(s) of apes", "price is 20, not 2"}, "bob", "offer", "apes", "2", "--quantity", "3")
		// It makes the offer lock more than 2 × 3, in bytes it forges (their hash recomputed).
		w.refusedUnsigned(p, &tamper{path: offerPrep, response: forged(`"instrument":"CC","amount":"6"`, `"instrument":"CC","amount":"60"`)}, parties,
			[]string{"offer 2 CC each", "lock 60 CC, not the 2 × 3 = 6 the offer needs"}, "bob", "offer", "apes", "2", "--quantity", "3")
		// It turns a trait offer into a collection offer.
		w.refusedUnsigned(p, &tamper{path: offerPrep, request: func(m map[string]any) { delete(m, "traits") }}, parties,
			[]string{"with Fur=red", "kind is collection, not trait"}, "bob", "offer", "apes", "2", "--trait", "Fur=red")

		// Untouched, bob's offer goes through; eve bids less.
		coll := w.must("bob", "offer", "apes", "2", "--quantity", "3")["cid"].(string)
		evesOffer := w.must("eve", "offer", "apes", "1")["cid"].(string)

		// alice accepts bob's offer; the proxy sends her NFT into eve's instead.
		w.refusedUnsigned(p, &tamper{path: acceptPrep, request: func(m map[string]any) { m["cid"] = evesOffer }}, parties,
			[]string{"into offer " + coll + " of " + bob, "offer is " + evesOffer + ", not " + coll}, "alice", "accept", coll, nfts[0].ContractID)
		// Forged bytes send it to eve under bob's offer.
		w.refusedUnsigned(p, &tamper{path: acceptPrep, response: forged(`"maker":"`+bob+`"`, `"maker":"`+eve+`"`)}, parties,
			[]string{"maker is " + eve + ", not " + bob}, "alice", "accept", coll, nfts[0].ContractID)
		// The proxy adds another of her NFTs.
		w.refusedUnsigned(p, &tamper{path: acceptPrep, request: func(m map[string]any) { m["contractIds"] = []string{nfts[0].ContractID, nfts[1].ContractID} }}, parties,
			[]string{"NFTs is [", nfts[1].ContractID}, "alice", "accept", coll, nfts[0].ContractID)
		// It drops --min-proceeds, which the server would hold her to: she would get 1.85.
		w.refusedUnsigned(p, &tamper{path: acceptPrep, request: func(m map[string]any) { delete(m, "minProceeds") }}, parties,
			[]string{"for at least 1.9 in all", "credit you 1.85 CC for the NFT(s), less than the 1.9 you asked at least"},
			"alice", "accept", coll, nfts[0].ContractID, "--min-proceeds", "1.9")
		// Forged bytes cut her share short of the price.
		w.refusedUnsigned(p, &tamper{path: acceptPrep, response: forged(`"amount":"1.85"`, `"amount":"0.85"`)}, parties,
			[]string{"shares of NFT " + nfts[0].ContractID + " is 1, not 2"}, "alice", "accept", coll, nfts[0].ContractID)

		// bob cancels his offer; the proxy cancels another of his.
		other := w.must("bob", "offer", "apes", "1.2")["cid"].(string)
		w.refusedUnsigned(p, &tamper{path: cancelPrep, request: func(m map[string]any) { m["cids"] = []string{other} }}, parties,
			[]string{"cancel offer(s) " + coll, "offers is [" + other + "], not [" + coll + "]"}, "bob", "offer", "cancel", coll)

		// Untouched, the accept and the cancel go through.
		w.must("alice", "accept", coll, nfts[0].ContractID, "--min-proceeds", "1.85")
		w.must("bob", "offer", "cancel", coll, other)
		if got := w.balances(alice, bob); !strings.Contains(got, "alice CC 99.85/0,") || !strings.Contains(got, "bob CC 98/0,") {
			t.Errorf("after the accept and the cancel: %s", got)
		}
	})
}

// The offer checks judge the decoded effects, whatever the server or the path made of them.
func TestOfferIntents_RefuseWhatWasNotAsked(t *testing.T) {
	const me, bob, eve, op, creator = "me::1220aa", "bob::1220bb", "eve::1220ee", "op::1220cc", "creator::1220dd"
	a := store.MustAmount
	tx := func(kind string, effects any) *store.DecodedPrepared {
		return &store.DecodedPrepared{Kind: kind, ActAs: me, Effects: effects}
	}
	seven := 7
	asked := offerAsked{ref: "apes", collectionID: "col_1", currency: store.CC, kind: store.OfferItem, serial: &seven, price: a("2"), quantity: 1, expiresAt: 99}
	offer := func(change func(e *store.OfferEffects)) *store.DecodedPrepared {
		e := &store.OfferEffects{Maker: me, Kind: store.OfferItem, CollectionID: "col_1", Slug: "apes", Serial: &seven, NFTID: "col_1:7", Price: a("2"), Quantity: 1, ExpiresAt: 99,
			Lock: store.LockedFunds{Instrument: store.CC, Amount: a("2"), Inputs: []store.SpentHolding{{CID: "h1", Amount: a("10")}}, Change: a("8")}}
		if change != nil {
			change(e)
		}
		return tx(store.KindNFTOffer, e)
	}
	share := func(party, amount string) store.Share { return store.Share{Party: ptr(party), Amount: a(amount)} }
	sale := func(nft, fee, royalty, seller string) store.OfferSale {
		return store.OfferSale{NFTCID: nft, NFTID: "col_1:" + nft, Settlement: store.Settlement{Price: a("2"), Fee: share(op, fee), Royalty: share(creator, royalty), Seller: share(me, seller)}}
	}
	accept := func(change func(e *store.OfferAcceptEffects)) *store.DecodedPrepared {
		e := &store.OfferAcceptEffects{Seller: me, OfferID: "o1", Maker: bob, CollectionID: "col_1", Price: a("2"), Currency: store.CC,
			Sales:      []store.OfferSale{sale("n1", "0.05", "0.1", "1.85")},
			Settlement: store.Settlement{Price: a("2"), Fee: share(op, "0.05"), Royalty: share(creator, "0.1"), Seller: share(me, "1.85")}}
		if change != nil {
			change(e)
		}
		return tx(store.KindNFTOfferAccept, e)
	}
	seen := &offerSeen{CID: "o1", Maker: bob, CollectionID: "col_1", Price: a("2"), Currency: store.CC}
	least := a("1.85")
	for _, tc := range []struct {
		name string
		want intent
		tx   *store.DecodedPrepared
		says string // "" when the transaction is what was asked
	}{
		{"an item offer", wantOffer(asked), offer(nil), ""},
		{"a look-alike collection", wantOffer(asked), offer(func(e *store.OfferEffects) { e.Slug = "apes-x" }), "its collection slug is apes-x, not apes"},
		{"another NFT", wantOffer(asked), offer(func(e *store.OfferEffects) { e.Serial = ptrInt(8) }), "its serial is #8, not #7"},
		{"a lock in USDCx", wantOffer(asked), offer(func(e *store.OfferEffects) { e.Lock.Instrument = store.USDCx }), "locked instrument is USDCx, not CC"},
		{"change kept back", wantOffer(asked), offer(func(e *store.OfferEffects) { e.Lock.Change = a("1") }), "its change is 1, not 8"},
		{"a later expiry", wantOffer(asked), offer(func(e *store.OfferEffects) { e.ExpiresAt = 999 }), "its expiry is 999, not 99"},
		{"another maker", wantOffer(asked), offer(func(e *store.OfferEffects) { e.Maker = eve }), "its maker is " + eve},
		{"an accept", wantAccept(seen, []string{"n1"}, &least), accept(func(e *store.OfferAcceptEffects) { e.MinProceeds = &least }), ""},
		{"an accept that drops the minimum", wantAccept(seen, []string{"n1"}, &least), accept(nil), "its minimum proceeds is none, not 1.85"},
		{"an accept to another maker", wantAccept(seen, []string{"n1"}, nil), accept(func(e *store.OfferAcceptEffects) { e.Maker = eve }), "its maker is " + eve + ", not " + bob},
		{"an accept of another NFT too", wantAccept(seen, []string{"n1"}, nil), accept(func(e *store.OfferAcceptEffects) {
			e.Sales = append(e.Sales, sale("n2", "0.05", "0.1", "1.85"))
		}), "its NFTs is [n1 n2], not [n1]"},
		{"a seller's share to eve", wantAccept(seen, []string{"n1"}, nil), accept(func(e *store.OfferAcceptEffects) { e.Sales[0].Settlement.Seller.Party = ptr(eve) }),
			"its seller of NFT n1 is " + eve},
		{"a fee that takes it all", wantAccept(seen, []string{"n1"}, &least), accept(func(e *store.OfferAcceptEffects) { e.Sales[0] = sale("n1", "1.9", "0.1", "0") }),
			"credit you 0 CC"},
		{"a settlement that says more than the sales", wantAccept(seen, []string{"n1"}, nil), accept(func(e *store.OfferAcceptEffects) { e.Settlement.Seller.Amount = a("5") }),
			"its proceeds is 5, not 1.85"},
		{"a cancel of another", wantOfferCancel([]string{"o1"}), tx(store.KindNFTOfferCancel, &store.OfferCancelEffects{Maker: me, Offers: []store.OfferRef{{OfferID: "o2"}}}),
			"its offers is [o2], not [o1]"},
		{"a cancel of another's", wantOfferCancel([]string{"o1"}), tx(store.KindNFTOfferCancel, &store.OfferCancelEffects{Maker: eve, Offers: []store.OfferRef{{OfferID: "o1"}}}),
			"its maker is " + eve},
		{"an accept for a cancel", wantOfferCancel([]string{"o1"}), accept(nil), "would sell 1 NFT(s) of col_1 into offer o1"},
	} {
		err := tc.want(me, tc.tx)
		switch {
		case tc.says == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.says != "" && (err == nil || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "not signing: you asked to ")):
			t.Errorf("%s: %v; want a refusal saying %q", tc.name, err, tc.says)
		}
	}
}

func ptrInt(n int) *int { return &n }

// A command's own flags may follow its arguments, up to "--": offer's do, and sign refuses a
// message and --hash together wherever they stand.
func TestFlags_MayFollowTheArgumentsUntilDoubleDash(t *testing.T) {
	key := t.TempDir() + "/k.key"
	ctl := func(args ...string) (string, error) {
		var out, log bytes.Buffer
		err := run(append([]string{"--key", key}, args...), &out, &log)
		return out.String(), err
	}
	if _, err := ctl("keygen", "--hint", "k"); err != nil {
		t.Fatal(err)
	}
	hash := base64.StdEncoding.EncodeToString(make([]byte, 32))
	if _, err := ctl("sign", "hello", "--hash", hash); err == nil || !strings.Contains(err.Error(), "usage") {
		t.Errorf("sign MESSAGE --hash: %v", err)
	}
	plain, err := ctl("sign", "--hash")
	if err == nil {
		t.Errorf("sign --hash with no value: %q", plain)
	}
	dashed, err1 := ctl("sign", "--", "--hash")
	_, err2 := ctl("sign", "-", "--hash", hash)
	if err1 != nil || dashed == "" || err2 == nil {
		t.Errorf("sign -- --hash: %q %v; sign - --hash: %v", dashed, err1, err2)
	}
}
