package store

import (
	"context"
	"crypto/ed25519"

	"github.com/uptrace/bun"

	"marketd/store/wallet"
)

// Party is an identity on the ledger: an Ed25519 key and the id derived from it.
type Party struct {
	bun.BaseModel `bun:"table:parties"`

	PartyID     string    `bun:"party_id,pk"`
	Hint        string    `bun:"hint"`
	PublicKey   []byte    `bun:"public_key"`
	OnboardedAt Timestamp `bun:"onboarded_at"`
	UpdateID    string    `bun:"update_id"`
}

// checkPartyID returns invalid_request for a malformed id.
func checkPartyID(field, id string) error {
	if !wallet.ValidPartyID(id) {
		return Errorf(CodeInvalidRequest, "%s %q is not a party id (HINT::1220<64 hex>)", field, truncate(id, 100))
	}
	return nil
}

// Party returns an onboarded party, or party_not_found.
func (s *Store) Party(ctx context.Context, partyID string) (*Party, error) {
	if err := checkPartyID("partyId", partyID); err != nil {
		return nil, err
	}
	if p, ok := s.parties.Load(partyID); ok {
		return p.(*Party), nil
	}
	p := new(Party)
	err := s.db.NewSelect().Model(p).Where("party_id = ?", partyID).Scan(ctx)
	if isNoRows(err) {
		return nil, Errorf(CodePartyNotFound, "party %s is not onboarded", partyID)
	}
	if err != nil {
		return nil, err
	}
	// A party never changes once onboarded, so it can be remembered for good.
	if s.partyCount.Add(1) <= partyCacheMax {
		s.parties.Store(partyID, p)
	}
	return p, nil
}

// partyCacheMax bounds the parties kept in memory; past it, lookups go to the store.
const partyCacheMax = 1 << 18

// partyByKey returns the party holding pub, or nil.
func (s *Store) partyByKey(ctx context.Context, db bun.IDB, pub []byte) (*Party, error) {
	p := new(Party)
	err := db.NewSelect().Model(p).Where("public_key = ?", pub).Scan(ctx)
	if isNoRows(err) {
		return nil, nil
	}
	return p, err
}

type onboardEffects = wallet.OnboardEffects

// PrepareOnboarding prepares the onboarding of a key as a party. The execute must be signed
// with that key, which proves possession. A key already onboarded yields its existing party.
func (s *Store) PrepareOnboarding(ctx context.Context, pub []byte, hint string) (*Prepared, error) {
	if len(pub) != ed25519.PublicKeySize {
		return nil, Errorf(CodeInvalidRequest, "publicKey must be %d bytes of Ed25519 public key, got %d", ed25519.PublicKeySize, len(pub))
	}
	if !wallet.ValidHint(hint) {
		return nil, Errorf(CodeInvalidRequest, "hint must be 1 to 64 of [A-Za-z0-9_-]")
	}
	e := onboardEffects{PartyID: wallet.PartyIDFor(hint, pub), Hint: hint, PublicKey: pub}
	if p, err := s.partyByKey(ctx, s.db, pub); err != nil {
		return nil, err
	} else if p != nil {
		e.PartyID, e.Hint = p.PartyID, p.Hint
	}
	summary := map[string]any{"action": "onboard party", "partyId": e.PartyID}
	prep, err := s.prepare(ctx, KindOnboard, e.PartyID, pub, e, summary, nil)
	if err != nil {
		return nil, err
	}
	prep.PartyID = e.PartyID
	return prep, nil
}

// OnboardResult is what an onboarding execute adds to the receipt.
type OnboardResult struct {
	PartyID string `json:"partyId"`
}

func applyOnboard(ctx context.Context, tx *Tx, u *Update, e *onboardEffects) (any, error) {
	existing, err := tx.s.partyByKey(ctx, tx, e.PublicKey)
	if err != nil {
		return nil, err
	}
	if existing != nil {
		return OnboardResult{PartyID: existing.PartyID}, nil
	}
	p := &Party{PartyID: e.PartyID, Hint: e.Hint, PublicKey: e.PublicKey, OnboardedAt: At(tx.Now()), UpdateID: u.UpdateID}
	res, err := tx.NewInsert().Model(p).On("CONFLICT DO NOTHING").Exec(ctx)
	if err != nil {
		return nil, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		// A concurrent execute of another prepare for this key committed first: its party stands.
		existing, err := tx.s.partyByKey(ctx, tx, e.PublicKey)
		if err != nil {
			return nil, err
		}
		if existing == nil {
			return nil, Errorf(CodeConflict, "party %s exists with another key", e.PartyID)
		}
		return OnboardResult{PartyID: existing.PartyID}, nil
	}
	return OnboardResult{PartyID: p.PartyID}, nil
}
