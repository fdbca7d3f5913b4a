package store

import (
	"context"
	"errors"
	"time"
)

// retryPool fills the pool's waiting intents that its book can fill now. It runs after a
// commit that added liquidity; a failure is logged, and the serve loop retries.
func (s *Store) retryPool(poolID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.FillWaiting(ctx, poolID); err != nil {
		s.log.Warn("filling waiting intents failed", "pool", poolID, "error", err.Error())
	}
}

// errNothingFilled rolls back a matching pass that filled nothing.
var errNothingFilled = errors.New("nothing filled")

// FillWaiting fills, oldest first, the pending intents of the pool that its book can fill
// now, each as its own update signed by the operator, in one database transaction under the
// pool's lock. It returns how many filled.
func (s *Store) FillWaiting(ctx context.Context, poolID string) (int, error) {
	var n int
	var pending []SwapIntent
	if err := s.db.NewSelect().Model(&pending).Where("pool_id = ?", poolID).Where("consumed_update IS NULL").
		Where("deadline > ?", At(s.now())).Limit(1).Scan(ctx); err != nil || len(pending) == 0 {
		return 0, err
	}
	op, err := s.OperatorParty(ctx)
	if err != nil {
		return 0, err
	}
	err = s.inTx(ctx, func(tx *Tx) error {
		n = 0
		pool, err := tx.lockPool(ctx, poolID)
		if err != nil {
			return err
		}
		var intents []SwapIntent
		if err := tx.NewSelect().Model(&intents).Where("pool_id = ?", poolID).Where("consumed_update IS NULL").
			Where("deadline > ?", At(tx.Now())).OrderExpr("created_at, cid").Limit(maxBookWalk).Scan(ctx); err != nil {
			return err
		}
		for i := range intents {
			in := &intents[i]
			plan, err := tx.planFill(ctx, pool, in.Taker, in.Instrument, in.Amount, in.MinReceive)
			if err != nil {
				return err
			}
			if plan == nil {
				continue
			}
			err = tx.record(ctx, KindSwapFill, op, func(u *Update) error {
				t := &Transaction{Consume: []ContractRef{{Template: templateIntent, CID: in.CID}}}
				if err := tx.addFills(ctx, t, plan, in.Taker, in.Instrument); err != nil {
					return err
				}
				if err := tx.s.ledger.Commit(ctx, tx.Tx, u, t); err != nil {
					return err
				}
				tx.settled(pool, in.Instrument, plan)
				v := &IntentView{IntentCID: in.CID, PoolID: in.PoolID}
				return tx.recordFill(ctx, u, v, plan, false)
			})
			if err != nil {
				return err
			}
			n++
		}
		if n == 0 {
			return errNothingFilled
		}
		return nil
	})
	if errors.Is(err, errNothingFilled) {
		return 0, nil
	}
	return n, err
}

// ExpireSwaps releases up to limit LP quotes and pending intents whose expiry has come,
// each as its own update signed by the operator, and returns how many.
func (s *Store) ExpireSwaps(ctx context.Context, limit int) (int, error) {
	now := At(s.now())
	var quotes []LPQuote
	if err := s.db.NewSelect().Model(&quotes).Where("consumed_update IS NULL").Where("expires_at <= ?", now).
		OrderExpr("expires_at, cid").Limit(int64(limit)).Scan(ctx); err != nil {
		return 0, err
	}
	var intents []SwapIntent
	if err := s.db.NewSelect().Model(&intents).Where("consumed_update IS NULL").Where("deadline <= ?", now).
		OrderExpr("deadline, cid").Limit(int64(limit)).Scan(ctx); err != nil {
		return 0, err
	}
	// The quotes first, then the intents: the i-th of all of them, each under its pool's lock.
	return s.releaseExpired(ctx, KindSwapExpired, len(quotes)+len(intents), func(tx *Tx, u *Update, i int) error {
		if i < len(quotes) {
			q := &quotes[i]
			if _, err := tx.lockPool(ctx, q.PoolID); err != nil {
				return err
			}
			return tx.releaseQuote(ctx, u, q)
		}
		in := &intents[i-len(quotes)]
		if _, err := tx.lockPool(ctx, in.PoolID); err != nil {
			return err
		}
		return tx.closeIntent(ctx, u, in, IntentExpired)
	})
}
