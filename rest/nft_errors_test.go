package rest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// marketState is everything an NFT request could change, as text: every collection with its
// statistics and phases, every NFT with its owner, contract and listing, every party's
// balances and the instruments' supply.
func (m *market) marketState(t *testing.T, parties ...string) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	cols, err := m.store.Collections(ctx, store.SortNewest, store.PageRequest{Limit: store.MaxPageSize})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cols.Items {
		fmt.Fprintf(&b, "%s minted=%d burned=%d floor=%v listed=%d owners=%d volume=%s\n", c.Slug, c.Minted, c.Burned, c.FloorPrice, c.ListedCount, c.Owners, c.Volume)
		for _, p := range c.Phases {
			fmt.Fprintf(&b, "  phase %s minted=%d\n", p.Name, p.Minted)
		}
		r := store.PageRequest{Limit: store.MaxPageSize}
		for {
			page, err := m.store.NFTs(ctx, c.ID, store.NFTFilter{}, store.SortSerial, r)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range page.Items {
				fmt.Fprintf(&b, "  #%d %s %s", n.Serial, n.ContractID, n.Owner)
				if l := n.Listing; l != nil {
					fmt.Fprintf(&b, " listed %s at %s", l.CID, l.Price)
				}
				b.WriteByte('\n')
			}
			if page.Cursor == "" {
				break
			}
			r.Cursor = page.Cursor
		}
	}
	op, err := m.store.OperatorParty(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(parties, op) {
		bs, err := m.store.Balances(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %+v\n", p, bs)
	}
	supply, err := m.store.Supply(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "supply %v\n", supply)
	return b.String()
}

// errorCase is one bad request and the problem it must get.
type errorCase struct {
	name   string
	method string
	path   string
	body   any // nil for none
	as     *walletUser
	status int
	code   store.Code
}

// expectRefused runs each case and checks its problem and that the market did not change.
func (m *market) expectRefused(t *testing.T, parties []string, cases []errorCase) {
	t.Helper()
	for _, c := range cases {
		before := m.marketState(t, parties...)
		var opts []reqOption
		if c.as != nil {
			opts = append(opts, bearer(c.as.tok))
		}
		method := c.method
		if method == "" {
			method = "POST"
		}
		r := m.do(method, c.path, c.body, opts...)
		t.Run(c.name, func(t *testing.T) { r.wantProblem(t, c.status, c.code) })
		if after := m.marketState(t, parties...); after != before {
			t.Errorf("%s changed the market:\nbefore\n%s\nafter\n%s", c.name, before, after)
		}
	}
}

// prepareOK runs a prepare that must succeed and returns its hash.
func (m *market) prepareOK(u *walletUser, path string, body any) string {
	m.t.Helper()
	return m.do("POST", path, body, bearer(u.tok)).ok(m.t).str(m.t, "preparedTransactionHash")
}

// executeBody is an execute request signed by p.
func executeBody(p *storetest.Party, hash string) map[string]string {
	return map[string]string{"preparedTransactionHash": hash, "signature": p.SignBase64(mustB64(hash))}
}

func TestNFTErrors_EveryBadInputGetsItsProblemAndChangesNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		m := newMarket(t, b, collectionOpts{currency: store.USDCx, royaltyBps: 500, price: "2", supply: 8, perParty: 3})
		m.preapprove(m.creator, "usdcx")
		alice, bob := m.funded("alice"), m.funded("bob")
		carol := m.walletUser("carol") // no preapprovals
		m.walletTap(carol, store.CC, "100")
		poor := m.walletUser("poor") // no money
		dave := m.walletUser("dave") // a creator without a USDCx preapproval
		now := m.clock.Now()

		closed := m.addCollection(t, "closed", m.creator.ID, collectionOpts{noPhase: true})
		future := m.addCollection(t, "future", m.creator.ID, collectionOpts{noPhase: true})
		if _, err := m.store.AddPhase(ctx, store.PhaseSpec{Collection: future.ID, Name: "later", Price: "1", Start: now.Add(time.Hour), End: now.Add(2 * time.Hour), PerPartyLimit: 5}); err != nil {
			t.Fatal(err)
		}
		ended := m.addCollection(t, "ended", m.creator.ID, collectionOpts{noPhase: true})
		if _, err := m.store.AddPhase(ctx, store.PhaseSpec{Collection: ended.ID, Name: "past", Price: "1", Start: now.Add(-2 * time.Hour), End: now.Add(-time.Hour), PerPartyLimit: 5}); err != nil {
			t.Fatal(err)
		}
		vip := m.addCollection(t, "vip", m.creator.ID, collectionOpts{price: "0", allow: []string{bob.ID}})
		tiny := m.addCollection(t, "tiny", m.creator.ID, collectionOpts{noPhase: true})
		one := 1
		if _, err := m.store.AddPhase(ctx, store.PhaseSpec{Collection: tiny.ID, Name: "drop", Price: "0", Start: now.Add(-time.Hour), End: now.Add(time.Hour), PerPartyLimit: 5, Supply: &one}); err != nil {
			t.Fatal(err)
		}
		small := m.addCollection(t, "small", m.creator.ID, collectionOpts{price: "0", supply: 2})
		daves := m.addCollection(t, "daves", dave.ID, collectionOpts{currency: store.USDCx, royaltyBps: 1000, price: "0"})

		a := m.mintOf(alice, m.col.ID, 3) // alice reaches the per-party limit of 3
		cidA := m.list(alice, a[0], "10")
		cidExp := m.listUntil(alice, a[1], "4", now.Add(time.Minute))
		a2 := m.pe(alice, "/api/nft/transfer", map[string]string{"contractId": a[2], "receiver": bob.ID}).ok(t).str(t, "contractId")
		bNFT := m.mintOf(bob, m.col.ID, 1)[0]
		cidSold := m.list(bob, bNFT, "3")
		m.buy(alice, cidSold)
		m.mintOf(bob, tiny.ID, 1) // the phase supply of one is gone
		d := m.mintOf(alice, daves.ID, 1)[0]
		cidDave := m.list(alice, d, "5")
		m.clock.Advance(2 * time.Minute) // cidExp has expired; the sweeper has not run

		parties := []string{alice.ID, bob.ID, carol.ID, poor.ID, dave.ID, m.creator.ID}
		nfts := "/api/nft/collection/" + m.col.ID + "/nfts"
		var first struct {
			Cursor *string `json:"cursor"`
		}
		decodeAs(t, m.do("GET", nfts+"?limit=1", nil), &first)
		if first.Cursor == nil {
			t.Fatal("no cursor on the first page")
		}
		overBatch := make([]map[string]string, store.MaxBatch+1)
		for i := range overBatch {
			overBatch[i] = map[string]string{"contractId": fmt.Sprintf("00%062d", i), "price": "1"}
		}
		ghostNFT := "00" + strings.Repeat("ab", 32)

		m.expectRefused(t, parties, []errorCase{
			// Reads.
			{"unknown collection", "GET", "/api/nft/collection/col_00000000000000000000/nfts", nil, nil, 404, store.CodeNotFound},
			{"unknown slug", "GET", "/api/nft/slug/nope", nil, nil, 404, store.CodeNotFound},
			{"unknown NFT", "GET", "/api/nft/token/" + ghostNFT, nil, nil, 404, store.CodeNotFound},
			{"limit 0", "GET", nfts + "?limit=0", nil, nil, 400, store.CodeInvalidRequest},
			{"limit 101", "GET", nfts + "?limit=101", nil, nil, 400, store.CodeInvalidRequest},
			{"limit not a number", "GET", nfts + "?limit=ten", nil, nil, 400, store.CodeInvalidRequest},
			{"unknown sort", "GET", nfts + "?sort=rarity", nil, nil, 400, store.CodeInvalidRequest},
			{"listed=yes", "GET", nfts + "?listed=yes", nil, nil, 400, store.CodeInvalidRequest},
			{"listed=1", "GET", nfts + "?listed=1", nil, nil, 400, store.CodeInvalidRequest},
			{"listed=TRUE", "GET", nfts + "?listed=TRUE", nil, nil, 400, store.CodeInvalidRequest},
			{"trait without a value", "GET", nfts + "?trait=Color", nil, nil, 400, store.CodeInvalidRequest},
			{"trait without a type", "GET", nfts + "?trait=:Red", nil, nil, 400, store.CodeInvalidRequest},
			{"negative minPrice", "GET", nfts + "?minPrice=-1", nil, nil, 400, store.CodeInvalidRequest},
			{"minPrice finer than USDCx", "GET", nfts + "?minPrice=1.0000001", nil, nil, 400, store.CodeInvalidRequest},
			{"maxPrice not a decimal", "GET", nfts + "?maxPrice=1e3", nil, nil, 400, store.CodeInvalidRequest},
			{"owner not a party id", "GET", nfts + "?owner=alice", nil, nil, 400, store.CodeInvalidRequest},
			{"forged cursor", "GET", nfts + "?cursor=abc.def", nil, nil, 400, store.CodeInvalidCursor},
			{"empty cursor", "GET", nfts + "?cursor=", nil, nil, 400, store.CodeInvalidCursor},
			{"cursor of another sort", "GET", nfts + "?sort=price_asc&cursor=" + *first.Cursor, nil, nil, 400, store.CodeInvalidCursor},
			{"cursor of another filter", "GET", nfts + "?listed=true&cursor=" + *first.Cursor, nil, nil, 400, store.CodeInvalidCursor},
			{"collections: unknown sort", "GET", "/api/nft/collections?sort=hot", nil, nil, 400, store.CodeInvalidRequest},
			{"collections: limit 0", "GET", "/api/nft/collections?limit=0", nil, nil, 400, store.CodeInvalidRequest},
			{"collections: forged cursor", "GET", "/api/nft/collections?cursor=" + *first.Cursor, nil, nil, 400, store.CodeInvalidCursor},

			// Mint.
			{"mint without a token", "", "/api/nft/mint/atomic/prepare", map[string]string{"collectionId": m.col.ID}, nil, 401, store.CodeUnauthenticated},
			{"mint: malformed JSON", "", "/api/nft/mint/atomic/prepare", `{"collectionId":`, bob, 400, store.CodeInvalidRequest},
			{"mint: unknown field", "", "/api/nft/mint/atomic/prepare", map[string]any{"collectionId": m.col.ID, "color": "red"}, bob, 400, store.CodeInvalidRequest},
			{"mint: collectionId a number", "", "/api/nft/mint/atomic/prepare", map[string]any{"collectionId": 7}, bob, 400, store.CodeInvalidRequest},
			{"mint: no collectionId", "", "/api/nft/mint/atomic/prepare", map[string]any{}, bob, 400, store.CodeInvalidRequest},
			{"mint: unknown collection", "", "/api/nft/mint/atomic/prepare", map[string]any{"collectionId": "col_00000000000000000000"}, bob, 404, store.CodeNotFound},
			{"mint/atomic of two", "", "/api/nft/mint/atomic/prepare", map[string]any{"collectionId": m.col.ID, "quantity": 2}, bob, 400, store.CodeInvalidRequest},
			{"batch mint without quantity", "", "/api/nft/mint/batch/atomic/prepare", map[string]any{"collectionId": m.col.ID}, bob, 400, store.CodeInvalidRequest},
			{"batch mint of 0", "", "/api/nft/mint/batch/atomic/prepare", map[string]any{"collectionId": m.col.ID, "quantity": 0}, bob, 400, store.CodeInvalidRequest},
			{"batch mint over the batch limit", "", "/api/nft/mint/batch/atomic/prepare", map[string]any{"collectionId": m.col.ID, "quantity": store.MaxBatch + 1}, bob, 400, store.CodeInvalidRequest},
			{"mint with no phase", "", "/api/nft/mint/atomic/prepare", map[string]any{"collectionId": closed.ID}, bob, 409, store.CodeConflict},
			{"mint before the phase", "", "/api/nft/mint/atomic/prepare", map[string]any{"collectionId": future.ID}, bob, 409, store.CodeConflict},
			{"mint after the phase", "", "/api/nft/mint/atomic/prepare", map[string]any{"collectionId": ended.ID}, bob, 409, store.CodeConflict},
			{"mint over the per-party limit", "", "/api/nft/mint/atomic/prepare", map[string]any{"collectionId": m.col.ID}, alice, 409, store.CodeConflict},
			{"batch mint over the per-party limit", "", "/api/nft/mint/batch/atomic/prepare", map[string]any{"collectionId": m.col.ID, "quantity": 3}, bob, 409, store.CodeConflict},
			{"mint over the phase supply", "", "/api/nft/mint/atomic/prepare", map[string]any{"collectionId": tiny.ID}, alice, 409, store.CodeConflict},
			{"mint over the collection supply", "", "/api/nft/mint/batch/atomic/prepare", map[string]any{"collectionId": small.ID, "quantity": 3}, bob, 409, store.CodeConflict},
			{"mint off the allow-list", "", "/api/nft/mint/atomic/prepare", map[string]any{"collectionId": vip.ID}, alice, 403, store.CodeNotAllowlisted},
			{"mint without the money", "", "/api/nft/mint/atomic/prepare", map[string]any{"collectionId": m.col.ID}, poor, 409, store.CodeInsufficientFunds},
			{"mint naming another owner", "", "/api/nft/mint/atomic/prepare", map[string]any{"collectionId": m.col.ID, "owner": alice.ID}, bob, 403, store.CodePartyMismatch},

			// List.
			{"list an unknown NFT", "", "/api/nft/list/prepare", map[string]any{"contractId": ghostNFT, "price": "1"}, alice, 404, store.CodeNotFound},
			{"list another party's NFT", "", "/api/nft/list/prepare", map[string]any{"contractId": a2, "price": "1"}, alice, 403, store.CodePartyMismatch},
			{"list an NFT listed already", "", "/api/nft/list/prepare", map[string]any{"contractId": a[0], "price": "1"}, alice, 409, store.CodeConflict},
			{"list a contract no longer live", "", "/api/nft/list/prepare", map[string]any{"contractId": a[2], "price": "1"}, alice, 409, store.CodeConflict},
			{"list at 0", "", "/api/nft/list/prepare", map[string]any{"contractId": a2, "price": "0"}, bob, 400, store.CodeInvalidRequest},
			{"list at a negative price", "", "/api/nft/list/prepare", map[string]any{"contractId": a2, "price": "-1"}, bob, 400, store.CodeInvalidRequest},
			{"list finer than USDCx", "", "/api/nft/list/prepare", map[string]any{"contractId": a2, "price": "1.0000001"}, bob, 400, store.CodeInvalidRequest},
			{"list at a JSON number", "", "/api/nft/list/prepare", map[string]any{"contractId": a2, "price": 1}, bob, 400, store.CodeInvalidRequest},
			{"list at an exponent", "", "/api/nft/list/prepare", map[string]any{"contractId": a2, "price": "1e3"}, bob, 400, store.CodeInvalidRequest},
			{"list above the price cap", "", "/api/nft/list/prepare", map[string]any{"contractId": a2, "price": "1000000000001"}, bob, 400, store.CodeInvalidRequest},
			{"list without a price", "", "/api/nft/list/prepare", map[string]any{"contractId": a2}, bob, 400, store.CodeInvalidRequest},
			{"list expiring in the past", "", "/api/nft/list/prepare", map[string]any{"contractId": a2, "price": "1", "expiresAt": now.Unix()}, bob, 400, store.CodeInvalidRequest},
			{"list expiring after year 9999", "", "/api/nft/list/prepare", map[string]any{"contractId": a2, "price": "1", "expiresAt": int64(1) << 50}, bob, 400, store.CodeInvalidRequest},
			{"list expiring at a fraction", "", "/api/nft/list/prepare", map[string]any{"contractId": a2, "price": "1", "expiresAt": 1.5e9 + 0.5}, bob, 400, store.CodeInvalidRequest},
			{"batch list of none", "", "/api/nft/list/batch/atomic/prepare", map[string]any{"items": []any{}}, bob, 400, store.CodeInvalidRequest},
			{"batch list naming an NFT twice", "", "/api/nft/list/batch/atomic/prepare", map[string]any{"items": []map[string]string{{"contractId": a2, "price": "1"}, {"contractId": a2, "price": "2"}}}, bob, 400, store.CodeInvalidRequest},
			{"batch list over the batch limit", "", "/api/nft/list/batch/atomic/prepare", map[string]any{"items": overBatch}, bob, 400, store.CodeInvalidRequest},
			{"batch list with one unknown NFT", "", "/api/nft/list/batch/atomic/prepare", map[string]any{"items": []map[string]string{{"contractId": a2, "price": "1"}, {"contractId": ghostNFT, "price": "1"}}}, bob, 404, store.CodeNotFound},

			// Cancel.
			{"cancel an unknown listing", "", "/api/nft/list/" + ghostNFT + "/cancel/prepare", map[string]any{}, alice, 404, store.CodeNotFound},
			{"cancel another party's listing", "", "/api/nft/list/" + cidA + "/cancel/prepare", map[string]any{}, bob, 403, store.CodePartyMismatch},
			{"cancel a sold listing", "", "/api/nft/list/" + cidSold + "/cancel/prepare", map[string]any{}, bob, 409, store.CodeConflict},
			{"cancel with a body", "", "/api/nft/list/" + cidA + "/cancel/prepare", map[string]any{"cid": cidA}, alice, 400, store.CodeInvalidRequest},
			{"batch cancel of none", "", "/api/nft/listing/batch/cancel/prepare", map[string]any{"cids": []string{}}, alice, 400, store.CodeInvalidRequest},
			{"batch cancel naming one twice", "", "/api/nft/listing/batch/cancel/prepare", map[string]any{"cids": []string{cidA, cidA}}, alice, 400, store.CodeInvalidRequest},
			{"batch cancel with another's listing", "", "/api/nft/listing/batch/cancel/prepare", map[string]any{"cids": []string{cidA, cidDave}}, bob, 403, store.CodePartyMismatch},

			// Buy.
			{"buy without a cid", "", "/api/nft/buy/atomic/prepare", map[string]any{}, bob, 400, store.CodeInvalidRequest},
			{"buy an unknown listing", "", "/api/nft/buy/atomic/prepare", map[string]any{"cid": ghostNFT}, bob, 404, store.CodeNotFound},
			{"buy one's own listing", "", "/api/nft/buy/atomic/prepare", map[string]any{"cid": cidA}, alice, 409, store.CodeConflict},
			{"buy an expired listing", "", "/api/nft/buy/atomic/prepare", map[string]any{"cid": cidExp}, bob, 409, store.CodeConflict},
			{"buy a sold listing", "", "/api/nft/buy/atomic/prepare", map[string]any{"cid": cidSold}, carol, 409, store.CodeConflict},
			{"buy without the money", "", "/api/nft/buy/atomic/prepare", map[string]any{"cid": cidA}, poor, 409, store.CodeInsufficientFunds},
			{"buy when the creator cannot receive its royalty", "", "/api/nft/buy/atomic/prepare", map[string]any{"cid": cidDave}, bob, 409, store.CodePreapprovalRequired},

			// Sweep.
			{"sweep over maxTotal", "", "/api/nft/sweep/buy/prepare", map[string]any{"collectionId": m.col.ID, "cids": []string{cidA}, "maxTotal": "9.999999"}, bob, 409, store.CodeConflict},
			{"sweep of the cheapest over maxTotal", "", "/api/nft/sweep/buy/prepare", map[string]any{"collectionId": m.col.ID, "count": 1, "maxTotal": "9"}, bob, 409, store.CodeConflict},
			{"sweep of more than are listed", "", "/api/nft/sweep/buy/prepare", map[string]any{"collectionId": m.col.ID, "count": 2, "maxTotal": "100"}, bob, 409, store.CodeConflict},
			{"sweep without maxTotal", "", "/api/nft/sweep/buy/prepare", map[string]any{"collectionId": m.col.ID, "count": 1}, bob, 400, store.CodeInvalidRequest},
			{"sweep with maxTotal 0", "", "/api/nft/sweep/buy/prepare", map[string]any{"collectionId": m.col.ID, "count": 1, "maxTotal": "0"}, bob, 400, store.CodeInvalidRequest},
			{"sweep with maxTotal finer than USDCx", "", "/api/nft/sweep/buy/prepare", map[string]any{"collectionId": m.col.ID, "count": 1, "maxTotal": "10.0000001"}, bob, 400, store.CodeInvalidRequest},
			{"sweep naming cids and count", "", "/api/nft/sweep/buy/prepare", map[string]any{"collectionId": m.col.ID, "cids": []string{cidA}, "count": 1, "maxTotal": "100"}, bob, 400, store.CodeInvalidRequest},
			{"sweep naming neither", "", "/api/nft/sweep/buy/prepare", map[string]any{"collectionId": m.col.ID, "maxTotal": "100"}, bob, 400, store.CodeInvalidRequest},
			{"sweep over the batch limit", "", "/api/nft/sweep/buy/prepare", map[string]any{"collectionId": m.col.ID, "count": store.MaxBatch + 1, "maxTotal": "100"}, bob, 400, store.CodeInvalidRequest},
			{"sweep of -1", "", "/api/nft/sweep/buy/prepare", map[string]any{"collectionId": m.col.ID, "count": -1, "maxTotal": "100"}, bob, 400, store.CodeInvalidRequest},
			{"sweep naming a listing twice", "", "/api/nft/sweep/buy/prepare", map[string]any{"collectionId": m.col.ID, "cids": []string{cidA, cidA}, "maxTotal": "100"}, bob, 400, store.CodeInvalidRequest},
			{"sweep of another collection's listing", "", "/api/nft/sweep/buy/prepare", map[string]any{"collectionId": m.col.ID, "cids": []string{cidDave}, "maxTotal": "100"}, bob, 400, store.CodeInvalidRequest},
			{"sweep of an unknown collection", "", "/api/nft/sweep/buy/prepare", map[string]any{"collectionId": "nope", "count": 1, "maxTotal": "100"}, bob, 404, store.CodeNotFound},
			{"sweep of an unknown listing", "", "/api/nft/sweep/buy/prepare", map[string]any{"collectionId": m.col.ID, "cids": []string{ghostNFT}, "maxTotal": "100"}, bob, 404, store.CodeNotFound},
			{"sweep of one's own listing", "", "/api/nft/sweep/buy/prepare", map[string]any{"collectionId": m.col.ID, "cids": []string{cidA}, "maxTotal": "100"}, alice, 409, store.CodeConflict},
			{"sweep with an expired listing", "", "/api/nft/sweep/buy/prepare", map[string]any{"collectionId": m.col.ID, "cids": []string{cidA, cidExp}, "maxTotal": "100"}, bob, 409, store.CodeConflict},
			{"sweep with a sold listing", "", "/api/nft/sweep/buy/prepare", map[string]any{"collectionId": m.col.ID, "cids": []string{cidA, cidSold}, "maxTotal": "100"}, carol, 409, store.CodeConflict},

			// Transfer and burn.
			{"transfer an unknown NFT", "", "/api/nft/transfer/prepare", map[string]any{"contractId": ghostNFT, "receiver": bob.ID}, alice, 404, store.CodeNotFound},
			{"transfer another party's NFT", "", "/api/nft/transfer/prepare", map[string]any{"contractId": a2, "receiver": carol.ID}, alice, 403, store.CodePartyMismatch},
			{"transfer to an unknown party", "", "/api/nft/transfer/prepare", map[string]any{"contractId": a2, "receiver": ghostParty}, bob, 404, store.CodePartyNotFound},
			{"transfer to a malformed party", "", "/api/nft/transfer/prepare", map[string]any{"contractId": a2, "receiver": "carol"}, bob, 400, store.CodeInvalidRequest},
			{"transfer to oneself", "", "/api/nft/transfer/prepare", map[string]any{"contractId": a2, "receiver": bob.ID}, bob, 400, store.CodeInvalidRequest},
			{"transfer without a receiver", "", "/api/nft/transfer/prepare", map[string]any{"contractId": a2}, bob, 400, store.CodeInvalidRequest},
			{"transfer to a party without an NFT preapproval", "", "/api/nft/transfer/prepare", map[string]any{"contractId": a2, "receiver": carol.ID}, bob, 409, store.CodePreapprovalRequired},
			{"transfer naming another owner", "", "/api/nft/transfer/prepare", map[string]any{"contractId": a2, "receiver": alice.ID, "owner": alice.ID}, bob, 403, store.CodePartyMismatch},
			{"burn an unknown NFT", "", "/api/nft/burn/prepare", map[string]any{"contractId": ghostNFT}, alice, 404, store.CodeNotFound},
			{"burn another party's NFT", "", "/api/nft/burn/prepare", map[string]any{"contractId": a2}, alice, 403, store.CodePartyMismatch},
			{"burn a contract no longer live", "", "/api/nft/burn/prepare", map[string]any{"contractId": a[2]}, alice, 409, store.CodeConflict},
			{"burn naming another owner", "", "/api/nft/burn/prepare", map[string]any{"contractId": a2, "owner": alice.ID}, bob, 403, store.CodePartyMismatch},
		})

		// Executes: a valid prepare, executed wrongly.
		listHash := m.prepareOK(bob, "/api/nft/list/prepare", map[string]any{"contractId": a2, "price": "1"})
		var junk [32]byte
		rand.Read(junk[:])
		m.expectRefused(t, parties, []errorCase{
			{"execute signed by another key", "", "/api/nft/list/execute", executeBody(alice.Party, listHash), bob, 401, store.CodeInvalidSignature},
			{"execute with another party's token", "", "/api/nft/list/execute", executeBody(bob.Party, listHash), alice, 403, store.CodePartyMismatch},
			{"execute at another endpoint", "", "/api/nft/buy/atomic/execute", executeBody(bob.Party, listHash), bob, 404, store.CodePreparedNotFound},
			{"execute an unknown hash", "", "/api/nft/list/execute", executeBody(bob.Party, base64.StdEncoding.EncodeToString(junk[:])), bob, 404, store.CodePreparedNotFound},
			{"execute without a signature", "", "/api/nft/list/execute", map[string]string{"preparedTransactionHash": listHash}, bob, 400, store.CodeInvalidRequest},
			{"execute with a short hash", "", "/api/nft/list/execute", map[string]string{"preparedTransactionHash": "AAAA", "signature": "AAAA"}, bob, 400, store.CodeInvalidRequest},
			{"execute of malformed JSON", "", "/api/nft/list/execute", "[]", bob, 400, store.CodeInvalidRequest},
			{"execute without a token", "", "/api/nft/list/execute", executeBody(bob.Party, listHash), nil, 401, store.CodeUnauthenticated},
		})

		// Stale: what a prepared transaction consumes went since it was prepared. Bob gets
		// holdings enough that his buy and his mints spend different ones.
		m.walletTap(bob, store.USDCx, "100")
		m.walletTap(bob, store.USDCx, "100")
		burnHash := m.prepareOK(bob, "/api/nft/burn/prepare", map[string]any{"contractId": a2})
		transferHash := m.prepareOK(bob, "/api/nft/transfer/prepare", map[string]any{"contractId": a2, "receiver": alice.ID})
		buyHash := m.prepareOK(bob, "/api/nft/buy/atomic/prepare", map[string]any{"cid": cidA})
		cancelHash := m.prepareOK(alice, "/api/nft/list/"+cidA+"/cancel/prepare", map[string]any{})
		mintHash1 := m.prepareOK(bob, "/api/nft/mint/batch/atomic/prepare", map[string]any{"collectionId": m.col.ID, "quantity": 2})
		mintHash2 := m.prepareOK(bob, "/api/nft/mint/batch/atomic/prepare", map[string]any{"collectionId": m.col.ID, "quantity": 2})
		m.do("POST", "/api/nft/list/execute", executeBody(bob.Party, listHash), bearer(bob.tok)).ok(t)
		m.do("POST", "/api/nft/buy/atomic/execute", executeBody(bob.Party, buyHash), bearer(bob.tok)).ok(t)
		var minted struct {
			ContractIDs []string `json:"contractIds"`
		}
		decodeAs(t, m.do("POST", "/api/nft/mint/batch/atomic/execute", executeBody(bob.Party, mintHash1), bearer(bob.tok)), &minted)
		m.expectRefused(t, parties, []errorCase{
			{"burn of an NFT listed since", "", "/api/nft/burn/execute", executeBody(bob.Party, burnHash), bob, 409, store.CodeStale},
			{"transfer of an NFT listed since", "", "/api/nft/transfer/execute", executeBody(bob.Party, transferHash), bob, 409, store.CodeStale},
			{"cancel of a listing sold since", "", "/api/nft/list/cancel/execute", executeBody(alice.Party, cancelHash), alice, 409, store.CodeStale},
			{"mint over the per-party limit reached since", "", "/api/nft/mint/batch/atomic/execute", executeBody(bob.Party, mintHash2), bob, 409, store.CodeStale},
		})

		// Expired: a prepared transaction past its lifetime, and a listing that expired between
		// prepare and execute.
		cidLate := m.listUntil(bob, minted.ContractIDs[0], "2", m.clock.Now().Add(time.Minute))
		lateBuy := m.prepareOK(alice, "/api/nft/buy/atomic/prepare", map[string]any{"cid": cidLate})
		m.clock.Advance(2 * time.Minute)
		m.expectRefused(t, parties, []errorCase{
			{"buy of a listing expired since", "", "/api/nft/buy/atomic/execute", executeBody(alice.Party, lateBuy), alice, 409, store.CodeStale},
		})
		m.clock.Advance(10 * time.Minute)
		m.expectRefused(t, parties, []errorCase{
			{"execute of an expired prepared transaction", "", "/api/nft/mint/batch/atomic/execute", executeBody(bob.Party, mintHash2), bob, http.StatusGone, store.CodePreparedExpired},
		})
	})
}

func TestNFTErrors_APreapprovalThatExpiresBetweenPrepareAndExecuteIs409AndChangesNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b, func(sc *store.Config, rc *Config) { sc.PreapprovalTTL = 5 * time.Minute })
		m := &market{testAPI: a, creator: a.walletUser("creator")}
		m.col = m.addCollection(t, "apes", m.creator.ID, collectionOpts{currency: store.USDCx, royaltyBps: 500, price: "0"})
		m.preapprove(m.creator, "usdcx")
		alice, bob := m.funded("alice"), m.funded("bob")
		m.clock.Advance(3 * time.Minute)
		nfts := m.mintOf(alice, m.col.ID, 2)
		cid := m.list(alice, nfts[0], "10")
		buy := m.prepareOK(bob, "/api/nft/buy/atomic/prepare", map[string]any{"cid": cid})
		transfer := m.prepareOK(alice, "/api/nft/transfer/prepare", map[string]any{"contractId": nfts[1], "receiver": bob.ID})
		m.clock.Advance(3 * time.Minute) // the preapprovals expired; the prepared transactions live on
		m.expectRefused(t, []string{alice.ID, bob.ID, m.creator.ID}, []errorCase{
			{"buy paying a royalty to a creator whose USDCx preapproval expired", "", "/api/nft/buy/atomic/execute", executeBody(bob.Party, buy), bob, 409, store.CodePreapprovalRequired},
			{"transfer to a receiver whose NFT preapproval expired", "", "/api/nft/transfer/execute", executeBody(alice.Party, transfer), alice, 409, store.CodePreapprovalRequired},
			{"a new buy prepare", "", "/api/nft/buy/atomic/prepare", map[string]any{"cid": cid}, bob, 409, store.CodePreapprovalRequired},
		})
	})
}

func TestNFTErrors_MintLimitsAndThePhaseAreCheckedAgainAtExecute(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		m := newMarket(t, b, collectionOpts{noPhase: true, supply: 5})
		now := m.clock.Now()
		two := 2
		if _, err := m.store.AddPhase(ctx, store.PhaseSpec{Collection: m.col.ID, Name: "short", Price: "1", Start: now.Add(-time.Minute), End: now.Add(5 * time.Minute), PerPartyLimit: 5, Supply: &two}); err != nil {
			t.Fatal(err)
		}
		alice, bob, carol := m.funded("alice"), m.funded("bob"), m.funded("carol")
		body := map[string]any{"collectionId": m.col.ID, "quantity": 2}
		first := m.prepareOK(alice, "/api/nft/mint/batch/atomic/prepare", body)
		second := m.prepareOK(bob, "/api/nft/mint/batch/atomic/prepare", body)
		one := m.prepareOK(carol, "/api/nft/mint/atomic/prepare", map[string]any{"collectionId": m.col.ID})
		m.do("POST", "/api/nft/mint/batch/atomic/execute", executeBody(alice.Party, first), bearer(alice.tok)).ok(t)
		parties := []string{alice.ID, bob.ID, carol.ID, m.creator.ID}
		m.expectRefused(t, parties, []errorCase{
			{"batch mint over the phase supply reached since", "", "/api/nft/mint/batch/atomic/execute", executeBody(bob.Party, second), bob, 409, store.CodeStale},
			{"mint over the phase supply reached since", "", "/api/nft/mint/atomic/execute", executeBody(carol.Party, one), carol, 409, store.CodeStale},
		})
		// A phase that ended between prepare and execute mints nothing.
		if _, err := m.store.AddPhase(ctx, store.PhaseSpec{Collection: m.col.ID, Name: "next", Price: "1", Start: now.Add(5 * time.Minute), End: now.Add(10 * time.Minute), PerPartyLimit: 5}); err != nil {
			t.Fatal(err)
		}
		m.clock.Advance(6 * time.Minute)
		late := m.prepareOK(bob, "/api/nft/mint/atomic/prepare", map[string]any{"collectionId": m.col.ID})
		m.clock.Advance(5 * time.Minute)
		m.expectRefused(t, parties, []errorCase{
			{"mint after its phase ended", "", "/api/nft/mint/atomic/execute", executeBody(bob.Party, late), bob, 409, store.CodeStale},
		})
		if c := m.collection(); c.Minted != 2 || c.Phases[0].Minted != 2 || c.Phases[1].Minted != 0 {
			t.Errorf("collection %+v", c)
		}
	})
}
