package store

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/shopspring/decimal"
	"github.com/uptrace/bun"

	"marketd/store/ledger"
)

// A pool's aggregates are read from running figures, not from its contracts: what its open
// LP quotes lock, their depth, its LP count and the fees no claim has paid yet. The ledger
// changes them in the same transaction as every contract it creates or archives that counts
// in a pool (an LP quote or an LP's running fee), whoever builds the transaction: a quote, a
// fill, a cancel, an expiry, a claim. So a read is one row, however long the pool has traded.
//
// The depth-weighted spread needs Σ remaining × |price − oracle|, which no single running sum
// gives. The quotes' depth and depth × price are kept in two sums, split at a pivot price:
// those priced below it and those at or above. While the pivot is the oracle's price, the
// spread is exact from the four sums; setting the oracle's price moves every pool's pivot to
// it in the same transaction. A read that finds them apart (another oracle, a price set
// meanwhile) splits the open quotes at the oracle's price itself.

// poolFigures is a pool's running figures.
type poolFigures struct {
	bun.BaseModel `bun:"table:swap_pool_figures"`

	PoolID      string     `bun:"pool_id,pk"`
	Base        Instrument `bun:"base"` // the pool's terms, which never change
	Quote       Instrument `bun:"quote"`
	FeeBps      int        `bun:"fee_bps"`
	Operator    string     `bun:"operator"`
	Pivot       Amount     `bun:"pivot"`
	BaseLocked  Amount     `bun:"base_locked"`  // Σ what open quotes lock in base (asks)
	QuoteLocked Amount     `bun:"quote_locked"` // Σ what open quotes lock in quote (bids)
	BelowDepth  Amount     `bun:"below_depth"`  // Σ remaining of open quotes priced below the pivot
	BelowValue  Amount     `bun:"below_value"`  // Σ remaining × price of the same
	AboveDepth  Amount     `bun:"above_depth"`  // the same for quotes priced at or above it
	AboveValue  Amount     `bun:"above_value"`
	BaseFees    Amount     `bun:"base_fees"` // Σ unclaimed fees, per instrument
	QuoteFees   Amount     `bun:"quote_fees"`
	LPCount     int        `bun:"lp_count"` // LPs with an open quote
}

// poolLP is how many open quotes an LP has in a pool.
type poolLP struct {
	bun.BaseModel `bun:"table:swap_pool_lps"`

	PoolID     string `bun:"pool_id,pk"`
	LP         string `bun:"lp,pk"`
	OpenQuotes int    `bun:"open_quotes"`
}

func newPoolFigures(p *Pool, pivot Amount) *poolFigures {
	return &poolFigures{PoolID: p.PoolID, Base: p.Base, Quote: p.Quote, FeeBps: p.FeeBps, Operator: p.Operator, Pivot: pivot, BaseLocked: Zero, QuoteLocked: Zero,
		BelowDepth: Zero, BelowValue: Zero, AboveDepth: Zero, AboveValue: Zero, BaseFees: Zero, QuoteFees: Zero}
}

// poolShare is one contract's part in its pool's figures.
type poolShare struct {
	lp               string
	quote            bool // an LP quote; else an LP's fee
	instrument       Instrument
	amount           Amount
	price, remaining Amount
	sign             int // +1 created, -1 archived
}

func shareOf(template, lp string, inst Instrument, amount, price, remaining Amount, sign int) poolShare {
	return poolShare{lp: lp, quote: template == templateLPQuote, instrument: inst, amount: amount, price: price,
		remaining: remaining, sign: sign}
}

// add counts s in the figures (s.sign says whether it comes or goes).
func (f *poolFigures) add(s poolShare) {
	sign := decimal.NewFromInt(int64(s.sign))
	amount := amountOf(s.amount.Decimal().Mul(sign))
	if !s.quote {
		switch s.instrument {
		case f.Base:
			f.BaseFees = f.BaseFees.Add(amount)
		case f.Quote:
			f.QuoteFees = f.QuoteFees.Add(amount)
		}
		return
	}
	switch s.instrument {
	case f.Base:
		f.BaseLocked = f.BaseLocked.Add(amount)
	case f.Quote:
		f.QuoteLocked = f.QuoteLocked.Add(amount)
	}
	f.addDepth(s.price, amountOf(s.remaining.Decimal().Mul(sign)))
}

// addDepth counts remaining at price in the depth sums, on its side of the pivot.
func (f *poolFigures) addDepth(price, remaining Amount) {
	value := amountOf(remaining.Decimal().Mul(price.Decimal()))
	if price.Cmp(f.Pivot) < 0 {
		f.BelowDepth, f.BelowValue = f.BelowDepth.Add(remaining), f.BelowValue.Add(value)
	} else {
		f.AboveDepth, f.AboveValue = f.AboveDepth.Add(remaining), f.AboveValue.Add(value)
	}
}

// splitAt sets the pivot to price and the depth sums from the pool's open quotes.
func (f *poolFigures) splitAt(price Amount, open []LPQuote) {
	f.Pivot, f.BelowDepth, f.BelowValue, f.AboveDepth, f.AboveValue = price, Zero, Zero, Zero, Zero
	for _, q := range open {
		f.addDepth(q.Price, q.Remaining)
	}
}

// The pool figures observe every commit of the ledger.
func init() { ledger.Observe(countInPools) }

// pooled tells whether a template's contracts count in their pool's running figures: LP
// quotes and LP fees, whose payload is their pool and, for a quote, its price and remaining size.
func pooled(template string) bool { return template == templateLPQuote || template == templateLPFee }

// countInPools changes the running figures of every pool a batch's transactions change:
// consumed are the contracts each archives, ts what each creates.
func countInPools(ctx context.Context, tx *ledger.Tx, consumed [][]ledger.Archived, ts []*Transaction) error {
	shares := map[string][]poolShare{}
	for _, cs := range consumed {
		for _, c := range cs {
			if pooled(c.Template) {
				p := c.Payload
				shares[p.Key] = append(shares[p.Key], shareOf(c.Template, c.Owner, c.Instrument, c.Amount, p.Figures[0], p.Figures[1], -1))
			}
		}
	}
	for _, t := range ts {
		for _, c := range t.Create {
			if !pooled(c.Template()) {
				continue
			}
			p := c.(ledger.PayloadContract).Payload()
			inst, amount := c.(ValuedContract).Holds()
			shares[p.Key] = append(shares[p.Key], shareOf(c.Template(), c.Controller(), inst, amount, p.Figures[0], p.Figures[1], +1))
		}
	}
	if len(shares) == 0 {
		return nil
	}
	pools := slices.Sorted(maps.Keys(shares))
	var figs []poolFigures
	if err := tx.ForUpdate(tx.NewSelect().Model(&figs).Where("pool_id IN (?)", bun.In(pools)).Order("pool_id")).Scan(ctx); err != nil {
		return err
	}
	if len(figs) != len(pools) {
		return fmt.Errorf("pool figures: %d of the pools %v have no figures", len(pools)-len(figs), pools)
	}
	for i := range figs {
		f := &figs[i]
		quotes := map[string]int{} // open quotes each LP gains or loses
		for _, s := range shares[f.PoolID] {
			f.add(s)
			if s.quote {
				quotes[s.lp] += s.sign
			}
		}
		if err := countLPs(ctx, tx, f, quotes); err != nil {
			return err
		}
		if err := tx.Later(ctx, tx.NewUpdate().Model(f).WherePK()); err != nil {
			return err
		}
	}
	return nil
}

// countLPs changes the LPs' open-quote counts in f's pool by delta, and f's LP count with them.
func countLPs(ctx context.Context, tx *ledger.Tx, f *poolFigures, delta map[string]int) error {
	var lps []string
	for lp, d := range delta {
		if d != 0 {
			lps = append(lps, lp)
		}
	}
	if len(lps) == 0 {
		return nil
	}
	slices.Sort(lps)
	var rows []poolLP
	if err := tx.NewSelect().Model(&rows).Where("pool_id = ?", f.PoolID).Where("lp IN (?)", bun.In(lps)).Scan(ctx); err != nil {
		return err
	}
	had := make(map[string]int, len(rows))
	for _, r := range rows {
		had[r.LP] = r.OpenQuotes
	}
	var keep []poolLP
	var gone []string
	for _, lp := range lps {
		n := had[lp] + delta[lp]
		switch {
		case n < 0:
			return fmt.Errorf("pool figures: LP %s would have %d open quotes in %s", lp, n, f.PoolID)
		case n == 0:
			gone = append(gone, lp)
		default:
			keep = append(keep, poolLP{PoolID: f.PoolID, LP: lp, OpenQuotes: n})
		}
		if had[lp] == 0 && n > 0 {
			f.LPCount++
		} else if had[lp] > 0 && n == 0 {
			f.LPCount--
		}
	}
	if len(keep) > 0 {
		if err := tx.Later(ctx, tx.NewInsert().Model(&keep).On("CONFLICT (pool_id, lp) DO UPDATE").Set("open_quotes = EXCLUDED.open_quotes")); err != nil {
			return err
		}
	}
	if len(gone) > 0 {
		return tx.Later(ctx, tx.NewDelete().Model((*poolLP)(nil)).Where("pool_id = ?", f.PoolID).Where("lp IN (?)", bun.In(gone)))
	}
	return nil
}

// openQuotes reads a pool's open quotes.
func openQuotes(ctx context.Context, db bun.IDB, poolID string) ([]LPQuote, error) {
	var qs []LPQuote
	err := db.NewSelect().Model(&qs).Where("pool_id = ?", poolID).Where("consumed_update IS NULL").Scan(ctx)
	return qs, err
}

// figuresFromContracts computes a pool's figures from its open quotes and live fees, split at
// pivot, with each LP's open-quote count.
func figuresFromContracts(p *Pool, pivot Amount, quotes []LPQuote, fees []LPFee) (*poolFigures, []poolLP) {
	f := newPoolFigures(p, pivot)
	counts := map[string]int{}
	for i := range quotes {
		q := &quotes[i]
		f.add(shareOf(templateLPQuote, q.LP, q.Instrument, q.Amount, q.Price, q.Remaining, +1))
		counts[q.LP]++
	}
	for i := range fees {
		fee := &fees[i]
		f.add(shareOf(templateLPFee, fee.LP, fee.Instrument, fee.Amount, Zero, Zero, +1))
	}
	var lps []poolLP
	for _, lp := range slices.Sorted(maps.Keys(counts)) {
		lps = append(lps, poolLP{PoolID: p.PoolID, LP: lp, OpenQuotes: counts[lp]})
	}
	f.LPCount = len(lps)
	return f, lps
}

// fillPoolFigures gives every pool without figures (one created before they existed) its
// figures, computed from its contracts.
func (s *Store) fillPoolFigures(ctx context.Context) error {
	var pools []Pool
	if err := s.db.NewSelect().Model(&pools).Where("consumed_update IS NULL").
		Where("NOT EXISTS (SELECT 1 FROM swap_pool_figures AS f WHERE f.pool_id = pool.pool_id)").Scan(ctx); err != nil {
		return err
	}
	for i := range pools {
		err := s.inTx(ctx, func(tx *Tx) error {
			p, err := tx.lockPool(ctx, pools[i].PoolID)
			if err != nil {
				return err
			}
			quotes, err := openQuotes(ctx, tx, p.PoolID)
			if err != nil {
				return err
			}
			var fees []LPFee
			if err := tx.NewSelect().Model(&fees).Where("pool_id = ?", p.PoolID).Where("consumed_update IS NULL").Scan(ctx); err != nil {
				return err
			}
			pivot := Zero
			if op, err := s.Oracle().Price(ctx, p.Base, p.Quote); err == nil {
				pivot = op.Price
			}
			f, lps := figuresFromContracts(p, pivot, quotes, fees)
			if _, err := tx.NewInsert().Model(f).On("CONFLICT (pool_id) DO NOTHING").Exec(ctx); err != nil {
				return err
			}
			if len(lps) > 0 {
				_, err = tx.NewInsert().Model(&lps).On("CONFLICT (pool_id, lp) DO NOTHING").Exec(ctx)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("pool figures of %s: %w", pools[i].PoolID, err)
		}
	}
	return nil
}

// repivot moves the pivot of every pool of base/quote to price, as the oracle's price
// changes to it in the same transaction.
func (tx *Tx) repivot(ctx context.Context, base, quote Instrument, price Amount) error {
	var figs []poolFigures
	if err := tx.ForUpdate(tx.NewSelect().Model(&figs).Where("base = ?", base).Where("quote = ?", quote).Order("pool_id")).Scan(ctx); err != nil {
		return err
	}
	for i := range figs {
		f := &figs[i]
		if f.Pivot.Equal(price) {
			continue
		}
		open, err := openQuotes(ctx, tx, f.PoolID)
		if err != nil {
			return err
		}
		f.splitAt(price, open)
		if err := tx.Later(ctx, tx.NewUpdate().Model(f).Column("pivot", "below_depth", "below_value", "above_depth", "above_value").WherePK()); err != nil {
			return err
		}
	}
	return nil
}

// poolFiguresRead is a pool's figures with the embedded oracle's price.
type poolFiguresRead struct {
	poolFigures
	Oracle *Amount `bun:"oracle_price"`
}

// Aggregates reads the pool's figures, valued at the oracle:
// tvl = Σ ask locked base × oracle + Σ bid locked quote, rounded down to the quote's precision;
// depthWeightedSpreadBps = 2 × Σ(remaining × |price − oracle|) / (oracle × Σ remaining) × 10000,
// rounded down to 2 decimals (0 with no open quote).
func (s *Store) Aggregates(ctx context.Context, poolID string) (*PoolAggregates, error) {
	var rows []poolFiguresRead
	// One table and a subquery: a join of three tables costs the server more to plan than to run.
	err := s.db.NewRaw(`SELECT f.*,
		(SELECT o.price FROM oracle_prices AS o WHERE o.base = f.base AND o.quote = f.quote) AS oracle_price
		FROM swap_pool_figures AS f WHERE f.pool_id = ?`, poolID).Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		if _, err := s.PoolByID(ctx, poolID); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("pool figures: pool %s has none", poolID)
	}
	r := &rows[0]
	if r.Oracle == nil {
		return nil, noOraclePrice(r.Base, r.Quote)
	}
	f, oracle := &r.poolFigures, *r.Oracle
	if !f.Pivot.Equal(oracle) {
		open, err := openQuotes(ctx, s.db, poolID)
		if err != nil {
			return nil, err
		}
		f.splitAt(oracle, open)
	}
	p := &Pool{PoolID: f.PoolID, Operator: f.Operator, Base: f.Base, Quote: f.Quote, FeeBps: f.FeeBps}
	return f.aggregates(p, oracle), nil
}

// aggregates are the figures valued at oracle, which must be their pivot.
func (f *poolFigures) aggregates(p *Pool, oracle Amount) *PoolAggregates {
	o := oracle.Decimal()
	a := &PoolAggregates{Pool: p, LPCount: f.LPCount, AccruedFees: map[Instrument]Amount{f.Base: f.BaseFees, f.Quote: f.QuoteFees}}
	a.TVL = amountOf(f.BaseLocked.Decimal().Mul(o).Add(f.QuoteLocked.Decimal()).Truncate(f.Quote.Decimals()))
	depth := f.BelowDepth.Decimal().Add(f.AboveDepth.Decimal())
	a.DepthWeightedSpreadBps = Zero
	if depth.IsPositive() {
		weighted := f.AboveValue.Decimal().Sub(o.Mul(f.AboveDepth.Decimal())).Add(o.Mul(f.BelowDepth.Decimal()).Sub(f.BelowValue.Decimal()))
		a.DepthWeightedSpreadBps = amountOf(weighted.Mul(decimal.NewFromInt(20000)).DivRound(o.Mul(depth), 8).Truncate(2))
	}
	return a
}
