package store

import (
	"context"

	"marketd/store/wallet"
)

type payment = wallet.Payment

// preparePayment selects the payer's holdings for the credits (summed per party, zero
// amounts dropped) and adds the change. It checks at prepare what the ledger checks again at
// execute: a USDCx credit to a party that neither pays nor consents needs its preapproval.
func (s *Store) preparePayment(ctx context.Context, payer string, cur Instrument, credits []newHolding, consenting map[string]bool) (*payment, []string, error) {
	p := &payment{Currency: cur, Total: Zero}
	sums := map[string]Amount{}
	for _, c := range credits {
		if c.Amount.IsPositive() {
			sums[c.Owner] = sums[c.Owner].Add(c.Amount)
			p.Total = p.Total.Add(c.Amount)
		}
	}
	if !p.Total.IsPositive() {
		return p, nil, nil
	}
	for _, party := range sortedKeys(sums) {
		p.Outputs = append(p.Outputs, newHolding{Owner: party, Amount: sums[party]})
		if cur == USDCx && party != payer && !consenting[party] {
			if err := checkPreapproval(ctx, s.db, party, PreapprovalUSDCx, s.now()); err != nil {
				return nil, nil, err
			}
		}
	}
	hs, claimed, err := s.spendableHoldings(ctx, payer, cur)
	if err != nil {
		return nil, nil, err
	}
	picked, err := selectHoldings(hs, claimed, p.Total)
	if err != nil {
		return nil, nil, err
	}
	sum := Zero
	claims := make([]string, len(picked))
	for i, h := range picked {
		p.Inputs = append(p.Inputs, spentHolding{CID: h.CID, Amount: h.Amount})
		sum = sum.Add(h.Amount)
		claims[i] = h.CID
	}
	if change := sum.Sub(p.Total); change.IsPositive() {
		p.Outputs = append(p.Outputs, newHolding{Owner: payer, Amount: change})
	}
	return p, claims, nil
}

// addPayment puts the payment's spends and credits into t.
func addPayment(t *Transaction, p *payment) {
	if p == nil {
		return
	}
	for _, in := range p.Inputs {
		t.Consume = append(t.Consume, ContractRef{Template: templateHolding, CID: in.CID})
	}
	for _, o := range p.Outputs {
		t.Create = append(t.Create, &Holding{Owner: o.Owner, Instrument: p.Currency, Amount: o.Amount})
	}
}
