package store

import (
	"context"
	"time"

	"marketd/store/wallet"
)

type lockFunds = wallet.LockedFunds

// prepareLock selects the party's holdings of inst that cover amount.
func (s *Store) prepareLock(ctx context.Context, party string, inst Instrument, amount Amount) (*lockFunds, []string, error) {
	hs, claimed, err := s.spendableHoldings(ctx, party, inst)
	if err != nil {
		return nil, nil, err
	}
	picked, err := selectHoldings(hs, claimed, amount)
	if err != nil {
		return nil, nil, err
	}
	l := &lockFunds{Instrument: inst, Amount: amount, Change: Zero}
	sum := Zero
	claims := make([]string, len(picked))
	for i, h := range picked {
		l.Inputs = append(l.Inputs, spentHolding{CID: h.CID, Amount: h.Amount})
		sum = sum.Add(h.Amount)
		claims[i] = h.CID
	}
	l.Change = sum.Sub(amount)
	return l, claims, nil
}

// addLock consumes the locked holdings in t and returns the change to owner.
func addLock(t *Transaction, l *lockFunds, owner string) {
	for _, in := range l.Inputs {
		t.Consume = append(t.Consume, ContractRef{Template: templateHolding, CID: in.CID})
	}
	if l.Change.IsPositive() {
		t.Create = append(t.Create, &Holding{Owner: owner, Instrument: l.Instrument, Amount: l.Change})
	}
}

// deadline checks a client's expiry instant: in the future, and at most within ahead.
func (s *Store) deadline(field string, at int64, within time.Duration) error {
	now := s.now()
	switch t := time.Unix(at, 0); {
	case !t.After(now):
		return Errorf(CodeInvalidRequest, "%s must be in the future", field)
	case t.After(now.Add(within)):
		return Errorf(CodeInvalidRequest, "%s must be at most %s ahead", field, within)
	}
	return nil
}
