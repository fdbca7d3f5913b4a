package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"marketd/store"
)

func oracleSet(args []string) error {
	var base, quote, price string
	c, extra, err := parseConfig("oracle set", args, func(fs *flag.FlagSet) {
		fs.StringVar(&base, "base", "", "the base instrument, CC or USDCx (required)")
		fs.StringVar(&quote, "quote", "", "the quote instrument, CC or USDCx (required)")
		fs.StringVar(&price, "price", "", "the price of one base in quote, a decimal (required)")
	})
	if err != nil {
		return err
	}
	if len(extra) > 0 {
		return fmt.Errorf("oracle set takes no arguments, got %q", extra)
	}
	b, q, err := pair(base, quote)
	if err != nil {
		return err
	}
	if price == "" {
		return errors.New("--price is required")
	}
	ctx := context.Background()
	s, err := operatorStore(ctx, c)
	if err != nil {
		return err
	}
	defer s.Close()
	p, err := s.SetOraclePrice(ctx, b, q, price)
	if err != nil {
		return storeError(err)
	}
	return printResult(map[string]any{"base": p.Base, "quote": p.Quote, "price": p.Price, "priceAt": p.At.Unix()})
}

func poolCreate(args []string) error {
	var base, quote string
	feeBps := -1
	c, extra, err := parseConfig("pool create", args, func(fs *flag.FlagSet) {
		fs.StringVar(&base, "base", "", "the base instrument, CC or USDCx (required)")
		fs.StringVar(&quote, "quote", "", "the quote instrument, CC or USDCx (required)")
		fs.IntVar(&feeBps, "fee-bps", -1, "the fee every fill retains for the LP, basis points (required)")
	})
	if err != nil {
		return err
	}
	if len(extra) > 0 {
		return fmt.Errorf("pool create takes no arguments, got %q", extra)
	}
	b, q, err := pair(base, quote)
	if err != nil {
		return err
	}
	if feeBps < 0 {
		return errors.New("--fee-bps is required")
	}
	ctx := context.Background()
	s, err := operatorStore(ctx, c)
	if err != nil {
		return err
	}
	defer s.Close()
	p, err := s.CreatePool(ctx, b, q, feeBps)
	if err != nil {
		return storeError(err)
	}
	return printResult(map[string]string{"poolId": p.PoolID})
}

// pair parses --base and --quote.
func pair(base, quote string) (store.Instrument, store.Instrument, error) {
	if base == "" || quote == "" {
		return "", "", errors.New("--base and --quote are required")
	}
	b, err := store.ParseInstrument(base)
	if err != nil {
		return "", "", storeError(err)
	}
	q, err := store.ParseInstrument(quote)
	if err != nil {
		return "", "", storeError(err)
	}
	return b, q, nil
}

// swapLoop releases expired LP quotes and intents every second, and fills waiting intents
// that liquidity published on another instance (or a failed retry) left behind.
func swapLoop(ctx context.Context, s *store.Store, log *slog.Logger) {
	every(ctx, time.Second, func() {
		if n, err := s.ExpireSwaps(ctx, 100); err != nil && ctx.Err() == nil {
			log.Warn("expiring swaps failed", "error", err.Error())
		} else if n > 0 {
			log.Debug("swaps expired", "count", n)
		}
		pools, err := s.Pools(ctx)
		if err != nil {
			return
		}
		for _, p := range pools {
			if _, err := s.FillWaiting(ctx, p.PoolID); err != nil && ctx.Err() == nil {
				log.Warn("filling waiting intents failed", "pool", p.PoolID, "error", err.Error())
			}
		}
	})
}
