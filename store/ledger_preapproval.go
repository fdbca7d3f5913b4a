package store

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"marketd/store/ledger"
	"marketd/store/wallet"
)

// currentPreapproval returns the party's unconsumed preapproval of kind, expired or not, or nil.
func currentPreapproval(ctx context.Context, db bun.IDB, partyID string, kind PreapprovalKind) (*Preapproval, error) {
	return ledger.CurrentPreapproval(ctx, db, partyID, kind)
}

// checkPreapproval returns preapproval_required unless partyID has an active preapproval of
// kind at now.
func checkPreapproval(ctx context.Context, db bun.IDB, partyID string, kind PreapprovalKind, now time.Time) error {
	return ledger.CheckPreapproval(ctx, db, partyID, kind, now)
}

type preapprovalEffects = wallet.PreapprovalEffects

// PreparePreapproval prepares the party's consent to receive kind for the preapproval
// lifetime; it replaces the party's current preapproval of that kind.
func (s *Store) PreparePreapproval(ctx context.Context, partyID string, kind PreapprovalKind) (*Prepared, error) {
	e := preapprovalEffects{PartyID: partyID, Kind: kind}
	cur, err := currentPreapproval(ctx, s.db, partyID, kind)
	if err != nil {
		return nil, err
	}
	var claims []string
	if cur != nil {
		e.Replaces, claims = cur.CID, []string{cur.CID}
	}
	expires := s.now().Truncate(time.Second).Add(s.cfg.PreapprovalTTL)
	e.ExpiresAt = expires.Unix()
	summary := map[string]any{"action": "consent to receive " + kindNoun(kind), "party": partyID, "expiresAt": e.ExpiresAt}
	if cur != nil {
		summary["replaces"] = cur.CID
	}
	return s.prepareAs(ctx, kindOfPreapproval(kind), partyID, e, summary, claims)
}

func kindNoun(k PreapprovalKind) string {
	if k == PreapprovalNFT {
		return "NFTs"
	}
	return "USDCx"
}

func kindOfPreapproval(k PreapprovalKind) string {
	if k == PreapprovalNFT {
		return KindNFTPreapproval
	}
	return KindUSDCxPreapproval
}

// PreapprovalResult is what a preapproval execute adds to the receipt.
type PreapprovalResult struct {
	CID       string `json:"cid"`
	ExpiresAt int64  `json:"expiresAt"`
}

func applyPreapproval(ctx context.Context, tx *Tx, u *Update, e *preapprovalEffects) (any, error) {
	p := &Preapproval{PartyID: e.PartyID, Kind: e.Kind, ExpiresAt: At(time.Unix(e.ExpiresAt, 0))}
	t := &Transaction{Create: []Contract{p}}
	if e.Replaces != "" {
		t.Consume = []ContractRef{{Template: templatePreapproval, CID: e.Replaces}}
	} else if cur, err := currentPreapproval(ctx, tx, e.PartyID, e.Kind); err != nil {
		return nil, err
	} else if cur != nil {
		// Prepared when the party had none; one was created since. One of each kind at a time.
		return nil, Errorf(CodeStale, "a %s preapproval was created since this one was prepared; prepare again to replace it", e.Kind)
	}
	if err := tx.s.ledger.Commit(ctx, tx.Tx, u, t); err != nil {
		return nil, err
	}
	return PreapprovalResult{CID: p.CID, ExpiresAt: e.ExpiresAt}, nil
}

// A renewal moves the party's active preapproval of a kind to expire one preapproval lifetime
// from now (and always later than it did): a ledger update that archives it and creates its
// successor, with the effects of a preapproval that replaces it. Only a consent that still holds
// is renewed; an expired one is given anew by the preapproval's own prepare/execute.

// PrepareRenewal prepares the renewal of the party's active preapproval of kind, which the
// party signs like any other write. It is not_found when the party has no active one.
func (s *Store) PrepareRenewal(ctx context.Context, partyID string, kind PreapprovalKind) (*Prepared, error) {
	e, err := renewal(ctx, s.db, partyID, kind, s.now(), s.cfg.PreapprovalTTL)
	if err != nil {
		return nil, err
	}
	summary := map[string]any{"action": "renew consent to receive " + kindNoun(kind), "party": partyID, "expiresAt": e.ExpiresAt, "replaces": e.Replaces}
	return s.prepareAs(ctx, KindPreapprovalRenew, partyID, e, summary, []string{e.Replaces})
}

// renewal returns the effects of renewing the party's active preapproval of kind at now, or
// not_found when it has none.
func renewal(ctx context.Context, db bun.IDB, partyID string, kind PreapprovalKind, now time.Time, ttl time.Duration) (*preapprovalEffects, error) {
	cur, err := activePreapproval(ctx, db, partyID, kind, now)
	if err != nil {
		return nil, err
	}
	expires := now.Truncate(time.Second).Add(ttl)
	if !expires.After(cur.ExpiresAt.Time) {
		expires = cur.ExpiresAt.Add(time.Second) // renewing always moves it later
	}
	return &preapprovalEffects{PartyID: partyID, Kind: kind, ExpiresAt: expires.Unix(), Replaces: cur.CID}, nil
}

// activePreapproval returns the party's preapproval of kind that is active at now, or not_found.
func activePreapproval(ctx context.Context, db bun.IDB, partyID string, kind PreapprovalKind, now time.Time) (*Preapproval, error) {
	cur, err := currentPreapproval(ctx, db, partyID, kind)
	if err != nil {
		return nil, err
	}
	if cur == nil || !cur.ActiveAt(now) {
		return nil, Errorf(CodeNotFound, "there is no active %s preapproval to renew; create one with POST /api/wallet/%s-preapproval/prepare", kind, kind)
	}
	return cur, nil
}

// applyRenewal applies a signed renewal: the preapproval it renews must still be active (the
// ledger refuses it as stale when it was replaced since the prepare).
func applyRenewal(ctx context.Context, tx *Tx, u *Update, e *preapprovalEffects) (any, error) {
	if _, err := activePreapproval(ctx, tx, e.PartyID, e.Kind, tx.Now()); err != nil {
		return nil, err
	}
	return applyPreapproval(ctx, tx, u, e)
}

// RenewPreapproval renews the party's active preapproval of kind without its signature: the
// session's token is all it takes. It stays for the clients of the unsigned renewal route;
// PrepareRenewal and an execute do the same signed. It is not_found when the party has no
// active one.
func (s *Store) RenewPreapproval(ctx context.Context, partyID string, kind PreapprovalKind) (*PreapprovalResult, error) {
	var out PreapprovalResult
	err := s.commit(ctx, KindPreapprovalRenew, partyID, func(tx *Tx, u *Update) error {
		e, err := renewal(ctx, tx, partyID, kind, tx.Now(), tx.s.cfg.PreapprovalTTL)
		if err != nil {
			return err
		}
		res, err := applyPreapproval(ctx, tx, u, e)
		if err != nil {
			return err
		}
		out = res.(PreapprovalResult)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// Preapprovals lists the party's unconsumed preapprovals.
func (s *Store) Preapprovals(ctx context.Context, partyID string) ([]Preapproval, error) {
	var ps []Preapproval
	err := s.db.NewSelect().Model(&ps).Where("party_id = ?", partyID).Where("consumed_update IS NULL").OrderExpr("kind").Scan(ctx)
	return ps, err
}
