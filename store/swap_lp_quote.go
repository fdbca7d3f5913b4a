package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"marketd/store/wallet"
)

// LPQuoteTerms is what an LP publishes.
type LPQuoteTerms struct {
	PoolID    string
	Side      string
	Price     string
	Size      string
	ExpiresAt int64
}

type lpQuoteEffects = wallet.LPQuoteEffects

// PrepareLPQuote prepares publishing an LP quote, which locks what backs it: an ask `size`
// base, a bid `price*size` quote (rounded up to the quote's precision).
func (s *Store) PrepareLPQuote(ctx context.Context, lp string, q LPQuoteTerms) (*Prepared, error) {
	if q.PoolID == "" {
		return nil, Errorf(CodeInvalidRequest, "poolId is required")
	}
	if q.Side != SideAsk && q.Side != SideBid {
		return nil, Errorf(CodeInvalidRequest, "side must be ask or bid")
	}
	pool, err := s.PoolByID(ctx, q.PoolID)
	if err != nil {
		return nil, err
	}
	price, err := ParseAmount(q.Price, pool.Quote)
	if err != nil {
		return nil, fieldError("price", err)
	}
	size, err := ParseAmount(q.Size, pool.Base)
	if err != nil {
		return nil, fieldError("size", err)
	}
	if err := s.deadline("expiresAt", q.ExpiresAt, maxSwapLifetime); err != nil {
		return nil, err
	}
	inst, lock := pool.Base, size
	if q.Side == SideBid {
		inst, lock = pool.Quote, amountOf(price.Decimal().Mul(size.Decimal()).RoundCeil(pool.Quote.Decimals()))
	}
	if err := checkAmountBounds(lock); err != nil {
		return nil, err
	}
	funds, claims, err := s.prepareLock(ctx, lp, inst, lock)
	if err != nil {
		return nil, err
	}
	e := lpQuoteEffects{LP: lp, PoolID: pool.PoolID, Side: q.Side, Price: price, Size: size, ExpiresAt: q.ExpiresAt, Lock: *funds}
	summary := map[string]any{
		"action": fmt.Sprintf("quote to %s %s %s at %s %s each on %s", map[string]string{SideAsk: "sell", SideBid: "buy"}[q.Side], size, pool.Base, price, pool.Quote, pool.PoolID),
		"lp":     lp, "poolId": pool.PoolID, "side": q.Side, "price": price, "size": size, "expiresAt": q.ExpiresAt,
		"locks": map[string]any{"instrument": inst, "amount": lock}, "change": funds.Change,
	}
	return s.prepareAs(ctx, KindLPQuote, lp, e, summary, claims)
}

// fieldError names the field in an amount's error.
func fieldError(field string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return Errorf(e.Code, "%s: %s", field, e.Message)
	}
	return err
}

// QuoteResult is what an LP quote execute adds to the receipt.
type QuoteResult struct {
	CID string `json:"cid"`
}

func applyLPQuote(ctx context.Context, tx *Tx, u *Update, e *lpQuoteEffects) (any, error) {
	expires := At(time.Unix(e.ExpiresAt, 0))
	if !tx.Now().Before(expires.Time) {
		return nil, Errorf(CodeStale, "the LP quote expired before it was executed; prepare it again")
	}
	if _, err := poolByID(ctx, tx, e.PoolID); err != nil {
		return nil, err
	}
	q := &LPQuote{
		QuoteID: contractID(u.UpdateID, 0), PoolID: e.PoolID, LP: e.LP, Side: e.Side, Price: e.Price, Size: e.Size,
		Remaining: e.Size, FeesAccrued: Zero, Instrument: e.Lock.Instrument, Amount: e.Lock.Amount,
		PostedAt: At(tx.Now()), ExpiresAt: expires,
	}
	t := &Transaction{Create: []Contract{q}}
	addLock(t, &e.Lock, e.LP)
	if err := tx.s.ledger.Commit(ctx, tx.Tx, u, t); err != nil {
		return nil, err
	}
	if q.CID != q.QuoteID {
		return nil, fmt.Errorf("swap: quote id %s is not its first cid %s", q.QuoteID, q.CID)
	}
	tx.afterCommit(func() { tx.s.retryPool(e.PoolID) })
	return QuoteResult{CID: q.QuoteID}, nil
}

// activeQuote returns the live version of quote quoteID.
func activeQuote(ctx context.Context, db bun.IDB, quoteID string) (*LPQuote, error) {
	var qs []LPQuote
	if err := db.NewSelect().Model(&qs).Where("quote_id = ?", quoteID).Where("consumed_update IS NULL").Scan(ctx); err != nil {
		return nil, err
	}
	if len(qs) == 0 {
		return nil, nil
	}
	return &qs[0], nil
}

type lpCancelEffects = wallet.LPQuoteCancelEffects

// PrepareLPQuoteCancel prepares withdrawing the LP's quote cid; execute releases whatever
// the quote still locks then.
func (s *Store) PrepareLPQuoteCancel(ctx context.Context, lp, cid string) (*Prepared, error) {
	if cid == "" {
		return nil, Errorf(CodeInvalidRequest, "cid is required")
	}
	var first []LPQuote
	if err := s.db.NewSelect().Model(&first).Where("quote_id = ?", cid).Limit(1).Scan(ctx); err != nil {
		return nil, err
	}
	if len(first) == 0 {
		return nil, Errorf(CodeNotFound, "no LP quote %s", truncate(cid, 80))
	}
	if first[0].LP != lp {
		return nil, Errorf(CodePartyMismatch, "LP quote %s belongs to %s, not to %s", cid, first[0].LP, lp)
	}
	q, err := activeQuote(ctx, s.db, cid)
	if err != nil {
		return nil, err
	}
	if q == nil {
		return nil, Errorf(CodeConflict, "LP quote %s is no longer open (filled, cancelled or expired)", cid)
	}
	e := lpCancelEffects{LP: lp, PoolID: q.PoolID, QuoteID: cid}
	summary := map[string]any{
		"action": fmt.Sprintf("cancel LP quote %s and release what it still locks", cid), "lp": lp, "poolId": q.PoolID, "cid": cid,
		"releases": map[string]any{"instrument": q.Instrument, "amount": q.Amount},
	}
	return s.prepareAs(ctx, KindLPQuoteCancel, lp, e, summary, []string{q.CID})
}

func applyLPQuoteCancel(ctx context.Context, tx *Tx, u *Update, e *lpCancelEffects) (any, error) {
	if _, err := tx.lockPool(ctx, e.PoolID); err != nil {
		return nil, err
	}
	q, err := activeQuote(ctx, tx, e.QuoteID)
	if err != nil {
		return nil, err
	}
	if q == nil {
		return nil, Errorf(CodeStale, "LP quote %s was filled, cancelled or expired since this was prepared", e.QuoteID)
	}
	return map[string]any{"released": map[string]any{"instrument": q.Instrument, "amount": q.Amount}}, tx.releaseQuote(ctx, u, q)
}

// releaseQuote archives a quote version and returns what it locks to its LP.
func (tx *Tx) releaseQuote(ctx context.Context, u *Update, q *LPQuote) error {
	return tx.s.ledger.Commit(ctx, tx.Tx, u, &Transaction{
		Consume: []ContractRef{{Template: templateLPQuote, CID: q.CID}},
		Create:  []Contract{&Holding{Owner: q.LP, Instrument: q.Instrument, Amount: q.Amount}},
	})
}

type claimEffects = wallet.ClaimFeesEffects

// PrepareClaimFees prepares paying out the fees the pool's fills retained for the LP, as they
// stand now. Fills that come after it only add to them: execute pays what was prepared and
// leaves the rest accrued.
func (s *Store) PrepareClaimFees(ctx context.Context, lp, poolID string) (*Prepared, error) {
	if poolID == "" {
		return nil, Errorf(CodeInvalidRequest, "poolId is required")
	}
	if _, err := s.PoolByID(ctx, poolID); err != nil {
		return nil, err
	}
	fees, err := liveFees(ctx, s.db, poolID, lp)
	if err != nil {
		return nil, err
	}
	e := claimEffects{LP: lp, PoolID: poolID, Payout: map[Instrument]Amount{}}
	for _, f := range fees {
		e.Payout[f.Instrument] = e.Payout[f.Instrument].Add(f.Amount)
	}
	if len(e.Payout) == 0 {
		return nil, Errorf(CodeConflict, "no fees accrued to %s in pool %s", lp, poolID)
	}
	summary := map[string]any{"action": fmt.Sprintf("claim the fees accrued in %s", poolID), "lp": lp, "poolId": poolID, "payout": e.Payout}
	return s.prepareAs(ctx, KindLPClaimFees, lp, e, summary, nil)
}

// liveFees reads the LP's unclaimed fees in the pool: one contract per instrument, once fills
// have folded them.
func liveFees(ctx context.Context, db bun.IDB, poolID, lp string) ([]LPFee, error) {
	var fees []LPFee
	err := db.NewSelect().Model(&fees).Where("pool_id = ?", poolID).Where("lp = ?", lp).
		Where("consumed_update IS NULL").Order("cid").Scan(ctx)
	return fees, err
}

func applyClaimFees(ctx context.Context, tx *Tx, u *Update, e *claimEffects) (any, error) {
	// Fills fold fees under the pool's lock: with it, the running fees stay as read here.
	if _, err := tx.lockPool(ctx, e.PoolID); err != nil {
		return nil, err
	}
	fees, err := liveFees(ctx, tx, e.PoolID, e.LP)
	if err != nil {
		return nil, err
	}
	live := map[Instrument]Amount{}
	t := &Transaction{}
	for _, f := range fees {
		if e.Payout[f.Instrument].IsPositive() {
			live[f.Instrument] = live[f.Instrument].Add(f.Amount)
			t.Consume = append(t.Consume, ContractRef{Template: templateLPFee, CID: f.CID})
		}
	}
	claimed := map[Instrument]Amount{CC: Zero, USDCx: Zero}
	for _, inst := range Instruments {
		pay := e.Payout[inst]
		if !pay.IsPositive() {
			continue
		}
		if live[inst].Cmp(pay) < 0 {
			return nil, Errorf(CodeStale, "the %s fees accrued to %s in %s were claimed since this was prepared; prepare it again", inst, e.LP, e.PoolID)
		}
		t.Create = append(t.Create, &Holding{Owner: e.LP, Instrument: inst, Amount: pay})
		if rest := live[inst].Sub(pay); rest.IsPositive() {
			t.Create = append(t.Create, &LPFee{LP: e.LP, PoolID: e.PoolID, Instrument: inst, Amount: rest})
		}
		claimed[inst] = pay
	}
	if err := tx.s.ledger.Commit(ctx, tx.Tx, u, t); err != nil {
		return nil, err
	}
	return map[string]any{"claimed": claimed}, nil
}
