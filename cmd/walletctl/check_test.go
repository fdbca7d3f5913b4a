package main

import (
	"strings"
	"testing"

	"marketd/store"
)

// The checks judge the decoded transaction, whatever the server or the path made of it: these
// are transactions no honest server prepares, each refused with what it would do.
func TestIntents_RefuseWhatWasNotAsked(t *testing.T) {
	const me, bob, eve, op, creator = "me::1220aa", "bob::1220bb", "eve::1220ee", "op::1220cc", "creator::1220dd"
	a := store.MustAmount
	tx := func(kind string, effects any) *store.DecodedPrepared {
		return &store.DecodedPrepared{Kind: kind, ActAs: me, Effects: effects}
	}
	send := func(outs ...store.NewHolding) *store.DecodedPrepared {
		return tx(store.KindCCTransfer, &store.TransferEffects{Sender: me, Receiver: bob, Instrument: store.CC, Amount: a("10"), Fee: store.Zero,
			Inputs: []store.SpentHolding{{CID: "h1", Amount: a("60")}, {CID: "h2", Amount: a("40")}}, Outputs: outs})
	}
	sale := func(listing, seller, price, fee, royalty string) store.Purchase {
		rest := a(price).Sub(a(fee)).Sub(a(royalty))
		return store.Purchase{Listing: listing, CollectionID: "col_1", Seller: seller, Price: a(price), Settlement: store.Settlement{Price: a(price),
			Fee: store.Share{Party: ptr(op), Amount: a(fee)}, Royalty: store.Share{Party: ptr(creator), Amount: a(royalty)}, Seller: store.Share{Party: ptr(seller), Amount: rest}}}
	}
	buy := func(kind string, maxTotal *store.Amount, ps []store.Purchase, outs ...store.NewHolding) *store.DecodedPrepared {
		return tx(kind, &store.BuyEffects{Buyer: me, CollectionID: "col_1", Purchases: ps, MaxTotal: maxTotal,
			Payment: &store.Payment{Currency: store.CC, Total: a("10"), Inputs: []store.SpentHolding{{CID: "h1", Amount: a("100")}}, Outputs: outs}})
	}
	maxTotal := a("15")
	lock := func(inst store.Instrument, amount, in string) store.LockedFunds {
		return store.LockedFunds{Instrument: inst, Amount: a(amount), Inputs: []store.SpentHolding{{CID: "h1", Amount: a(in)}}, Change: a(in).Sub(a(amount))}
	}
	for _, tc := range []struct {
		name  string
		want  intent
		tx    *store.DecodedPrepared
		says  string // "" when the transaction is what was asked
		asked string
	}{
		{"a send", wantSend(bob, a("10")), send(store.NewHolding{Owner: bob, Amount: a("10")}, store.NewHolding{Owner: me, Amount: a("90")}), "", ""},
		{"a send in two holdings", wantSend(bob, a("10.0")), send(store.NewHolding{Owner: bob, Amount: a("4")}, store.NewHolding{Owner: bob, Amount: a("6")}, store.NewHolding{Owner: me, Amount: a("90")}), "", ""},
		{"the change to a third party", wantSend(bob, a("10")), send(store.NewHolding{Owner: bob, Amount: a("10")}, store.NewHolding{Owner: eve, Amount: a("90")}),
			"would send 90 CC to " + eve, "send 10 CC to " + bob},
		{"a slice to a third party", wantSend(bob, a("10")), send(store.NewHolding{Owner: bob, Amount: a("10")}, store.NewHolding{Owner: eve, Amount: a("1")}, store.NewHolding{Owner: me, Amount: a("89")}),
			"would send 1 CC to " + eve, ""},
		{"more to the receiver", wantSend(bob, a("10")), send(store.NewHolding{Owner: bob, Amount: a("60")}, store.NewHolding{Owner: me, Amount: a("40")}),
			"would send 60 CC to " + bob, ""},
		{"change that goes nowhere", wantSend(bob, a("10")), send(store.NewHolding{Owner: bob, Amount: a("10")}, store.NewHolding{Owner: me, Amount: a("50")}),
			"return 50 CC to you", ""},
		{"a holding of nothing", wantSend(bob, a("10")), send(store.NewHolding{Owner: bob, Amount: a("10")}, store.NewHolding{Owner: me, Amount: a("90")}, store.NewHolding{Owner: eve, Amount: a("0")}),
			"", ""}, // refused below by its own check, whatever the order
		{"another kind", wantSend(bob, a("10")), tx(store.KindTap, &store.TapEffects{Owner: me, Instrument: store.CC, Amount: a("10")}),
			"would credit 10 CC to " + me, ""},
		{"a buy", wantBuy("buy listing l1", store.KindNFTBuy, "", []string{"l1"}, 0, nil), buy(store.KindNFTBuy, nil, []store.Purchase{sale("l1", bob, "10", "0.25", "0.5")},
			store.NewHolding{Owner: bob, Amount: a("9.25")}, store.NewHolding{Owner: creator, Amount: a("0.5")}, store.NewHolding{Owner: op, Amount: a("0.25")}, store.NewHolding{Owner: me, Amount: a("90")}), "", ""},
		{"a buy paying a third party", wantBuy("buy listing l1", store.KindNFTBuy, "", []string{"l1"}, 0, nil), buy(store.KindNFTBuy, nil, []store.Purchase{sale("l1", bob, "10", "0.25", "0.5")},
			store.NewHolding{Owner: bob, Amount: a("9.25")}, store.NewHolding{Owner: creator, Amount: a("0.5")}, store.NewHolding{Owner: op, Amount: a("0.25")}, store.NewHolding{Owner: eve, Amount: a("5")}, store.NewHolding{Owner: me, Amount: a("85")}),
			"pay 5 CC to " + eve + ", who is due 0", "buy listing l1"},
		{"a buy overpaying the seller", wantBuy("buy listing l1", store.KindNFTBuy, "", []string{"l1"}, 0, nil), buy(store.KindNFTBuy, nil, []store.Purchase{sale("l1", bob, "10", "0.25", "0.5")},
			store.NewHolding{Owner: bob, Amount: a("19.25")}, store.NewHolding{Owner: creator, Amount: a("0.5")}, store.NewHolding{Owner: op, Amount: a("0.25")}, store.NewHolding{Owner: me, Amount: a("80")}),
			"pay 19.25 CC to " + bob + ", who is due 9.25", ""},
		{"a sweep over its maximum", wantBuy("sweep", store.KindNFTSweep, "col_1", nil, 2, &maxTotal), buy(store.KindNFTSweep, &maxTotal,
			[]store.Purchase{sale("l1", bob, "10", "0", "0"), sale("l2", bob, "6", "0", "0")}, store.NewHolding{Owner: bob, Amount: a("16")}, store.NewHolding{Owner: me, Amount: a("84")}),
			"pay 16 in all, more than the 15 you allowed", ""},
		{"a sweep of a look-alike collection", wantSweep(wantBuy("sweep", store.KindNFTSweep, "col_1", nil, 1, &maxTotal), "apes", nil), buy(store.KindNFTSweep, &maxTotal,
			[]store.Purchase{sale("l1", bob, "10", "0", "0")}, store.NewHolding{Owner: bob, Amount: a("10")}, store.NewHolding{Owner: me, Amount: a("90")}),
			"its collection slug is none, not apes", ""},
		{"a sweep of fewer", wantBuy("sweep", store.KindNFTSweep, "col_1", nil, 2, &maxTotal), buy(store.KindNFTSweep, &maxTotal,
			[]store.Purchase{sale("l1", bob, "10", "0", "0")}, store.NewHolding{Owner: bob, Amount: a("10")}, store.NewHolding{Owner: me, Amount: a("90")}),
			"its number of listings is 1, not 2", ""},
		{"a mint of a look-alike collection", wantMint("orbit-badges", "col_1", 1, nil), tx(store.KindNFTMint, &store.MintEffects{Minter: me, CollectionID: "col_1", Slug: "orbit-badges-x", Quantity: 1, Price: a("5"), Currency: store.CC, Creator: creator,
			Payment: &store.Payment{Currency: store.CC, Total: a("5"), Inputs: []store.SpentHolding{{CID: "h1", Amount: a("5")}}, Outputs: []store.NewHolding{{Owner: creator, Amount: a("5")}}}}),
			"its collection slug is orbit-badges-x, not orbit-badges", "mint 1 NFT(s) of orbit-badges"},
		{"a mint over the maximum price", wantMint("orbit-badges", "col_1", 1, &maxTotal), tx(store.KindNFTMint, &store.MintEffects{Minter: me, CollectionID: "col_1", Slug: "orbit-badges", Quantity: 1, Price: a("900"), Currency: store.CC, Creator: creator,
			Payment: &store.Payment{Currency: store.CC, Total: a("900"), Inputs: []store.SpentHolding{{CID: "h1", Amount: a("900")}}, Outputs: []store.NewHolding{{Owner: creator, Amount: a("900")}}}}),
			"pay 900 CC an NFT, more than the 15 you allowed", ""},
		{"a mint paying another than the creator", wantMint("col_1", "col_1", 2, nil), tx(store.KindNFTMint, &store.MintEffects{Minter: me, CollectionID: "col_1", Quantity: 2, Price: a("5"), Currency: store.CC, Creator: creator,
			Payment: &store.Payment{Currency: store.CC, Total: a("10"), Inputs: []store.SpentHolding{{CID: "h1", Amount: a("10")}}, Outputs: []store.NewHolding{{Owner: eve, Amount: a("10")}}}}),
			"pay 10 CC to " + eve, "mint 2 NFT(s) of col_1"},
		{"a bid locking what it owes", wantLPQuote("P", store.SideBid, a("2.499"), a("3.3"), 99), tx(store.KindLPQuote, &store.LPQuoteEffects{LP: me, PoolID: "P", Side: store.SideBid, Price: a("2.499"), Size: a("3.3"), ExpiresAt: 99,
			Lock: lock(store.USDCx, "8.2467", "10")}), "", ""},
		{"a swap locking more", wantSwap("P", store.USDCx, a("10"), a("3.9"), 99), tx(store.KindSwapIntent, &store.SwapIntentEffects{Taker: me, PoolID: "P", Sell: store.USDCx, Receive: store.CC, Amount: a("10"), MinReceive: a("3.9"), Deadline: 99,
			Lock: lock(store.USDCx, "50", "50")}), "its locked amount is 50, not 10", "swap 10 USDCx for at least 3.9 on P"},
		{"a transfer to another", wantMove(store.KindNFTTransfer, "n1", bob), tx(store.KindNFTTransfer, &store.MoveEffects{Owner: me, Receiver: eve, NFTCID: "n1"}),
			"its receiver is " + eve + ", not " + bob, "transfer NFT n1 to " + bob},
		{"a transfer for a burn", wantMove(store.KindNFTBurn, "n1", ""), tx(store.KindNFTTransfer, &store.MoveEffects{Owner: me, Receiver: eve, NFTCID: "n1"}),
			"would transfer NFT n1", "burn NFT n1"},
		{"a cancel of others", wantCancel([]string{"l1", "l2"}), tx(store.KindNFTCancel, &store.CancelEffects{Seller: me, Listings: []store.ListingRef{{CID: "l1"}, {CID: "l3"}}}),
			"its listings is [l1 l3], not [l1 l2]", ""},
	} {
		err := tc.want(me, tc.tx)
		switch {
		case tc.name == "a holding of nothing":
			if err == nil || !strings.Contains(err.Error(), "creates a holding of 0") {
				t.Errorf("%s: %v", tc.name, err)
			}
		case tc.says == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.says != "" && (err == nil || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "you asked to "+tc.asked)):
			t.Errorf("%s: %v; want a refusal saying %q and what was asked (%q)", tc.name, err, tc.says, tc.asked)
		}
	}
}

func ptr(s string) *string { return &s }
