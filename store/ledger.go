package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/uptrace/bun"
)

// Ledger is where contracts live and how a committed transaction changes them. The embedded
// ledger keeps contracts in the store's own tables and commits inside the caller's database
// transaction; a ledger node would accept the same Transaction over its API and the store
// would mirror the update it answers with.
type Ledger interface {
	// Commit applies t as part of update u: every consumed contract must be active (else
	// stale), holdings may only be spent by their owner, every instrument is conserved unless
	// t mints it, and a credit of USDCx (or an NFT) to a party other than the signer needs that
	// party's active preapproval. It assigns the ids of the contracts t creates.
	Commit(ctx context.Context, tx *Tx, u *Update, t *Transaction) error
}

// Transaction is what one committed update does to the ledger.
type Transaction struct {
	Consume []ContractRef // contracts it archives
	Create  []Contract    // contracts it creates; Commit sets their ids
	Mint    bool          // it may create holdings out of nothing (the dev tap)
}

// ContractRef names a contract: its template (table) and id.
type ContractRef struct {
	Template string `json:"template"`
	CID      string `json:"cid"`
}

// Contract is a bun model of one contract template. Every template's table has the columns
// of Lifecycle.
type Contract interface {
	lifecycle() *Lifecycle
	template() string
}

// Lifecycle is the part every contract shares: its id, and the updates that created and
// consumed it.
type Lifecycle struct {
	CID            string     `bun:"cid,pk"`
	CreatedUpdate  string     `bun:"created_update"`
	CreatedAt      Timestamp  `bun:"created_at"`
	ConsumedUpdate *string    `bun:"consumed_update"`
	ConsumedAt     *Timestamp `bun:"consumed_at"`
}

func (l *Lifecycle) lifecycle() *Lifecycle { return l }

// Active tells whether no update has consumed the contract.
func (l *Lifecycle) Active() bool { return l.ConsumedUpdate == nil }

// updateEvent is one row of the event log: an update consumed or created a contract.
type updateEvent struct {
	bun.BaseModel `bun:"table:update_events"`

	UpdateID string `bun:"update_id,pk"`
	Seq      int    `bun:"seq,pk"`
	Event    string `bun:"event"` // "consumed" or "created"
	Template string `bun:"template"`
	CID      string `bun:"cid"`
}

// contractID derives the id of the n-th contract an update creates.
func contractID(updateID string, n int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%d", updateID, n))
	return "00" + hex.EncodeToString(sum[:])
}

// embeddedLedger is the Ledger in the store's own tables.
type embeddedLedger struct{}

func (embeddedLedger) Commit(ctx context.Context, tx *Tx, u *Update, t *Transaction) error {
	spent := map[Instrument]Amount{}
	var events []updateEvent
	byTemplate := map[string][]string{}
	for _, ref := range t.Consume {
		byTemplate[ref.Template] = append(byTemplate[ref.Template], ref.CID)
	}
	for _, template := range slices.Sorted(maps.Keys(byTemplate)) {
		cids := byTemplate[template]
		consumed, err := tx.consume(ctx, u, template, cids)
		if err != nil {
			return err
		}
		for _, h := range consumed {
			if h.Owner != u.ActAs {
				return Errorf(CodePartyMismatch, "holding %s belongs to %s, not to the signer %s", h.CID, h.Owner, u.ActAs)
			}
			spent[h.Instrument] = spent[h.Instrument].Add(h.Amount)
		}
	}
	for _, ref := range t.Consume {
		events = append(events, updateEvent{UpdateID: u.UpdateID, Seq: len(events), Event: "consumed", Template: ref.Template, CID: ref.CID})
	}

	credited := map[Instrument]Amount{}
	for i, c := range t.Create {
		l := c.lifecycle()
		l.CID, l.CreatedUpdate, l.CreatedAt = contractID(u.UpdateID, i), u.UpdateID, At(tx.now)
		if h, ok := c.(*Holding); ok {
			if err := checkAmountBounds(h.Amount); err != nil {
				return err
			}
			credited[h.Instrument] = credited[h.Instrument].Add(h.Amount)
			if h.Instrument == USDCx && h.Owner != u.ActAs && !h.Consented {
				if err := tx.requirePreapproval(ctx, h.Owner, PreapprovalUSDCx); err != nil {
					return err
				}
			}
		}
		events = append(events, updateEvent{UpdateID: u.UpdateID, Seq: len(events), Event: "created", Template: c.template(), CID: l.CID})
	}
	if err := tx.insertContracts(ctx, t.Create); err != nil {
		return err
	}
	if !t.Mint {
		for _, inst := range Instruments {
			if !spent[inst].Equal(credited[inst]) {
				return fmt.Errorf("ledger: %s not conserved: spends %s, credits %s", inst, spent[inst], credited[inst])
			}
		}
	}
	if len(events) > 0 {
		return tx.later(ctx, tx.NewInsert().Model(&events))
	}
	return nil
}

// insertContracts writes the created contracts, one INSERT per template.
func (tx *Tx) insertContracts(ctx context.Context, cs []Contract) error {
	var holdings []*Holding
	for _, c := range cs {
		if h, ok := c.(*Holding); ok {
			holdings = append(holdings, h)
			continue
		}
		if err := tx.later(ctx, tx.NewInsert().Model(c)); err != nil {
			return err
		}
	}
	if len(holdings) > 0 {
		return tx.later(ctx, tx.NewInsert().Model(&holdings))
	}
	return nil
}

// consume archives the contracts cids of template for update u, all or none: a contract
// already consumed (or never created) makes the whole transaction stale. For holdings it
// returns what was spent.
func (tx *Tx) consume(ctx context.Context, u *Update, template string, cids []string) ([]Holding, error) {
	if len(cids) == 0 {
		return nil, nil
	}
	if len(slices.Compact(slices.Sorted(slices.Values(cids)))) != len(cids) {
		return nil, fmt.Errorf("ledger: transaction consumes a contract twice")
	}
	q := tx.NewUpdate().Table(template).
		Set("consumed_update = ?", u.UpdateID).
		Set("consumed_at = ?", At(tx.now)).
		Where("cid IN (?)", bun.In(cids)).
		Where("consumed_update IS NULL")
	var spent []Holding
	var n int64
	if template == templateHolding {
		if err := q.Returning("cid, owner, instrument, amount").Scan(ctx, &spent); err != nil {
			return nil, err
		}
		n = int64(len(spent))
	} else {
		res, err := q.Exec(ctx)
		if err != nil {
			return nil, err
		}
		n, _ = res.RowsAffected()
	}
	if int(n) != len(cids) {
		return nil, Errorf(CodeStale, "%d of the %d contracts this transaction consumes were consumed since it was prepared (%s); prepare it again", len(cids)-int(n), len(cids), strings.TrimSuffix(template, "s"))
	}
	return spent, nil
}
