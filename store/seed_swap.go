package store

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"github.com/shopspring/decimal"
)

// Demo swap market: the oracle price, the pool and how far from the oracle its LP quotes sit.
const (
	demoOraclePrice = "2.5"
	demoPoolFeeBps  = 30
	demoQuoteLife   = 7 * 24 * time.Hour
)

// SeedSwapDemo adds to the demo market an oracle price of CC in USDCx, a pool, LP quotes on
// both sides from the demo parties and a few filled swaps, so a newcomer can quote and swap
// at once.
func (s *Store) SeedSwapDemo(ctx context.Context, rng *mrand.Rand, parties []string, sum *DemoSummary) error {
	if _, err := s.SetOraclePrice(ctx, CC, USDCx, demoOraclePrice); err != nil {
		return err
	}
	pool, err := s.CreatePool(ctx, CC, USDCx, demoPoolFeeBps)
	if err != nil {
		return err
	}
	sum.Pools = append(sum.Pools, pool.PoolID)
	oracle := MustAmount(demoOraclePrice).d
	expires := s.now().Add(demoQuoteLife).Unix()
	// Each party quotes each side at 10 to 150 bps from the oracle, 50 to 500 CC.
	for i, lp := range parties {
		for _, side := range []string{SideAsk, SideBid} {
			bps := decimal.NewFromInt(int64(10 + 20*i + rng.IntN(20)))
			off := oracle.Mul(bps).Div(bpsDivisor)
			price := oracle.Add(off)
			if side == SideBid {
				price = oracle.Sub(off)
			}
			e := lpQuoteEffects{LP: lp, PoolID: pool.PoolID, Side: side, Price: Amount{price.Truncate(USDCx.Decimals())},
				Size: Amount{decimal.NewFromInt(int64(50 + rng.IntN(450)))}, ExpiresAt: expires}
			inst, lock := CC, e.Size
			if side == SideBid {
				inst, lock = USDCx, Amount{e.Price.d.Mul(e.Size.d).RoundCeil(USDCx.Decimals())}
			}
			funds, _, err := s.prepareLock(ctx, lp, inst, lock)
			if err != nil {
				return fmt.Errorf("seed LP quote: %w", err)
			}
			e.Lock = *funds
			if err := s.commit(ctx, KindLPQuote, lp, func(tx *Tx, u *Update) error {
				_, err := applyLPQuote(ctx, tx, u, &e)
				return err
			}); err != nil {
				return fmt.Errorf("seed LP quote: %w", err)
			}
			sum.LPQuotes++
		}
	}
	// A few swaps by the last party, so outcomes and history have entries.
	taker := parties[len(parties)-1]
	for i := range 3 {
		sell, amount := CC, MustAmount(fmt.Sprint(5+i))
		if i%2 == 1 {
			sell, amount = USDCx, MustAmount(fmt.Sprint(10*(i+1)))
		}
		funds, _, err := s.prepareLock(ctx, taker, sell, amount)
		if err != nil {
			return fmt.Errorf("seed swap: %w", err)
		}
		recv, _ := pool.other(sell)
		e := intentEffects{Taker: taker, PoolID: pool.PoolID, Sell: sell, Receive: recv, Amount: amount, MinReceive: Zero,
			Deadline: s.now().Add(time.Hour).Unix(), Lock: *funds}
		if err := s.commit(ctx, KindSwapIntent, taker, func(tx *Tx, u *Update) error {
			_, err := applySwapIntent(ctx, tx, u, &e)
			return err
		}); err != nil {
			return fmt.Errorf("seed swap: %w", err)
		}
		sum.Swaps++
	}
	return nil
}
