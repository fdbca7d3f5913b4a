package graph

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// loggedNode is what every checked view shows of an update.
type loggedNode struct {
	UpdateID string `json:"updateId"`
	LogIndex *int64 `json:"logIndex"`
}

func TestGraphQL_EveryUpdateShownCarriesItsLogIndex(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		g := newTestGraph(t, b, 40)
		s := g.store
		col := g.collectionID("ledger-apes")
		pool := demoPool(t, s)
		seller, buyer := newMinter(t, s, "seller"), newMinter(t, s, "buyer")
		// The subscription resumes after the collection's last event before the test's own.
		before, err := s.CollectionActivityAfter(ctx, col, store.LogPosition{}, 100000)
		if err != nil || len(before) == 0 {
			t.Fatalf("the demo collection's activity: %d events, %v", len(before), err)
		}
		from := before[len(before)-1].Position()
		receipts := map[string]int64{}
		run := func(m *minter, kind string, prep *store.Prepared, err error) map[string]any {
			t.Helper()
			if err != nil {
				t.Fatalf("%s prepare: %v", kind, err)
			}
			r := m.execute(kind, prep)
			id, n := storetest.ReceiptLogIndex(t, r)
			receipts[id] = n
			var fields map[string]any
			if err := json.Unmarshal(r, &fields); err != nil {
				t.Fatal(err)
			}
			return fields
		}
		prep, err := s.PrepareMint(ctx, seller.ID, col, 1)
		contractID := run(seller, store.KindNFTMint, prep, err)["contractIds"].([]any)[0].(string)
		prep, err = s.PrepareList(ctx, seller.ID, []store.ListingTerms{{ContractID: contractID, Price: "5"}})
		run(seller, store.KindNFTList, prep, err)
		listed, err := s.NFTByContract(ctx, contractID)
		if err != nil || listed.Listing == nil {
			t.Fatalf("the listed NFT: %+v, %v", listed, err)
		}
		prep, err = s.PrepareBuy(ctx, buyer.ID, listed.Listing.CID)
		run(buyer, store.KindNFTBuy, prep, err)
		prep, err = s.PrepareSwap(ctx, buyer.ID, store.SwapTerms{PoolID: pool, Sell: "CC", Amount: "1", MinReceive: "0.000001", Deadline: s.Now().Add(time.Hour).Unix()})
		swap := run(buyer, store.KindSwapIntent, prep, err)
		if swap["intentStatus"] != store.IntentFilled {
			t.Fatalf("the swap: %v, want it filled", swap)
		}
		prep, err = s.PrepareCCTransfer(ctx, seller.ID, buyer.ID, store.MustAmount("1")) // earns the seller a reward
		run(seller, store.KindCCTransfer, prep, err)
		indexes := storetest.LogIndexes(t, s)

		// check checks every update a view shows and that it shows wantMine of the test's own.
		check := func(view string, nodes []loggedNode, wantMine int) {
			t.Helper()
			mine := 0
			for _, n := range nodes {
				storetest.WantLogIndex(t, indexes, receipts, view, n.UpdateID, n.LogIndex)
				if _, ok := receipts[n.UpdateID]; ok {
					mine++
				}
			}
			if mine != wantMine {
				t.Fatalf("%s shows %d of the test's updates, want %d: %+v", view, mine, wantMine, nodes)
			}
		}
		type edges struct{ Edges []struct{ Node loggedNode } }
		nodesOf := func(c edges) []loggedNode {
			out := make([]loggedNode, len(c.Edges))
			for i, e := range c.Edges {
				out[i] = e.Node
			}
			return out
		}
		var nft struct{ NFT struct{ History edges } }
		g.data(`query($c: ID!) { nft(contractId: $c) { history(first: 10) { edges { node { updateId logIndex } } } } }`,
			map[string]any{"c": contractID}, &nft)
		check("NFT.history", nodesOf(nft.NFT.History), 3)
		var p struct {
			Pool struct{ Outcomes, History edges }
		}
		g.data(`query($p: ID!) { pool(id: $p) {
			outcomes(first: 100) { edges { node { updateId logIndex } } }
			history(first: 100) { edges { node { updateId logIndex } } } } }`, map[string]any{"p": pool}, &p)
		check("Pool.outcomes", nodesOf(p.Pool.Outcomes), 1)
		check("Pool.history", nodesOf(p.Pool.History), 1)

		res, _ := g.queryAs(seller.signIn(), `query($p: ID!) { wallet(partyId: $p) { rewards { history(first: 10) { edges { node { updateId logIndex } } } } } }`,
			map[string]any{"p": seller.ID})
		var w struct {
			Wallet struct{ Rewards struct{ History edges } }
		}
		if err := json.Unmarshal(res.Data, &w); err != nil || len(res.Errors) > 0 {
			t.Fatalf("the seller's rewards: %+v, %v", res.Errors, err)
		}
		check("Rewards.history", nodesOf(w.Wallet.Rewards.History), 1)

		c := dialGraphQL(t, g.http.URL)
		c.subscribe("1", `subscription($c: ID!, $after: String) { collectionActivity(collectionId: $c, after: $after) { updateId logIndex } }`,
			map[string]any{"c": col, "after": formatPosition(from)})
		var activity []loggedNode
		for i := range 3 {
			ev := c.next(10 * time.Second)
			if ev == nil {
				t.Fatalf("event %d did not arrive", i)
			}
			var n loggedNode
			if err := json.Unmarshal([]byte(mustJSON(ev["collectionActivity"])), &n); err != nil {
				t.Fatal(err)
			}
			activity = append(activity, n)
		}
		check("collectionActivity", activity, 3)
	})
}
