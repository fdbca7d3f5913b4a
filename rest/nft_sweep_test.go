package rest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"marketd/store"
	"marketd/store/storetest"
)

// sweepReceipt is a sweep execute's answer.
type sweepReceipt struct {
	UpdateID    string             `json:"updateId"`
	Status      string             `json:"status"`
	ContractIDs []string           `json:"contractIds"`
	Settlement  store.Settlement   `json:"settlement"`
	Items       []store.Settlement `json:"items"`
}

// usdcx is u's spendable USDCx.
func (m *market) usdcx(u string) decimal.Decimal {
	m.t.Helper()
	bs, err := m.store.Balances(context.Background(), u)
	if err != nil {
		m.t.Fatal(err)
	}
	for _, b := range bs {
		if b.Instrument == store.USDCx {
			return b.Amount.Decimal()
		}
	}
	m.t.Fatalf("no USDCx balance for %s", u)
	return decimal.Zero
}

// share is bps basis points of price rounded down to USDCx's 6 decimals.
func share(price string, bps int64) decimal.Decimal {
	return decimal.RequireFromString(price).Mul(decimal.New(bps, -4)).Truncate(6)
}

// sweepMarket is a USDCx collection (royalty 500 bps) with listings by two sellers.
type sweepMarket struct {
	*market
	alice, bob, carol *walletUser
	op                string
}

func newSweepMarket(t *testing.T, b storetest.Backend) *sweepMarket {
	m := newMarket(t, b, collectionOpts{currency: store.USDCx, royaltyBps: 500, price: "0", supply: 12})
	m.preapprove(m.creator, "usdcx")
	op, err := m.store.OperatorParty(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return &sweepMarket{market: m, alice: m.funded("alice"), bob: m.funded("bob"), carol: m.funded("carol"), op: op}
}

func TestNFTSweep_NamedListingsSettleEveryShareInOneTransaction(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newSweepMarket(t, b)
		an := m.mintOf(m.alice, m.col.ID, 2)
		bn := m.mintOf(m.bob, m.col.ID, 2)
		prices := []string{"10.000039", "3.5", "7.123457"}
		cids := []string{m.list(m.alice, an[0], prices[0]), m.list(m.alice, an[1], prices[1]), m.list(m.bob, bn[0], prices[2])}
		m.list(m.bob, bn[1], "1") // not named: stays listed
		parties := []string{m.alice.ID, m.bob.ID, m.carol.ID, m.creator.ID, m.op}
		before := map[string]decimal.Decimal{}
		for _, p := range parties {
			before[p] = m.usdcx(p)
		}
		prep := m.do("POST", "/api/nft/sweep/buy/prepare", map[string]any{"collectionId": m.col.ID, "cids": cids, "maxTotal": "20.623496"}, bearer(m.carol.tok)).ok(t)
		first := m.walletExecute("/api/nft/sweep/buy", prep, m.carol.Party, m.carol.tok).ok(t)
		var r sweepReceipt
		decodeAs(t, first, &r)
		// Executing it again answers the first receipt and applies nothing twice.
		state := m.marketState(t, parties...)
		if again := m.walletExecute("/api/nft/sweep/buy", prep, m.carol.Party, m.carol.tok).ok(t); string(again.body) != string(first.body) {
			t.Errorf("replayed sweep answered %s, first %s", again.body, first.body)
		}
		if after := m.marketState(t, parties...); after != state {
			t.Errorf("a replayed sweep changed the market:\n%s\n%s", state, after)
		}
		if r.Status != "committed" || len(r.ContractIDs) != 3 || len(r.Items) != 3 {
			t.Fatalf("sweep receipt %+v", r)
		}
		total, fees, royalties := decimal.Zero, decimal.Zero, decimal.Zero
		sellers := map[string]decimal.Decimal{}
		for i, p := range prices {
			fee, royalty := share(p, 250), share(p, 500)
			total, fees, royalties = total.Add(decimal.RequireFromString(p)), fees.Add(fee), royalties.Add(royalty)
			seller := m.alice.ID
			if i == 2 {
				seller = m.bob.ID
			}
			sellers[seller] = sellers[seller].Add(decimal.RequireFromString(p).Sub(fee).Sub(royalty))
			it := r.Items[i]
			if !it.Fee.Amount.Decimal().Equal(fee) || !it.Royalty.Amount.Decimal().Equal(royalty) || *it.Seller.Party != seller ||
				!it.Fee.Amount.Add(it.Royalty.Amount).Add(it.Seller.Amount).Equal(it.Price) {
				t.Errorf("item %d settlement %+v", i, it)
			}
		}
		st := r.Settlement
		if !st.Price.Decimal().Equal(total) || !st.Fee.Amount.Decimal().Equal(fees) || !st.Royalty.Amount.Decimal().Equal(royalties) ||
			!st.Fee.Amount.Add(st.Royalty.Amount).Add(st.Seller.Amount).Equal(st.Price) || st.Seller.Party != nil ||
			*st.Fee.Party != m.op || *st.Royalty.Party != m.creator.ID {
			t.Errorf("sweep settlement %+v; want price %s, fees %s, royalties %s, seller null (two sellers)", st, total, fees, royalties)
		}
		want := map[string]decimal.Decimal{
			m.carol.ID: before[m.carol.ID].Sub(total), m.alice.ID: before[m.alice.ID].Add(sellers[m.alice.ID]),
			m.bob.ID: before[m.bob.ID].Add(sellers[m.bob.ID]), m.creator.ID: before[m.creator.ID].Add(royalties), m.op: before[m.op].Add(fees),
		}
		for _, p := range parties {
			if got := m.usdcx(p); !got.Equal(want[p]) {
				t.Errorf("%s has %s USDCx, want %s", p, got, want[p])
			}
		}
		for i, nft := range []string{an[0], an[1], bn[0]} {
			d := m.nft(nft)
			if d.Owner != m.carol.ID || d.Listing != nil || d.ContractID != r.ContractIDs[i] {
				t.Errorf("swept NFT %d: %+v", i, d.nftView)
			}
			if d.History[0].Kind != store.EventSold || *d.History[0].To != m.carol.ID || d.History[0].Price.String() != prices[i] {
				t.Errorf("swept NFT %d history %+v", i, d.History[0])
			}
		}
		c := m.collection()
		if c.ListedCount != 1 || c.FloorPrice == nil || c.FloorPrice.String() != "1" || !c.Volume.Decimal().Equal(total) || c.Owners != 2 {
			t.Errorf("collection after the sweep %+v", c)
		}
	})
}

func TestNFTSweep_CountBuysTheCheapestOthersListingsNotExpiredOnes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newSweepMarket(t, b)
		an := m.mintOf(m.alice, m.col.ID, 4) // serials 1-4
		bn := m.mintOf(m.bob, m.col.ID, 2)   // serials 5-6
		cn := m.mintOf(m.carol, m.col.ID, 1) // serial 7
		m.list(m.alice, an[0], "5")
		m.list(m.alice, an[1], "3")
		m.listUntil(m.alice, an[2], "0.5", m.clock.Now().Add(time.Minute)) // expires before the sweep
		m.list(m.alice, an[3], "7")
		m.list(m.bob, bn[0], "3") // ties with serial 2 at 3: serial 2 first
		m.list(m.bob, bn[1], "9")
		m.list(m.carol, cn[0], "1") // the buyer's own: never swept
		m.clock.Advance(2 * time.Minute)
		var r sweepReceipt
		decodeAs(t, m.pe(m.carol, "/api/nft/sweep/buy", map[string]any{"collectionId": m.col.Slug, "count": 3, "maxTotal": "11"}), &r)
		var bought []int
		for _, cid := range r.ContractIDs {
			bought = append(bought, m.nft(cid).Serial)
		}
		if !slices.Equal(bought, []int{2, 5, 1}) || r.Settlement.Price.String() != "11" {
			t.Errorf("swept serials %v for %s, want [2 5 1] for 11", bought, r.Settlement.Price)
		}
		if d := m.nft(an[2]); d.Owner != m.alice.ID {
			t.Errorf("the expired listing was swept: %+v", d.nftView)
		}
		if d := m.nft(cn[0]); d.Listing == nil {
			t.Errorf("the buyer's own listing was taken: %+v", d.nftView)
		}
	})
}

func TestNFTSweep_IsAllOrNothingWhenAListingGoesBetweenPrepareAndExecute(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newSweepMarket(t, b)
		dave := m.funded("dave")
		parties := []string{m.alice.ID, m.bob.ID, m.carol.ID, dave.ID, m.creator.ID}
		cases := []struct {
			name string
			gone func(nft, cid string) // makes the second listing go
		}{
			{"cancelled", func(nft, cid string) { m.pe(m.bob, "/api/nft/list/"+cid+"/cancel", map[string]any{}).ok(t) }},
			{"sold", func(nft, cid string) { m.buy(dave, cid) }},
			{"expired", func(nft, cid string) { m.clock.Advance(2 * time.Minute) }},
			{"transferred", func(nft, cid string) {
				m.pe(m.bob, "/api/nft/transfer", map[string]string{"contractId": nft, "receiver": dave.ID}).ok(t)
			}},
			{"burned", func(nft, cid string) { m.pe(m.bob, "/api/nft/burn", map[string]string{"contractId": nft}).ok(t) }},
		}
		for _, c := range cases {
			a := m.mintOf(m.alice, m.col.ID, 1)[0]
			bn := m.mintOf(m.bob, m.col.ID, 1)[0]
			cidA := m.list(m.alice, a, "2")
			cidB := m.listUntil(m.bob, bn, "3", m.clock.Now().Add(time.Minute))
			// A named sweep and a count sweep, both naming the two listings at prepare.
			var preps []*testResponse
			for _, body := range []map[string]any{
				{"collectionId": m.col.ID, "cids": []string{cidA, cidB}, "maxTotal": "5"},
				{"collectionId": m.col.ID, "count": 2, "maxTotal": "5"},
			} {
				preps = append(preps, m.do("POST", "/api/nft/sweep/buy/prepare", body, bearer(m.carol.tok)).ok(t))
			}
			c.gone(bn, cidB)
			for i, prep := range preps {
				before := m.marketState(t, parties...)
				r := m.walletExecute("/api/nft/sweep/buy", prep, m.carol.Party, m.carol.tok)
				t.Run(c.name, func(t *testing.T) { r.wantProblem(t, 409, store.CodeStale) })
				if after := m.marketState(t, parties...); after != before {
					t.Errorf("%s (sweep %d): the refused sweep changed the market:\nbefore\n%s\nafter\n%s", c.name, i, before, after)
				}
			}
			// What is left is still for sale, and buyable on its own.
			if d := m.nft(a); d.Listing == nil || d.Listing.CID != cidA || d.Owner != m.alice.ID {
				t.Fatalf("%s: alice's listing after the refused sweep %+v", c.name, d.nftView)
			}
			m.pe(m.alice, "/api/nft/list/"+cidA+"/cancel", map[string]any{}).ok(t)
		}
	})
}
