package storetest_test

import (
	"bytes"
	"context"
	"testing"

	"marketd/store"
	"marketd/store/storetest"
	"marketd/store/wallet"
)

// Onboard gives a party the ledger knows under the id its key and hint derive, holding that
// key; the party taps, executes and signs in as itself.
func TestOnboard_APartyTheLedgerKnowsByItsKeyThatTapsAndSignsIn(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
		alice := storetest.Onboard(t, s, "alice")
		if want := wallet.PartyIDFor("alice", alice.Public()); alice.ID != want {
			t.Fatalf("party id %s, want %s", alice.ID, want)
		}
		onLedger, err := s.Party(ctx, alice.ID)
		if err != nil || !bytes.Equal(onLedger.PublicKey, alice.Public()) {
			t.Fatalf("the ledger's party: %+v, %v", onLedger, err)
		}
		alice.Tap(t, s, store.CC, "7")
		bs, err := s.Balances(ctx, alice.ID)
		if err != nil {
			t.Fatal(err)
		}
		var cc store.Amount
		for _, bal := range bs {
			if bal.Instrument == store.CC {
				cc = bal.Amount
			}
		}
		if !cc.Equal(store.MustAmount("7")) {
			t.Errorf("CC balance after a tap of 7: %s (%+v)", cc, bs)
		}
		if tok := alice.SignIn(t, s); tok.PartyID != alice.ID || tok.Token == "" {
			t.Errorf("sign-in token %+v, want one for %s", tok, alice.ID)
		}
	})
}

// NewParty only makes a key and its id: nothing is onboarded, and another party's key
// does not sign for it.
func TestNewParty_IsNotOnboardedAndOnlyItsKeySignsForIt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
		bob := storetest.NewParty("bob")
		if _, err := s.Party(ctx, bob.ID); store.ErrorCode(err) != store.CodePartyNotFound {
			t.Fatalf("a party never onboarded: %v, want %s", err, store.CodePartyNotFound)
		}
		alice := storetest.Onboard(t, s, "alice")
		prep, err := s.PrepareTap(ctx, alice.ID, store.CC, store.MustAmount("1"))
		if err != nil {
			t.Fatal(err)
		}
		forged := store.Execution{Kinds: []string{store.KindTap}, Hash: prep.Hash, Signature: bob.Sign(prep.Hash), Caller: alice.ID}
		if _, err := s.Execute(ctx, forged); store.ErrorCode(err) != store.CodeInvalidSignature {
			t.Fatalf("a tap signed by another key: %v, want %s", err, store.CodeInvalidSignature)
		}
		if _, err := alice.Execute(s, store.KindTap, prep); err != nil {
			t.Fatalf("the same tap signed by its party: %v", err)
		}
	})
}
