package store

import (
	"context"
	"fmt"

	"marketd/store/wallet"
)

// maxTap bounds one dev-mode tap, so sums stay far inside what the store holds exactly.
var maxTap = MustAmount("1000000")

type tapEffects = wallet.TapEffects

// PrepareTap prepares a dev-mode credit of amount to the party, as one new holding.
func (s *Store) PrepareTap(ctx context.Context, partyID string, inst Instrument, amount Amount) (*Prepared, error) {
	if amount.Cmp(maxTap) > 0 {
		return nil, Errorf(CodeInvalidRequest, "a tap credits at most %s", maxTap)
	}
	e := tapEffects{Owner: partyID, Instrument: inst, Amount: amount}
	summary := map[string]any{"action": "dev tap", "credit": map[string]any{"party": partyID, "instrument": inst, "amount": amount}}
	return s.prepareAs(ctx, KindTap, partyID, e, summary, nil)
}

// HoldingsResult is what an execute that creates holdings adds to the receipt.
type HoldingsResult struct {
	CIDs []string `json:"cids"`
}

func applyTap(ctx context.Context, tx *Tx, u *Update, e *tapEffects) (any, error) {
	h := &Holding{Owner: e.Owner, Instrument: e.Instrument, Amount: e.Amount}
	if err := tx.s.ledger.Commit(ctx, tx.Tx, u, &Transaction{Create: []Contract{h}, Mint: true}); err != nil {
		return nil, err
	}
	return HoldingsResult{CIDs: []string{h.CID}}, nil
}

type transferEffects = wallet.TransferEffects

type spentHolding = wallet.SpentHolding

type newHolding = wallet.NewHolding

// PrepareCCTransfer prepares a transfer of amount CC from sender to receiver. Coin selection
// spends what the amount needs and consolidates small holdings; the change goes back to the
// sender as one holding. The embedded ledger charges no fee.
func (s *Store) PrepareCCTransfer(ctx context.Context, sender, receiver string, amount Amount) (*Prepared, error) {
	if err := checkPartyID("receiver", receiver); err != nil {
		return nil, err
	}
	if _, err := s.Party(ctx, receiver); err != nil {
		return nil, err
	}
	hs, claimed, err := s.spendableHoldings(ctx, sender, CC)
	if err != nil {
		return nil, err
	}
	picked, err := selectHoldings(hs, claimed, amount)
	if err != nil {
		return nil, err
	}
	e := transferEffects{Sender: sender, Receiver: receiver, Instrument: CC, Amount: amount, Fee: Zero}
	sum := Zero
	claims := make([]string, len(picked))
	for i, h := range picked {
		e.Inputs = append(e.Inputs, spentHolding{CID: h.CID, Amount: h.Amount})
		sum = sum.Add(h.Amount)
		claims[i] = h.CID
	}
	e.Outputs = []newHolding{{Owner: receiver, Amount: amount}}
	change := sum.Sub(amount)
	if change.IsPositive() {
		e.Outputs = append(e.Outputs, newHolding{Owner: sender, Amount: change})
	}
	summary := map[string]any{
		"action": fmt.Sprintf("send %s CC to %s", amount, receiver),
		"from":   sender, "to": receiver, "instrument": CC, "amount": amount, "fee": Zero,
		"spends": fmt.Sprintf("%d holding(s) worth %s", len(picked), sum), "change": change,
	}
	return s.prepareAs(ctx, KindCCTransfer, sender, e, summary, claims)
}

func applyTransfer(ctx context.Context, tx *Tx, u *Update, e *transferEffects) (any, error) {
	t := &Transaction{}
	for _, in := range e.Inputs {
		t.Consume = append(t.Consume, ContractRef{Template: templateHolding, CID: in.CID})
	}
	out := make([]*Holding, len(e.Outputs))
	for i, o := range e.Outputs {
		out[i] = &Holding{Owner: o.Owner, Instrument: e.Instrument, Amount: o.Amount}
		t.Create = append(t.Create, out[i])
	}
	if err := tx.s.ledger.Commit(ctx, tx.Tx, u, t); err != nil {
		return nil, err
	}
	if e.Receiver != e.Sender {
		fresh, err := tx.receivedLately(ctx, e.Sender, e.Inputs)
		if err != nil {
			return nil, err
		}
		if rewarded := e.Amount.Sub(fresh); rewarded.IsPositive() {
			u.Reward = transferReward(rewarded)
		}
	}
	res := HoldingsResult{}
	for _, h := range out {
		res.CIDs = append(res.CIDs, h.CID)
	}
	return res, nil
}
