package ledger

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"marketd/store/wallet"

	"github.com/uptrace/bun"
)

// TemplatePreapproval is the table of receive-preapprovals.
const TemplatePreapproval = "preapprovals"

// PreapprovalKind is what a receive-preapproval consents to receive (wallet.PreapprovalKind).
type PreapprovalKind = wallet.PreapprovalKind

const (
	PreapprovalNFT   = wallet.PreapprovalNFT
	PreapprovalUSDCx = wallet.PreapprovalUSDCx
)

// ParsePreapprovalKind accepts "nft" or "usdcx".
func ParsePreapprovalKind(s string) (PreapprovalKind, error) { return wallet.ParsePreapprovalKind(s) }

// Preapproval is a party's consent, until ExpiresAt, to be credited NFTs or USDCx by
// transactions other parties sign.
type Preapproval struct {
	bun.BaseModel `bun:"table:preapprovals"`
	Lifecycle

	PartyID   string          `bun:"party_id"`
	Kind      PreapprovalKind `bun:"kind"`
	ExpiresAt Timestamp       `bun:"expires_at"`
}

func (*Preapproval) Template() string { return TemplatePreapproval }

// ActiveAt tells whether the preapproval admits credits at t: until it expires.
func (p *Preapproval) ActiveAt(t time.Time) bool { return t.Before(p.ExpiresAt.Time) }
func (p *Preapproval) Controller() string        { return p.PartyID }

// CurrentPreapproval returns the party's unconsumed preapproval of kind, expired or not, or nil.
func CurrentPreapproval(ctx context.Context, db bun.IDB, partyID string, kind PreapprovalKind) (*Preapproval, error) {
	p := new(Preapproval)
	err := db.NewSelect().Model(p).
		Where("party_id = ?", partyID).Where("kind = ?", kind).Where("consumed_update IS NULL").
		OrderExpr("expires_at DESC").Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return p, err
}

// CheckPreapproval returns preapproval_required unless partyID has an active preapproval of
// kind at now.
func CheckPreapproval(ctx context.Context, db bun.IDB, partyID string, kind PreapprovalKind, now time.Time) error {
	p, err := CurrentPreapproval(ctx, db, partyID, kind)
	if err != nil {
		return err
	}
	if p == nil || !p.ActiveAt(now) {
		return Errorf(CodePreapprovalRequired, "%s has no active %s receive-preapproval; it must create one (POST /api/wallet/%s-preapproval/prepare) before it can be credited", partyID, kind, kind)
	}
	return nil
}
