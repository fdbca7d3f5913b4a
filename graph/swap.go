package graph

import (
	"context"
	"sort"

	"marketd/store"
)

// PoolOutcome is a fill a subscription delivers, with its position in the log.
type PoolOutcome struct {
	Position string
	Outcome  *store.Outcome
}

func outcomeOf(v store.IntentView) *store.Outcome {
	o := v.Outcome()
	return &o
}

func outcomeConnection(pr store.PageRequest, page store.Page[store.IntentView]) *OutcomeConnection {
	conn := &OutcomeConnection{PageInfo: pageInfo(pr, page)}
	for i := range page.Items {
		conn.Edges = append(conn.Edges, &OutcomeEdge{Cursor: page.ItemCursors[i], Node: outcomeOf(page.Items[i])})
	}
	return conn
}

// amountsOf lists amounts by instrument, in the order of store.Instruments.
func amountsOf(m map[store.Instrument]store.Amount) []*store.InstrumentAmount {
	out := make([]*store.InstrumentAmount, 0, len(m))
	for inst, a := range m {
		out = append(out, &store.InstrumentAmount{Instrument: inst, Amount: a})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Instrument < out[j].Instrument })
	return out
}

// poolHistory pages through a pool's fills, newest first.
func (r *poolResolver) poolHistory(ctx context.Context, p *store.Pool, first *int, after *string, last *int, before *string) (*OutcomeConnection, error) {
	pr, err := pageRequest(first, after, last, before)
	if err != nil {
		return nil, err
	}
	page, err := r.store.SwapHistory(ctx, store.SwapHistoryFilter{PoolID: p.PoolID, Viewer: viewerParty(ctx)}, pr)
	if err != nil {
		return nil, err
	}
	return outcomeConnection(pr, page), nil
}

// viewerParty is the party the request's token is for, "" without one or with one that does
// not authenticate: a public read answers anyway, without what is that party's own to see.
func viewerParty(ctx context.Context) string {
	p, err := callerParty(ctx)
	if err != nil {
		return ""
	}
	return p
}
