package store

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"marketd/store/wallet"
)

const (
	testAlice = "alice::1220" + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	testBob   = "bob::1220" + "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// preparedOfEachKind is one plausible effects value of every prepared kind.
func preparedOfEachKind() map[string]any {
	exp := int64(1_900_000_000)
	maxTotal := MustAmount("50")
	pay := &payment{Currency: CC, Total: MustAmount("10"), Inputs: []spentHolding{{CID: "h1", Amount: MustAmount("12.5")}},
		Outputs: []newHolding{{Owner: testBob, Amount: MustAmount("10")}, {Owner: testAlice, Amount: MustAmount("2.5")}}}
	st := settle(MustAmount("10"), CC, 250, testAlice, 500, testBob, testBob)
	lock := lockFunds{Instrument: USDCx, Amount: MustAmount("7.25"), Inputs: []spentHolding{{CID: "h2", Amount: MustAmount("8")}}, Change: MustAmount("0.75")}
	return map[string]any{
		KindOnboard:          &onboardEffects{PartyID: testAlice, Hint: "alice", PublicKey: bytes.Repeat([]byte{7}, 32)},
		KindTap:              &tapEffects{Owner: testAlice, Instrument: USDCx, Amount: MustAmount("100")},
		KindCCTransfer:       &transferEffects{Sender: testAlice, Receiver: testBob, Instrument: CC, Amount: MustAmount("10"), Fee: Zero, Inputs: pay.Inputs, Outputs: pay.Outputs},
		KindNFTPreapproval:   &preapprovalEffects{PartyID: testAlice, Kind: PreapprovalNFT, ExpiresAt: exp, Replaces: "p1"},
		KindUSDCxPreapproval: &preapprovalEffects{PartyID: testAlice, Kind: PreapprovalUSDCx, ExpiresAt: exp},
		KindPreapprovalRenew: &preapprovalEffects{PartyID: testAlice, Kind: PreapprovalUSDCx, ExpiresAt: exp, Replaces: "p2"},
		KindNFTMint:          &mintEffects{Minter: testAlice, CollectionID: "col_1", Phase: "public", Quantity: 2, Price: MustAmount("5"), Currency: CC, Creator: testBob, Payment: pay},
		KindNFTList:          &listEffects{Seller: testAlice, Listings: []listingEffect{{NFTCID: "n1", NFTID: "col_1-1", CollectionID: "col_1", Price: MustAmount("3.5"), Currency: CC, ExpiresAt: &exp, Withdraws: "l0"}}},
		KindNFTCancel:        &cancelEffects{Seller: testAlice, Listings: []listingRef{{CID: "l1", NFTID: "col_1-1", CollectionID: "col_1"}}},
		KindNFTBuy:           &buyEffects{Buyer: testAlice, CollectionID: "col_1", Purchases: []purchase{{Listing: "l1", NFTCID: "n1", NFTID: "col_1-1", CollectionID: "col_1", Seller: testBob, Price: MustAmount("10"), Settlement: st}}, Settlement: total([]Settlement{st}), Payment: pay},
		KindNFTSweep:         &buyEffects{Buyer: testAlice, CollectionID: "col_1", Settlement: total(nil), MaxTotal: &maxTotal, Payment: pay},
		KindNFTTransfer:      &moveEffects{Owner: testAlice, Receiver: testBob, NFTCID: "n1", NFTID: "col_1-1", CollectionID: "col_1", Listing: "l1"},
		KindNFTBurn:          &moveEffects{Owner: testAlice, NFTCID: "n1", NFTID: "col_1-1", CollectionID: "col_1"},
		KindLPQuote:          &lpQuoteEffects{LP: testAlice, PoolID: "CC-USDCx-30", Side: SideBid, Price: MustAmount("2.5"), Size: MustAmount("2.9"), ExpiresAt: exp, Lock: lock},
		KindLPQuoteCancel:    &lpCancelEffects{LP: testAlice, PoolID: "CC-USDCx-30", QuoteID: "q1"},
		KindLPClaimFees:      &claimEffects{LP: testAlice, PoolID: "CC-USDCx-30", Payout: map[Instrument]Amount{CC: MustAmount("0.1"), USDCx: MustAmount("0.25")}},
		KindSwapIntent:       &intentEffects{Taker: testAlice, PoolID: "CC-USDCx-30", Sell: USDCx, Receive: CC, Amount: MustAmount("7.25"), MinReceive: MustAmount("2"), Deadline: exp, Lock: lock},
		KindNFTOffer: &offerEffects{Maker: testAlice, Kind: OfferTrait, CollectionID: "col_1", Traits: []TraitMatch{{Type: "Hat", Values: []string{"Cap", "Crown"}}},
			Price: MustAmount("2.5"), Quantity: 3, ExpiresAt: exp, Lock: lockFunds{Instrument: CC, Amount: MustAmount("7.5"), Inputs: []spentHolding{{CID: "h3", Amount: MustAmount("8")}}, Change: MustAmount("0.5")}},
		KindNFTOffers: &offersEffects{Maker: testAlice, CollectionID: "col_1", Offers: []offerEffects{
			{Maker: testAlice, Kind: OfferItem, CollectionID: "col_1", Serial: new(3), NFTID: "col_1#3", Price: MustAmount("2"), Quantity: 1, ExpiresAt: exp, Lock: lockFunds{Instrument: CC, Amount: MustAmount("2"), Change: Zero}},
			{Maker: testAlice, Kind: OfferCollection, CollectionID: "col_1", Price: MustAmount("1.5"), Quantity: 4, ExpiresAt: exp, Lock: lockFunds{Instrument: CC, Amount: MustAmount("6"), Change: Zero}}},
			Lock: lockFunds{Instrument: CC, Amount: MustAmount("8"), Inputs: []spentHolding{{CID: "h4", Amount: MustAmount("10")}}, Change: MustAmount("2")}},
		KindNFTOfferCancel: &offerCancelEffects{Maker: testAlice, Offers: []offerRef{{OfferID: "o1", CollectionID: "col_1"}}},
		KindNFTOfferAccept: &acceptEffects{Seller: testAlice, OfferID: "o1", Maker: testBob, CollectionID: "col_1", Price: MustAmount("10"), Currency: CC,
			Sales: []offerSale{{NFTCID: "n1", NFTID: "col_1#1", Listing: "l1", Settlement: st}}, Settlement: total([]Settlement{st}), MinProceeds: &maxTotal},
		KindIntentCancel: &intentCancelEffects{Taker: testAlice, IntentCID: "i1", PoolID: "CC-USDCx-30", Instrument: USDCx, Amount: MustAmount("7.25")},
	}
}

// encodeAsPrepare writes effects of kind as prepare writes a prepared transaction.
func encodeAsPrepare(t testing.TB, kind string, effects any) []byte {
	t.Helper()
	raw, err := json.Marshal(effects)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(envelope{Scheme: wallet.HashingScheme, Network: "test<&>", Kind: kind, ActAs: testAlice,
		Nonce: "00112233445566778899aabbccddeeff", PreparedAt: 1_800_000_000, ExpiresAt: 1_800_000_300, Effects: raw})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodePrepared_EveryPreparedKindHasADecoder(t *testing.T) {
	for kind := range actions {
		if _, ok := wallet.NewEffects(kind); !ok {
			t.Errorf("prepared kind %s has no decoder", kind)
		}
	}
	for _, kind := range wallet.PreparedKinds() {
		if _, ok := actions[kind]; !ok {
			t.Errorf("decoder for %s, which is not a prepared kind", kind)
		}
	}
	for kind := range actions {
		if _, ok := preparedOfEachKind()[kind]; !ok {
			t.Errorf("no test transaction of kind %s", kind)
		}
	}
}

// TestRegisterKind_RefusesWhatWalletDoesNotDecode: a kind is registered only with the effects
// type wallet decodes it into, so a wallet never reads a transaction as other than execute.
func TestRegisterKind_RefusesWhatWalletDoesNotDecode(t *testing.T) {
	if err := walletDecodes[tapEffects](KindTap); err != nil {
		t.Errorf("the tap's own effects: %v", err)
	}
	if err := walletDecodes[transferEffects](KindTap); err == nil {
		t.Error("a tap registered with a transfer's effects")
	}
	if err := walletDecodes[tapEffects]("wallet.steal"); err == nil {
		t.Error("a kind wallet does not know was registered")
	}
	for kind, effects := range preparedOfEachKind() {
		e, _ := wallet.NewEffects(kind)
		if reflect.TypeOf(e) != reflect.TypeOf(effects) {
			t.Errorf("%s: wallet decodes %T, execute applies %T", kind, e, effects)
		}
	}
}

func TestDecodePrepared_ReadsBackWhatPrepareWrites(t *testing.T) {
	for kind, effects := range preparedOfEachKind() {
		d, err := DecodePrepared(encodeAsPrepare(t, kind, effects))
		if err != nil {
			t.Errorf("%s: %v", kind, err)
			continue
		}
		want := DecodedPrepared{Scheme: wallet.HashingScheme, Network: "test<&>", Kind: kind, ActAs: testAlice,
			Nonce: "00112233445566778899aabbccddeeff", PreparedAt: 1_800_000_000, ExpiresAt: 1_800_000_300}
		got := *d
		got.Effects = nil
		if got != want {
			t.Errorf("%s: decoded\n%+v\nwant\n%+v", kind, got, want)
		}
		// Amounts compare by value, not by how a decimal happens to hold it.
		gotE, _ := json.Marshal(d.Effects)
		wantE, _ := json.Marshal(effects)
		if reflect.TypeOf(d.Effects) != reflect.TypeOf(effects) || !bytes.Equal(gotE, wantE) {
			t.Errorf("%s: effects %T %s, want %T %s", kind, d.Effects, gotE, effects, wantE)
		}
	}
}

func TestDecodePrepared_RefusesAnythingButTheCanonicalEncoding(t *testing.T) {
	send := string(encodeAsPrepare(t, KindCCTransfer, preparedOfEachKind()[KindCCTransfer]))
	for _, tc := range []struct {
		name, in, says string
	}{
		{"empty", "", "prepared transaction"},
		{"not JSON", "send 10 CC to bob", "prepared transaction"},
		{"null", "null", "scheme"},
		{"trailing data", send + "{}", "prepared transaction"},
		{"spacing", strings.Replace(send, `"kind":`, `"kind": `, 1), "canonical"},
		{"a key twice", strings.Replace(send, `"receiver":"bob::`, `"receiver":"eve::1220ee","receiver":"bob::`, 1), "canonical"},
		{"a later key twice", strings.Replace(send, `"instrument":"CC",`, `"instrument":"CC","receiver":"eve",`, 1), "canonical"},
		{"an unknown key", strings.Replace(send, `"fee":"0",`, `"fee":"0","to":"eve",`, 1), "canonical"},
		{"a key in capitals", strings.Replace(send, `"receiver":`, `"RECEIVER":`, 1), "canonical"},
		{"an amount as an exponent", strings.Replace(send, `"amount":"10"`, `"amount":"1e1"`, 1), "canonical"},
		{"an amount as a number", strings.Replace(send, `"amount":"10"`, `"amount":10`, 1), "effects"},
		{"an amount with a trailing zero", strings.Replace(send, `"amount":"10"`, `"amount":"10.0"`, 1), "canonical"},
		{"escaped differently", strings.Replace(send, `\u003c`, `<`, 1), "canonical"},
		{"keys reordered", strings.Replace(send, `"scheme":"sha256-v1","network":"test\u003c\u0026\u003e"`, `"network":"test\u003c\u0026\u003e","scheme":"sha256-v1"`, 1), "canonical"},
		{"unknown kind", strings.Replace(send, KindCCTransfer, "wallet.steal", 1), "unknown kind"},
		{"another scheme", strings.Replace(send, wallet.HashingScheme, "sha1", 1), "scheme"},
		{"effects null", send[:strings.Index(send, `"effects":`)] + `"effects":null}`, "canonical"},
		{"effects of another kind", strings.Replace(send, KindCCTransfer, KindTap, 1), "canonical"},
	} {
		if tc.in == send {
			t.Fatalf("%s: the mutation changed nothing", tc.name)
		}
		d, err := DecodePrepared([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: decoded %+v, %v; want an error saying %q", tc.name, d, err, tc.says)
		}
	}
}

// FuzzDecodePrepared feeds the decoder untrusted bytes: it never panics, and whatever it
// accepts is the canonical encoding of what it returns.
func FuzzDecodePrepared(f *testing.F) {
	for kind, effects := range preparedOfEachKind() {
		f.Add(encodeAsPrepare(f, kind, effects))
	}
	f.Add([]byte(`{"scheme":"sha256-v1","kind":"wallet.tap","effects":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := DecodePrepared(b)
		if err != nil {
			if d != nil {
				t.Fatalf("an error and a transaction: %v", err)
			}
			return
		}
		if e, _ := wallet.NewEffects(d.Kind); reflect.TypeOf(d.Effects) != reflect.TypeOf(e) {
			t.Fatalf("kind %s decoded into %T", d.Kind, d.Effects)
		}
		if again := encodeAsPrepareFrom(t, d); !bytes.Equal(again, b) {
			t.Fatalf("accepted %q, which encodes back as %q", b, again)
		}
	})
}

// encodeAsPrepareFrom writes a decoded transaction as prepare writes one.
func encodeAsPrepareFrom(t *testing.T, d *DecodedPrepared) []byte {
	raw, err := json.Marshal(d.Effects)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(envelope{Scheme: d.Scheme, Network: d.Network, Kind: d.Kind, ActAs: d.ActAs, Nonce: d.Nonce,
		PreparedAt: d.PreparedAt, ExpiresAt: d.ExpiresAt, Effects: raw})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
