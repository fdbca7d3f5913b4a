package rest

import (
	"encoding/json"
	"fmt"
	"testing"

	"marketd/store"
	"marketd/store/storetest"
)

// TestNFTBatch_EveryBatchRouteTakesMaxBatchAndRefusesOneMore pins the one batch limit: mint,
// list, cancel and sweep (by count and by cids) each take store.MaxBatch under one signature,
// and one more is 400 invalid_request that changes nothing.
func TestNFTBatch_EveryBatchRouteTakesMaxBatchAndRefusesOneMore(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		n := store.MaxBatch
		m := newMarket(t, b, collectionOpts{price: "0", supply: 3 * n, perParty: 3 * n})
		alice, bob := m.funded("alice"), m.funded("bob")
		count := func(r *testResponse, field string) []string {
			t.Helper()
			var out map[string]json.RawMessage
			decodeAs(t, r.ok(t), &out)
			var ids []string
			if err := json.Unmarshal(out[field], &ids); err != nil || len(ids) != n {
				t.Fatalf("%s: %d (%v), want %d: %s", field, len(ids), err, n, r.body)
			}
			return ids
		}
		items := func(ids []string) []map[string]string {
			out := make([]map[string]string, len(ids))
			for i, id := range ids {
				out[i] = map[string]string{"contractId": id, "price": "1"}
			}
			return out
		}

		// At the limit: a mint, a list, a cancel and a sweep by count, each of MaxBatch.
		first := count(m.pe(alice, "/api/nft/mint/batch/atomic", map[string]any{"collectionId": m.col.ID, "quantity": n}), "contractIds")
		second := count(m.pe(alice, "/api/nft/mint/batch/atomic", map[string]any{"collectionId": m.col.ID, "quantity": n}), "contractIds")
		firstCIDs := count(m.pe(alice, "/api/nft/list/batch/atomic", map[string]any{"items": items(first)}), "cids")
		secondCIDs := count(m.pe(alice, "/api/nft/list/batch/atomic", map[string]any{"items": items(second)}), "cids")

		over := append(append([]string{}, second...), first[0])
		overCIDs := append(append([]string{}, secondCIDs...), firstCIDs[0])
		m.expectRefused(t, []string{alice.ID, bob.ID}, []errorCase{
			{fmt.Sprintf("batch mint of %d", n+1), "", "/api/nft/mint/batch/atomic/prepare", map[string]any{"collectionId": m.col.ID, "quantity": n + 1}, alice, 400, store.CodeInvalidRequest},
			{fmt.Sprintf("batch list of %d", n+1), "", "/api/nft/list/batch/atomic/prepare", map[string]any{"items": items(over)}, alice, 400, store.CodeInvalidRequest},
			{fmt.Sprintf("batch cancel of %d", n+1), "", "/api/nft/listing/batch/cancel/prepare", map[string]any{"cids": overCIDs}, alice, 400, store.CodeInvalidRequest},
			{fmt.Sprintf("sweep of the %d cheapest", n+1), "", "/api/nft/sweep/buy/prepare", map[string]any{"collectionId": m.col.ID, "count": n + 1, "maxTotal": "1000"}, bob, 400, store.CodeInvalidRequest},
			{fmt.Sprintf("sweep of %d named listings", n+1), "", "/api/nft/sweep/buy/prepare", map[string]any{"collectionId": m.col.ID, "cids": overCIDs, "maxTotal": "1000"}, bob, 400, store.CodeInvalidRequest},
		})

		m.pe(alice, "/api/nft/listing/batch/cancel", map[string]any{"cids": firstCIDs}).ok(t)
		if c := m.collection(); c.ListedCount != n {
			t.Fatalf("after a batch cancel of %d, %d listed, want %d", n, c.ListedCount, n)
		}
		bought := count(m.pe(bob, "/api/nft/sweep/buy", map[string]any{"collectionId": m.col.ID, "count": n, "maxTotal": "1000"}), "contractIds")

		// And a sweep naming MaxBatch listings.
		bobCIDs := count(m.pe(bob, "/api/nft/list/batch/atomic", map[string]any{"items": items(bought)}), "cids")
		count(m.pe(alice, "/api/nft/sweep/buy", map[string]any{"collectionId": m.col.ID, "cids": bobCIDs, "maxTotal": "1000"}), "contractIds")
		if c := m.collection(); c.ListedCount != 0 || c.Minted != 2*n {
			t.Errorf("in the end %d listed and %d minted, want 0 and %d", c.ListedCount, c.Minted, 2*n)
		}
	})
}
