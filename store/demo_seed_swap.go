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

// seedSwapDemo adds to the demo market an oracle price of CC in USDCx and a pool, as the
// operator commands do, then LP quotes on both sides from the demo parties and a few filled
// swaps, each prepared and executed signed by its party, so a newcomer can quote and swap at
// once.
func (s *Store) seedSwapDemo(ctx context.Context, rng *mrand.Rand, parties []*demoParty, sum *DemoSummary) error {
	if _, err := s.SetOraclePrice(ctx, CC, USDCx, demoOraclePrice); err != nil {
		return err
	}
	pool, err := s.CreatePool(ctx, CC, USDCx, demoPoolFeeBps)
	if err != nil {
		return err
	}
	sum.Pools = append(sum.Pools, pool.PoolID)
	oracle := MustAmount(demoOraclePrice).Decimal()
	expires := s.now().Add(demoQuoteLife).Unix()
	// Each party quotes each side at 10 to 150 bps from the oracle, 50 to 500 CC.
	quotes := make([][]LPQuoteTerms, len(parties))
	for i := range parties {
		for _, side := range []string{SideAsk, SideBid} {
			bps := decimal.NewFromInt(int64(10 + 20*i + rng.IntN(20)))
			off := oracle.Mul(bps).Div(bpsDivisor)
			price := oracle.Add(off)
			if side == SideBid {
				price = oracle.Sub(off)
			}
			quotes[i] = append(quotes[i], LPQuoteTerms{PoolID: pool.PoolID, Side: side, Price: price.Truncate(USDCx.Decimals()).String(),
				Size: fmt.Sprint(50 + rng.IntN(450)), ExpiresAt: expires})
		}
	}
	err = inParallel(len(parties), func(i int) error {
		lp := parties[i]
		for _, q := range quotes[i] {
			if _, err := lp.run(ctx, s, KindLPQuote, func() (*Prepared, error) { return s.PrepareLPQuote(ctx, lp.id, q) }); err != nil {
				return fmt.Errorf("seed LP quote: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	sum.LPQuotes += 2 * len(parties)
	// A few swaps by the last party, so outcomes and history have entries.
	taker := parties[len(parties)-1]
	for i := range 3 {
		sell, amount := CC, fmt.Sprint(5+i)
		if i%2 == 1 {
			sell, amount = USDCx, fmt.Sprint(10*(i+1))
		}
		st := SwapTerms{PoolID: pool.PoolID, Sell: string(sell), Amount: amount, MinReceive: "0", Deadline: s.now().Add(time.Hour).Unix()}
		if _, err := taker.run(ctx, s, KindSwapIntent, func() (*Prepared, error) { return s.PrepareSwap(ctx, taker.id, st) }); err != nil {
			return fmt.Errorf("seed swap: %w", err)
		}
		sum.Swaps++
	}
	return nil
}
