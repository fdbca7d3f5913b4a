package store

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"time"

	"marketd/store/wallet"
)

const (
	purposeOperator = "operator-ed25519" // secret: the Ed25519 seed of the operator party's key
	operatorKID     = "operator-1"
	operatorHint    = "operator"
	// operatorConsent is how long the operator's own receive-preapprovals last: it must
	// always be able to receive the marketplace fees paid in USDCx.
	operatorConsent = 100 * 365 * 24 * time.Hour
)

// OperatorParty returns the party the service itself acts as: it receives marketplace fees,
// creates pools, settles matched swaps and releases expired offers. It is created, with its
// receive-preapprovals, when the store is first migrated.
func (s *Store) OperatorParty(ctx context.Context) (string, error) {
	if p := s.operator.Load(); p != nil {
		return *p, nil
	}
	var row serviceKeyRow
	if err := s.db.NewSelect().Model(&row).Where("kid = ?", operatorKID).Scan(ctx); err != nil {
		if isNoRows(err) {
			return "", Errorf(CodeUnavailable, "the store has no operator party yet; run marketd migrate up")
		}
		return "", err
	}
	seed, err := s.secretOf(&row)
	if err != nil {
		return "", err
	}
	id := wallet.PartyIDFor(operatorHint, ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey))
	s.operator.Store(&id)
	return id, nil
}

// ensureOperator creates the operator party on the first migration: its key, its onboarding
// and its receive-preapprovals, as one ledger update. Later calls change nothing.
func (s *Store) ensureOperator(ctx context.Context) error {
	seed := make([]byte, ed25519.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		return err
	}
	err := s.inTx(ctx, func(tx *Tx) error {
		fresh := &serviceKeyRow{KID: operatorKID, Purpose: purposeOperator, Secret: seed, CreatedAt: At(tx.Now())}
		if err := s.sealRow(fresh); err != nil {
			return err
		}
		if _, err := tx.NewInsert().Model(fresh).On("CONFLICT DO NOTHING").Exec(ctx); err != nil {
			return err
		}
		var row serviceKeyRow
		if err := tx.NewSelect().Model(&row).Where("kid = ?", operatorKID).Scan(ctx); err != nil {
			return err
		}
		kept, err := s.secretOf(&row)
		if err != nil {
			return err
		}
		pub := ed25519.NewKeyFromSeed(kept).Public().(ed25519.PublicKey)
		id := wallet.PartyIDFor(operatorHint, pub)
		if existing, err := s.partyByKey(ctx, tx, pub); err != nil || existing != nil {
			return err
		}
		return tx.record(ctx, KindOnboard, id, func(u *Update) error {
			p := &Party{PartyID: id, Hint: operatorHint, PublicKey: pub, OnboardedAt: At(tx.Now()), UpdateID: u.UpdateID}
			if _, err := tx.NewInsert().Model(p).Exec(ctx); err != nil {
				return err
			}
			expires := At(tx.Now().Truncate(time.Second).Add(operatorConsent))
			return tx.s.ledger.Commit(ctx, tx.Tx, u, &Transaction{Create: []Contract{
				&Preapproval{PartyID: id, Kind: PreapprovalNFT, ExpiresAt: expires},
				&Preapproval{PartyID: id, Kind: PreapprovalUSDCx, ExpiresAt: expires},
			}})
		})
	})
	return err
}
