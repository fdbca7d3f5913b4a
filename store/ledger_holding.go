package store

import (
	"cmp"
	"context"
	"slices"

	"github.com/uptrace/bun"
)

// spendableHoldings lists the party's unconsumed holdings of inst, and which of them an
// unexpired prepared transaction would consume (claimed). A claim by a transaction that
// executed names holdings it consumed, which are no longer listed. Claims only matter when
// there is a choice, so a wallet of one holding is not asked about them.
func (s *Store) spendableHoldings(ctx context.Context, owner string, inst Instrument) ([]Holding, map[string]bool, error) {
	var hs []Holding
	err := s.db.NewSelect().Model(&hs).Column("cid", "owner", "instrument", "amount").
		Where("owner = ?", owner).Where("instrument = ?", inst).Where("consumed_update IS NULL").
		Scan(ctx)
	if err != nil || len(hs) < 2 {
		return hs, nil, err
	}
	cids := make([]string, len(hs))
	for i, h := range hs {
		cids[i] = h.CID
	}
	var claimedCIDs []string
	err = s.db.NewSelect().Model((*preparedInput)(nil)).Column("cid").
		Where("cid IN (?)", bun.In(cids)).Where("expires_at > ?", At(s.now())).
		Scan(ctx, &claimedCIDs)
	claimed := make(map[string]bool, len(claimedCIDs))
	for _, c := range claimedCIDs {
		claimed[c] = true
	}
	return hs, claimed, err
}

// Balance is what a party holds of one instrument.
type Balance struct {
	Instrument Instrument
	Amount     Amount // what it can spend
	Locked     Amount // what its open LP quotes, pending intents and open offers hold
	Holdings   int    // how many holdings make up Amount
}

// Balances returns the party's balance of every instrument, in the order of Instruments.
func (s *Store) Balances(ctx context.Context, partyID string) ([]Balance, error) {
	if _, err := s.Party(ctx, partyID); err != nil {
		return nil, err
	}
	var hs []Holding
	err := s.db.NewSelect().Model(&hs).Column("instrument", "amount").
		Where("owner = ?", partyID).Where("consumed_update IS NULL").
		Scan(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Balance, len(Instruments))
	for i, inst := range Instruments {
		out[i] = Balance{Instrument: inst, Amount: Zero, Locked: Zero}
	}
	for _, h := range hs {
		if i := slices.Index(Instruments, h.Instrument); i >= 0 {
			out[i].Amount = out[i].Amount.Add(h.Amount)
			out[i].Holdings++
		}
	}
	locked, err := s.lockedBy(ctx, partyID)
	if err != nil {
		return nil, err
	}
	for i := range out {
		if a, ok := locked[out[i].Instrument]; ok {
			out[i].Locked = a
		}
	}
	return out, nil
}

// lockedBy sums what the party's open LP quotes, pending intents and offers lock, per
// instrument (an expired offer's funds are locked until the service releases them).
func (s *Store) lockedBy(ctx context.Context, partyID string) (map[Instrument]Amount, error) {
	var qs []LPQuote
	if err := s.db.NewSelect().Model(&qs).Column("instrument", "amount").Where("lp = ?", partyID).Where("consumed_update IS NULL").Scan(ctx); err != nil {
		return nil, err
	}
	var ins []SwapIntent
	if err := s.db.NewSelect().Model(&ins).Column("instrument", "amount").Where("taker = ?", partyID).Where("consumed_update IS NULL").Scan(ctx); err != nil {
		return nil, err
	}
	var os []Offer
	if err := s.db.NewSelect().Model(&os).Column("instrument", "amount").Where("maker = ?", partyID).Where("consumed_update IS NULL").Scan(ctx); err != nil {
		return nil, err
	}
	out := map[Instrument]Amount{}
	for _, o := range os {
		out[o.Instrument] = out[o.Instrument].Add(o.Amount)
	}
	for _, q := range qs {
		out[q.Instrument] = out[q.Instrument].Add(q.Amount)
	}
	for _, in := range ins {
		out[in.Instrument] = out[in.Instrument].Add(in.Amount)
	}
	return out, nil
}

// UTXOCount returns how many active holdings the party has of each instrument.
func (s *Store) UTXOCount(ctx context.Context, partyID string) (map[Instrument]int, error) {
	bs, err := s.Balances(ctx, partyID)
	if err != nil {
		return nil, err
	}
	out := make(map[Instrument]int, len(bs))
	for _, b := range bs {
		out[b.Instrument] = b.Holdings
	}
	return out, nil
}

// Coin selection bounds. A transfer spends the holdings it needs (at most maxInputs) and,
// while it has room under consolidateTo inputs, the sender's smallest holdings below the
// amount as well, so a fragmented wallet gets fewer, larger holdings as it is used.
const (
	maxInputs     = 100
	consolidateTo = 32
)

// selectHoldings chooses the holdings that pay amount. It prefers holdings no pending
// prepared transaction names (claimed), so several transfers prepared at once from one
// wallet spend disjoint holdings; it reserves nothing, and falls back on claimed ones.
func selectHoldings(hs []Holding, claimed map[string]bool, amount Amount) ([]Holding, error) {
	total := Zero
	for _, h := range hs {
		total = total.Add(h.Amount)
	}
	if total.Cmp(amount) < 0 {
		return nil, Errorf(CodeInsufficientFunds, "the balance is %s, less than %s", total, amount)
	}
	// Unclaimed first, then larger first: the fewest inputs that cover the amount.
	slices.SortFunc(hs, func(a, b Holding) int {
		if c := cmpBool(claimed[a.CID], claimed[b.CID]); c != 0 {
			return c
		}
		if c := b.Amount.Cmp(a.Amount); c != 0 {
			return c
		}
		return cmp.Compare(a.CID, b.CID)
	})
	var picked []Holding
	sum := Zero
	for i := 0; sum.Cmp(amount) < 0; i++ {
		picked = append(picked, hs[i])
		sum = sum.Add(hs[i].Amount)
	}
	if len(picked) > maxInputs {
		return nil, Errorf(CodeConflict, "paying %s takes %d holdings, more than %d in one transaction; send a smaller amount first to consolidate", amount, len(picked), maxInputs)
	}
	// Consolidate: the smallest unclaimed holdings worth less than the amount ride along.
	rest := hs[len(picked):]
	slices.SortFunc(rest, func(a, b Holding) int {
		if c := a.Amount.Cmp(b.Amount); c != 0 {
			return c
		}
		return cmp.Compare(a.CID, b.CID)
	})
	for _, h := range rest {
		if len(picked) >= consolidateTo || h.Amount.Cmp(amount) >= 0 {
			break
		}
		if !claimed[h.CID] {
			picked = append(picked, h)
		}
	}
	return picked, nil
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
