package store

import (
	"context"

	"github.com/shopspring/decimal"
	"github.com/uptrace/bun"
)

// ---- indicative quote

// SwapQuote is an indicative, non-binding quote: the oracle's estimate and what walking
// the pool's open LP quotes best first would give, both net of the pool's fee.
type SwapQuote struct {
	Pool             *Pool
	Sell             Instrument
	Amount           Amount
	Oracle           *OraclePrice
	OracleEstimate   Amount
	EstimatedReceive *Amount // nil when the open quotes cannot fill the whole amount
	Fills            []Fill
}

// Quote quotes selling amount of sell in the pool poolID or, when it is "", in every pool
// that trades sell, answering the best estimate.
func (s *Store) Quote(ctx context.Context, sellText, amountText, poolID string) (*SwapQuote, error) {
	sell, err := ParseInstrument(sellText)
	if err != nil {
		return nil, err
	}
	amount, err := ParseAmount(amountText, sell)
	if err != nil {
		return nil, fieldError("amount", err)
	}
	var pools []Pool
	if poolID != "" {
		p, err := s.PoolByID(ctx, poolID)
		if err != nil {
			return nil, err
		}
		if _, err := p.other(sell); err != nil {
			return nil, err
		}
		pools = []Pool{*p}
	} else {
		all, err := s.Pools(ctx)
		if err != nil {
			return nil, err
		}
		for _, p := range all {
			if _, err := p.other(sell); err == nil {
				pools = append(pools, p)
			}
		}
		if len(pools) == 0 {
			return nil, Errorf(CodeNotFound, "no pool trades %s", sell)
		}
	}
	var best *SwapQuote
	for i := range pools {
		q, err := s.quoteIn(ctx, &pools[i], sell, amount)
		if err != nil {
			return nil, err
		}
		if best == nil || q.estimate().Cmp(best.estimate()) > 0 {
			best = q
		}
	}
	return best, nil
}

// estimate is what the quote expects the taker to receive: the book's walk when it fills,
// else the oracle's estimate.
func (q *SwapQuote) estimate() Amount {
	if q.EstimatedReceive != nil {
		return *q.EstimatedReceive
	}
	return q.OracleEstimate
}

func (s *Store) quoteIn(ctx context.Context, p *Pool, sell Instrument, amount Amount) (*SwapQuote, error) {
	op, err := s.Oracle().Price(ctx, p.Base, p.Quote)
	if err != nil {
		return nil, err
	}
	recv, _ := p.other(sell)
	fee := decimal.NewFromInt(int64(p.FeeBps)).Div(bpsDivisor)
	var gross Amount
	if sell == p.Base {
		gross = amount.MulFloor(op.Price.Decimal(), recv.Decimals())
	} else {
		gross = amountOf(amount.Decimal().Div(op.Price.Decimal()).Truncate(recv.Decimals()))
	}
	q := &SwapQuote{Pool: p, Sell: sell, Amount: amount, Oracle: op, OracleEstimate: gross.Sub(gross.MulFloor(fee, recv.Decimals())), Fills: []Fill{}}
	book, err := bookFor(ctx, s.db, p, "", sell, s.now())
	if err != nil {
		return nil, err
	}
	fills, whole := walkBook(p, book, sell, amount)
	received := Zero
	for _, f := range fills {
		q.Fills = append(q.Fills, Fill{QuoteID: f.q.QuoteID, LP: f.q.LP, Price: f.q.Price, AmountIn: f.in, AmountOut: f.out, Fee: f.fee})
		received = received.Add(f.out.Sub(f.fee))
	}
	if whole {
		q.EstimatedReceive = &received
	}
	return q, nil
}

// ---- aggregates

// PoolAggregates are a pool's figures, each defined in rest/openapi.yaml.
type PoolAggregates struct {
	Pool                   *Pool
	TVL                    Amount
	LPCount                int
	AccruedFees            map[Instrument]Amount
	DepthWeightedSpreadBps Amount
}

// ---- LP quotes and intents of a party

type quoteKey struct {
	At int64  `json:"a"`
	ID string `json:"q"`
}

// ActiveLPQuotes lists the LP's open quotes, newest first.
func (s *Store) ActiveLPQuotes(ctx context.Context, lp string, r PageRequest) (Page[LPQuote], error) {
	return s.openLPQuotes(ctx, "lp-quotes:"+hashText(lp), "lp", lp, r)
}

// openLPQuotes pages through the open LP quotes whose column equals value, newest first; list
// names the list inside its cursors.
func (s *Store) openLPQuotes(ctx context.Context, list, column, value string, r PageRequest) (Page[LPQuote], error) {
	pq, err := startPage[quoteKey](ctx, s, list, r)
	if err != nil {
		return Page[LPQuote]{}, err
	}
	var rows []LPQuote
	q := s.db.NewSelect().Model(&rows).Where("? = ?", bun.Ident(column), value).Where("consumed_update IS NULL")
	q = pq.Seek(q, true, []string{"posted_at", "quote_id"}, pq.At(func(k quoteKey) []any { return []any{k.At, k.ID} }))
	if err := q.Limit(pq.Fetch()).Scan(ctx); err != nil {
		return Page[LPQuote]{}, err
	}
	return finish(ctx, s, pq, rows, func(q LPQuote) quoteKey { return quoteKey{q.PostedAt.UnixMicro(), q.QuoteID} })
}

// IntentStatus returns the taker's intent with its fills.
func (s *Store) IntentStatus(ctx context.Context, taker, intentCID string) (*IntentView, error) {
	v, err := s.intentFor(ctx, intentCID, taker)
	if err != nil {
		return nil, err
	}
	v.Fills = []Fill{}
	if err := s.db.NewSelect().Model(&v.Fills).Where("intent_cid = ?", intentCID).Order("seq").Scan(ctx); err != nil {
		return nil, err
	}
	return v, nil
}

type intentKey struct {
	At  int64  `json:"a"`
	CID string `json:"c"`
}

// ActiveIntents lists the taker's pending intents, newest first.
func (s *Store) ActiveIntents(ctx context.Context, taker string, r PageRequest) (Page[IntentView], error) {
	pq, err := startPage[intentKey](ctx, s, "intents:"+hashText(taker), r)
	if err != nil {
		return Page[IntentView]{}, err
	}
	var rows []IntentView
	q := s.db.NewSelect().Model(&rows).Where("taker = ?", taker).Where("status = ?", IntentPending)
	q = pq.Seek(q, true, []string{"created_at", "intent_cid"}, pq.At(func(k intentKey) []any { return []any{k.At, k.CID} }))
	if err := q.Limit(pq.Fetch()).Scan(ctx); err != nil {
		return Page[IntentView]{}, err
	}
	return finish(ctx, s, pq, rows, func(v IntentView) intentKey { return intentKey{v.CreatedAt.UnixMicro(), v.IntentCID} })
}

// SwapHistoryFilter picks whose swaps: one taker's or one pool's.
type SwapHistoryFilter struct {
	Taker  string // the caller must have checked that its token is this party's
	PoolID string
	// Viewer is the party the caller's token is for, "" without one. A pool's history is
	// public but who swapped is not: a fill's taker is shown only to the taker itself.
	Viewer string
}

// SwapHistory lists filled intents, newest fill first: the taker's or the pool's.
func (s *Store) SwapHistory(ctx context.Context, f SwapHistoryFilter, r PageRequest) (Page[IntentView], error) {
	if f.PoolID != "" {
		if _, err := s.PoolByID(ctx, f.PoolID); err != nil {
			return Page[IntentView]{}, err
		}
	}
	pq, err := startPage[intentKey](ctx, s, "swaps:"+hashText(f.Taker+"|"+f.PoolID), r)
	if err != nil {
		return Page[IntentView]{}, err
	}
	var rows []IntentView
	q := withLogIndex(s.db.NewSelect().Model(&rows).ColumnExpr("?TableAlias.*"), "closed_update").Where("status = ?", IntentFilled)
	if f.Taker != "" {
		q = q.Where("taker = ?", f.Taker)
	}
	if f.PoolID != "" {
		q = q.Where("pool_id = ?", f.PoolID)
	}
	q = pq.Seek(q, true, []string{"closed_at", "intent_cid"}, pq.At(func(k intentKey) []any { return []any{k.At, k.CID} }))
	if err := q.Limit(pq.Fetch()).Scan(ctx); err != nil {
		return Page[IntentView]{}, err
	}
	if f.Taker == "" {
		hideTakers(rows, f.Viewer)
	}
	return finish(ctx, s, pq, rows, func(v IntentView) intentKey { return intentKey{v.ClosedAt.UnixMicro(), v.IntentCID} })
}

// hideTakers applies the pool feeds' one privacy rule to fills read for viewer (the party of
// the caller's token, "" for none): a fill's taker stays only on the taker's own fills; on
// every other it is blanked, and its Outcome has no Taker. Every read of a pool's fills, paged
// or followed, passes through here.
func hideTakers(views []IntentView, viewer string) {
	for i := range views {
		if viewer == "" || views[i].Taker != viewer {
			views[i].Taker = ""
		}
	}
}

// InstrumentAmount is an amount of one instrument.
type InstrumentAmount struct {
	Instrument Instrument `json:"instrument"`
	Amount     Amount     `json:"amount"`
}

// Outcome is a filled intent as the outcome and history lists show it: what the taker sold,
// what it received net of the fee (the fills' amountOut less their fees), and the fee.
type Outcome struct {
	IntentCID string
	UpdateID  string
	LogIndex  *int64  // the update's index in the transparency log; nil while the log has no entry of it
	Taker     *string // nil when the viewer may not see it: a pool's feeds show it to the taker only
	PoolID    string
	Sold      InstrumentAmount
	Received  InstrumentAmount
	Fee       Amount
	At        Timestamp
}

// Outcome is the intent's outcome; a field the intent has not got yet is zero, and the taker
// is nil when a pool feed hid it (hideTakers).
func (v *IntentView) Outcome() Outcome {
	o := Outcome{IntentCID: v.IntentCID, PoolID: v.PoolID, Sold: InstrumentAmount{v.Sell, v.Amount},
		Received: InstrumentAmount{Instrument: v.Receive, Amount: Zero}, Fee: Zero}
	if v.Taker != "" {
		taker := v.Taker
		o.Taker = &taker
	}
	if v.ClosedUpdate != nil {
		o.UpdateID = *v.ClosedUpdate
		o.LogIndex = v.LogIndex
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
