package graph

import (
	"context"
	"sort"

	"marketd/store"
)

// Outcome is a filled intent as REST's outcomes show it (CONTRACT.md section 11).
type Outcome struct {
	IntentCID string
	UpdateID  string
	Taker     string
	PoolID    string
	Sold      *InstrumentAmount
	Received  *InstrumentAmount
	Fee       store.Amount
	At        store.Timestamp
}

// InstrumentAmount is an amount of one instrument.
type InstrumentAmount struct {
	Instrument store.Instrument
	Amount     store.Amount
}

// PoolOutcome is a fill a subscription delivers, with its position in the log.
type PoolOutcome struct {
	Position string
	Outcome  *Outcome
}

func outcomeOf(v store.IntentView) *Outcome {
	o := &Outcome{IntentCID: v.IntentCID, Taker: v.Taker, PoolID: v.PoolID, Sold: &InstrumentAmount{v.Sell, v.Amount},
		Received: &InstrumentAmount{Instrument: v.Receive, Amount: store.Zero}, Fee: store.Zero}
	if v.ClosedUpdate != nil {
		o.UpdateID = *v.ClosedUpdate
	}
	if v.ClosedAt != nil {
		o.At = *v.ClosedAt
	}
	if v.Received != nil {
		o.Received.Amount = *v.Received
	}
	if v.Fee != nil {
		o.Fee = *v.Fee
	}
	return o
}

func outcomeConnection(pr store.PageRequest, page store.Page[store.IntentView]) *OutcomeConnection {
	conn := &OutcomeConnection{PageInfo: pageInfo(pr, page)}
	for i := range page.Items {
		conn.Edges = append(conn.Edges, &OutcomeEdge{Cursor: page.ItemCursors[i], Node: outcomeOf(page.Items[i])})
	}
	return conn
}

// amountsOf lists amounts by instrument, in the order of store.Instruments.
func amountsOf(m map[store.Instrument]store.Amount) []*InstrumentAmount {
	out := make([]*InstrumentAmount, 0, len(m))
	for inst, a := range m {
		out = append(out, &InstrumentAmount{Instrument: inst, Amount: a})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Instrument < out[j].Instrument })
	return out
}

// poolHistory pages through a pool's fills, newest first.
func (r *poolResolver) poolHistory(ctx context.Context, p *store.Pool, first *int, after *string) (*OutcomeConnection, error) {
	pr, err := pageRequest(first, after)
	if err != nil {
		return nil, err
	}
	page, err := r.store.SwapHistory(ctx, store.SwapHistoryFilter{PoolID: p.PoolID}, pr)
	if err != nil {
		return nil, err
	}
	return outcomeConnection(pr, page), nil
}
