package storetest

import (
	"context"
	"testing"

	"marketd/store"
	"marketd/store/storetest/partykey"
)

// Key is a test party's Ed25519 key; it signs prepared hashes and sign-in challenges.
type Key = partykey.Key

// NewKey returns a fresh key, not onboarded anywhere.
func NewKey() Key { return partykey.New() }

// Party is a wallet: its key and the party id the ledger gives that key for a hint. A door
// test makes one with NewParty and onboards it through its door; a store test onboards it
// with Onboard. Either way it signs through its Key.
type Party struct {
	ID string
	Key
}

// NewParty returns a party with a fresh key and the id it will have once onboarded with hint;
// nothing is onboarded yet.
func NewParty(hint string) *Party {
	k := NewKey()
	return &Party{ID: k.PartyID(hint), Key: k}
}

// Onboard makes a party with a fresh key and onboards it on s with hint, through prepare and
// a signed execute as a wallet does.
func Onboard(tb testing.TB, s *store.Store, hint string) *Party {
	tb.Helper()
	p := NewParty(hint)
	prep, err := s.PrepareOnboarding(context.Background(), p.Public(), hint)
	if err != nil {
		tb.Fatalf("prepare onboarding %s: %v", hint, err)
	}
	if prep.PartyID != p.ID {
		tb.Fatalf("onboarding %s prepared party %s, want %s", hint, prep.PartyID, p.ID)
	}
	// The onboarding door takes no token, so its execute names no caller.
	x := store.Execution{Kinds: []string{store.KindOnboard}, Hash: prep.Hash, Signature: p.Sign(prep.Hash)}
	if _, err := s.Execute(context.Background(), x); err != nil {
		tb.Fatalf("onboard %s: %v", hint, err)
	}
	return p
}

// Execution is prep signed by p for an execute of kind, with p as the caller (its token's party).
func (p *Party) Execution(kind string, prep *store.Prepared) store.Execution {
	return store.Execution{Kinds: []string{kind}, Hash: prep.Hash, Signature: p.Sign(prep.Hash), Caller: p.ID}
}

// Execute executes prep as kind, signed by p and called by p, and returns what s answers.
func (p *Party) Execute(s *store.Store, kind string, prep *store.Prepared) (store.Receipt, error) {
	return s.Execute(context.Background(), p.Execution(kind, prep))
}

// MustExecute is Execute that fails the test on an error.
func (p *Party) MustExecute(tb testing.TB, s *store.Store, kind string, prep *store.Prepared) store.Receipt {
	tb.Helper()
	r, err := p.Execute(s, kind, prep)
	if err != nil {
		tb.Fatalf("execute %s as %s: %v", kind, p.ID, err)
	}
	return r
}

// Tap gives p amount of inst from the faucet, prepared and executed as p.
func (p *Party) Tap(tb testing.TB, s *store.Store, inst store.Instrument, amount string) {
	tb.Helper()
	prep, err := s.PrepareTap(context.Background(), p.ID, inst, store.MustAmount(amount))
	if err != nil {
		tb.Fatalf("prepare tap of %s %s for %s: %v", amount, inst, p.ID, err)
	}
	p.MustExecute(tb, s, store.KindTap, prep)
}

// SignIn signs p in on s with a fresh challenge and returns the token s issues.
func (p *Party) SignIn(tb testing.TB, s *store.Store) *store.IssuedToken {
	tb.Helper()
	ctx := context.Background()
	c, err := s.IssueChallenge(ctx, p.ID)
	if err != nil {
		tb.Fatalf("challenge for %s: %v", p.ID, err)
	}
	tok, err := s.SignIn(ctx, store.SignIn{PartyID: p.ID, Nonce: c.Nonce, Signature: p.Sign([]byte(c.Text()))})
	if err != nil {
		tb.Fatalf("sign in %s: %v", p.ID, err)
	}
	return tok
}
