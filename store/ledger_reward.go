package store

import (
	"context"
	"time"

	"github.com/shopspring/decimal"
	"github.com/uptrace/bun"
)

// The activity reward rule: a committed transfer of CC to another party earns the sender
// RewardBps basis points of the amount, rounded down to CC's precision, as CC rewards.
// Rewards are accounted apart from holdings: they are not spendable CC, so every
// instrument's supply stays what was minted. Self-transfers (consolidation), taps,
// onboarding and preapprovals earn nothing, and neither does CC passed on within
// RewardWindow of receiving it by transfer: the part of a transfer paid from holdings another
// party's transfer created in the window earns nothing, so sending CC round a ring of one's
// own parties, or back and forth, earns at most the first hop.
const RewardBps = 10

// RewardWindow is how long CC received by transfer earns nothing when sent on.
const RewardWindow = 24 * time.Hour

// receivedLately is how much of the holdings inputs, spent by sender, another party's
// transfer created within RewardWindow of now.
func (tx *Tx) receivedLately(ctx context.Context, sender string, inputs []spentHolding) (Amount, error) {
	cids := make([]string, len(inputs))
	for i, in := range inputs {
		cids[i] = in.CID
	}
	var rows []struct {
		Amount Amount `bun:"amount"`
	}
	err := tx.NewSelect().TableExpr("holdings AS h").ColumnExpr("h.amount").
		Join("JOIN updates AS u ON u.update_id = h.created_update").
		Where("h.cid IN (?)", bun.In(cids)).Where("h.created_at > ?", At(tx.Now().Add(-RewardWindow))).
		Where("u.kind = ?", KindCCTransfer).Where("u.act_as <> ?", sender).Scan(ctx, &rows)
	sum := Zero
	for _, r := range rows {
		sum = sum.Add(r.Amount)
	}
	return sum, err
}

func transferReward(amount Amount) *Amount {
	r := amount.MulFloor(decimal.New(RewardBps, -4), CC.Decimals())
	if !r.IsPositive() {
		return nil
	}
	return &r
}

// rewardBalance is a party's running total of rewards.
type rewardBalance struct {
	bun.BaseModel `bun:"table:reward_balances,alias:reward_balances"`

	PartyID   string    `bun:"party_id,pk"`
	Balance   Amount    `bun:"balance"`
	UpdatedAt Timestamp `bun:"updated_at"`
}

// creditReward adds amount to the party's reward balance.
func (tx *Tx) creditReward(ctx context.Context, partyID string, amount Amount) error {
	if tx.s.dialect == Postgres { // NUMERIC adds exactly, in one round trip
		return tx.Later(ctx, tx.NewInsert().Model(&rewardBalance{PartyID: partyID, Balance: amount, UpdatedAt: At(tx.Now())}).
			On("CONFLICT (party_id) DO UPDATE").
			Set("balance = reward_balances.balance + EXCLUDED.balance").
			Set("updated_at = EXCLUDED.updated_at"))
	}
	// SQLite keeps decimals as text, which its arithmetic would turn into floats: add in Go.
	rb := new(rewardBalance)
	err := tx.ForUpdate(tx.NewSelect().Model(rb).Where("party_id = ?", partyID)).Scan(ctx)
	switch {
	case isNoRows(err):
		rb = &rewardBalance{PartyID: partyID, Balance: amount, UpdatedAt: At(tx.Now())}
		_, err = tx.NewInsert().Model(rb).Exec(ctx)
	case err == nil:
		rb.Balance, rb.UpdatedAt = rb.Balance.Add(amount), At(tx.Now())
		_, err = tx.NewUpdate().Model(rb).Column("balance", "updated_at").WherePK().Exec(ctx)
	}
	return err
}

// RewardBalance returns the party's reward balance in CC.
func (s *Store) RewardBalance(ctx context.Context, partyID string) (Amount, error) {
	if _, err := s.Party(ctx, partyID); err != nil {
		return Zero, err
	}
	rb := new(rewardBalance)
	err := s.db.NewSelect().Model(rb).Where("party_id = ?", partyID).Scan(ctx)
	if isNoRows(err) {
		return Zero, nil
	}
	return rb.Balance, err
}

// RewardEntry is one update that earned its acting party a reward.
type RewardEntry struct {
	UpdateID string
	LogIndex *int64 // the update's index in the transparency log; nil while the log has no entry of it
	Offset   int64
	Kind     string
	Amount   Amount
	At       Timestamp
}

// RewardHistory lists the party's rewards newest first, read from the update log.
func (s *Store) RewardHistory(ctx context.Context, partyID string, r PageRequest) (Page[RewardEntry], error) {
	if _, err := s.Party(ctx, partyID); err != nil {
		return Page[RewardEntry]{}, err
	}
	q, err := startPage[int64](ctx, s, "rewards:"+partyID, r)
	if err != nil {
		return Page[RewardEntry]{}, err
	}
	var rows []Update
	sel := s.db.NewSelect().Model(&rows).Where("act_as = ?", partyID).Where("reward IS NOT NULL")
	sel = q.Seek(sel, true, []string{"ledger_offset"}, q.At(func(o int64) []any { return []any{o} }))
	if err := sel.Limit(q.Fetch()).Scan(ctx); err != nil {
		return Page[RewardEntry]{}, err
	}
	entries := make([]RewardEntry, len(rows))
	for i, u := range rows {
		entries[i] = RewardEntry{UpdateID: u.UpdateID, LogIndex: u.LogIndex, Offset: u.Offset, Kind: u.Kind, Amount: *u.Reward, At: u.RecordedAt}
	}
	return finish(ctx, s, q, entries, func(e RewardEntry) int64 { return e.Offset })
}
