// Package memledger is a ledger kept in memory, outside the store package: the smallest
// implementation of ledger.Ledger, which shows what any ledger behind the store must do
// importing only the ledger's core (marketd/store/ledger). It checks each transaction (every consumed contract active
// and controlled by the signer, every instrument conserved unless the transaction mints),
// commits a batch atomically (all of it or none), gives the contracts it creates their ids,
// assigns each update the next offset and keeps a receipt per update. It keeps no
// preapprovals, offers or assets: the embedded ledger's further rules are its own.
package memledger

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"marketd/store/ledger"
)

// Ledger is the in-memory ledger. Its methods are safe for concurrent use.
type Ledger struct {
	mu       sync.Mutex
	active   map[string]ledger.Contract // the live contracts, by id
	offset   int64                      // the last offset assigned
	receipts map[string]Receipt         // by update id
}

// Receipt is what the ledger reports of one committed update.
type Receipt struct {
	Offset   int64
	Consumed []string // the ids of the contracts it archived
	Created  []string // the ids it gave the contracts it created
}

var _ ledger.Ledger = (*Ledger)(nil)

// New returns an empty ledger.
func New() *Ledger {
	return &Ledger{active: map[string]ledger.Contract{}, receipts: map[string]Receipt{}}
}

// Commit commits t as update u, as a batch of one.
func (l *Ledger) Commit(ctx context.Context, tx *ledger.Tx, u *ledger.Update, t *ledger.Transaction) error {
	_, err := l.CommitBatch(ctx, tx, []*ledger.Update{u}, []*ledger.Transaction{t})
	return err
}

// CommitBatch checks and applies ts[i] as us[i], in order, each seeing what the earlier ones
// did; if one fails, nothing of the batch is applied and its index is answered. It keeps no
// state in the store's database, so it ignores the store's transaction.
func (l *Ledger) CommitBatch(_ context.Context, _ *ledger.Tx, us []*ledger.Update, ts []*ledger.Transaction) (int, error) {
	if len(us) != len(ts) {
		return -1, fmt.Errorf("memledger: %d updates for %d transactions", len(us), len(ts))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	staged := maps.Clone(l.active)
	receipts := make([]Receipt, len(ts))
	for i, t := range ts {
		r, err := apply(staged, us[i], t)
		if err != nil {
			return i, err
		}
		receipts[i] = r
	}
	l.active = staged
	for i, u := range us {
		l.offset++
		u.Offset, receipts[i].Offset = l.offset, l.offset
		l.receipts[u.UpdateID] = receipts[i]
	}
	return -1, nil
}

// apply checks t as u's against the live contracts and applies it to them.
func apply(active map[string]ledger.Contract, u *ledger.Update, t *ledger.Transaction) (Receipt, error) {
	var r Receipt
	spent := map[ledger.Instrument]ledger.Amount{}
	for _, ref := range t.Consume {
		c, ok := active[ref.CID]
		if !ok || c.Template() != ref.Template {
			return r, ledger.Errorf(ledger.CodeStale, "%s %s is not active", ref.Template, ref.CID)
		}
		if c.Controller() != u.ActAs {
			return r, ledger.Errorf(ledger.CodePartyMismatch, "%s %s belongs to %s, not to the signer %s", ref.Template, ref.CID, c.Controller(), u.ActAs)
		}
		if v, ok := c.(ledger.ValuedContract); ok {
			inst, amount := v.Holds()
			spent[inst] = spent[inst].Add(amount)
		}
		delete(active, ref.CID)
		r.Consumed = append(r.Consumed, ref.CID)
	}
	credited := map[ledger.Instrument]ledger.Amount{}
	for i, c := range t.Create {
		if v, ok := c.(ledger.ValuedContract); ok {
			inst, amount := v.Holds()
			credited[inst] = credited[inst].Add(amount)
		}
		life := c.Life()
		life.CID, life.CreatedUpdate, life.CreatedAt = fmt.Sprintf("%s/%d", u.UpdateID, i), u.UpdateID, u.RecordedAt
		active[life.CID] = c
		r.Created = append(r.Created, life.CID)
	}
	if !t.Mint {
		for _, inst := range ledger.Instruments {
			if !spent[inst].Equal(credited[inst]) {
				return r, fmt.Errorf("memledger: %s not conserved: spends %s, credits %s", inst, spent[inst], credited[inst])
			}
		}
	}
	return r, nil
}

// Receipt answers the receipt of a committed update.
func (l *Ledger) Receipt(updateID string) (Receipt, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.receipts[updateID]
	return r, ok
}

// Balance answers what party's live contracts hold of inst.
func (l *Ledger) Balance(party string, inst ledger.Instrument) ledger.Amount {
	l.mu.Lock()
	defer l.mu.Unlock()
	var sum ledger.Amount
	for _, c := range l.active {
		if v, ok := c.(ledger.ValuedContract); ok && c.Controller() == party {
			if i, a := v.Holds(); i == inst {
				sum = sum.Add(a)
			}
		}
	}
	return sum
}
