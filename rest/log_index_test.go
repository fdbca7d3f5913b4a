package rest

import (
	"testing"

	"marketd/store"
	"marketd/store/storetest"
)

// loggedItem is what an NFT's history, a pool's fills and a party's rewards show of an update.
type loggedItem struct {
	UpdateID string `json:"updateId"`
	LogIndex *int64 `json:"logIndex"`
}

// wantLogged fails unless each item shows its update's logIndex, the index of its log entry
// and its receipt's, and the items are exactly the n updates the test committed.
func wantLogged(t *testing.T, indexes, receipts map[string]int64, view string, items []loggedItem, n int) {
	t.Helper()
	if len(items) != n {
		t.Fatalf("%s shows %d updates, want %d: %+v", view, len(items), n, items)
	}
	for _, it := range items {
		if _, ok := receipts[it.UpdateID]; !ok {
			t.Fatalf("%s shows update %s, which no execute of the test committed", view, it.UpdateID)
		}
		storetest.WantLogIndex(t, indexes, receipts, view, it.UpdateID, it.LogIndex)
	}
}

// keep records a receipt's logIndex by its update.
func keep(t *testing.T, receipts map[string]int64, r *testResponse) *testResponse {
	t.Helper()
	id, n := storetest.ReceiptLogIndex(t, r.ok(t).body)
	receipts[id] = n
	return r
}

func TestNFTDetail_EachHistoryEventShowsItsUpdatesLogIndex(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newMarket(t, b, collectionOpts{supply: 1, price: "1", perParty: 1})
		seller, buyer := m.funded("seller"), m.funded("buyer")
		receipts := map[string]int64{}
		var minted struct {
			ContractIDs []string `json:"contractIds"`
		}
		decodeAs(t, keep(t, receipts, m.pe(seller, "/api/nft/mint/atomic", map[string]any{"collectionId": m.col.ID})), &minted)
		cid := keep(t, receipts, m.pe(seller, "/api/nft/list", map[string]any{"contractId": minted.ContractIDs[0], "price": "5"})).str(t, "cid")
		keep(t, receipts, m.pe(buyer, "/api/nft/buy/atomic", map[string]string{"cid": cid}))
		indexes := storetest.LogIndexes(t, m.store)

		var detail struct{ History []loggedItem }
		decodeAs(t, m.do("GET", "/api/nft/token/"+minted.ContractIDs[0], nil), &detail)
		wantLogged(t, indexes, receipts, "the NFT's history", detail.History, 3)
	})
}

func TestSwapFeeds_EachFillShowsItsUpdatesLogIndex(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newSwapMarket(t, b)
		lp, taker := m.user("lp", "", "100"), m.user("taker", "20", "")
		m.publish(lp, "bid", "2.4", "10")
		receipts := map[string]int64{}
		r := m.submit(taker, "CC", "2", "4.5")
		if r["intentStatus"] != "filled" {
			t.Fatalf("the swap is %v, want it filled", r)
		}
		n, ok := r["logIndex"].(float64)
		if !ok {
			t.Fatalf("the swap's receipt has no logIndex: %v", r)
		}
		receipts[r["updateId"].(string)] = int64(n)
		indexes := storetest.LogIndexes(t, m.store)

		for _, path := range []string{"/api/swap/pool/" + m.pool + "/outcomes", "/api/swap/pool/" + m.pool + "/history", "/api/swap/history?taker=" + taker.ID} {
			var page struct{ Items []loggedItem }
			decodeAs(t, m.do("GET", path, nil, bearer(taker.tok)), &page)
			wantLogged(t, indexes, receipts, path, page.Items, 1)
		}
	})
}

func TestRewardHistory_EachRewardShowsItsUpdatesLogIndex(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice, bob := a.walletUser("alice"), a.walletUser("bob")
		a.walletTap(alice, store.CC, "50")
		r := a.prepareExecute("/api/wallet/cc-transfer", map[string]string{"receiver": bob.ID, "amount": "20"}, alice.Party, bearer(alice.tok))
		n, ok := r["logIndex"].(float64)
		if !ok {
			t.Fatalf("the transfer's receipt has no logIndex: %v", r)
		}
		receipts := map[string]int64{r["updateId"].(string): int64(n)}
		indexes := storetest.LogIndexes(t, a.store)
		var page struct{ Items []loggedItem }
		decodeAs(t, a.do("GET", "/api/wallet/rewards/"+alice.ID+"/history", nil, bearer(alice.tok)), &page)
		wantLogged(t, indexes, receipts, "alice's rewards", page.Items, 1)
	})
}
