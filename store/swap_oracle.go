package store

import (
	"context"
	"time"

	"github.com/uptrace/bun"
)

// Oracle tells the reference price of a pair, in quote per base, and when it was set, so a
// reader can see how stale it is.
type Oracle interface {
	Price(ctx context.Context, base, quote Instrument) (*OraclePrice, error)
}

// OraclePrice is one price of a pair and the instant it was set.
type OraclePrice struct {
	Base  Instrument `json:"base"`
	Quote Instrument `json:"quote"`
	Price Amount     `json:"price"`
	At    time.Time  `json:"-"`
}

// oracleRow is the operator's latest price of a pair.
type oracleRow struct {
	bun.BaseModel `bun:"table:oracle_prices"`

	Base  Instrument `bun:"base,pk"`
	Quote Instrument `bun:"quote,pk"`
	Price Amount     `bun:"price"`
	SetAt Timestamp  `bun:"set_at"`
}

// storeOracle is the embedded oracle: prices the operator sets with `marketd oracle set`,
// kept in the store.
type storeOracle struct{ s *Store }

func (o storeOracle) Price(ctx context.Context, base, quote Instrument) (*OraclePrice, error) {
	var rows []oracleRow
	if err := o.s.db.NewSelect().Model(&rows).Where("base = ?", base).Where("quote = ?", quote).Scan(ctx); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, noOraclePrice(base, quote)
	}
	return &OraclePrice{Base: base, Quote: quote, Price: rows[0].Price, At: rows[0].SetAt.Time}, nil
}

// noOraclePrice is the not_found of a pair the embedded oracle has no price for.
func noOraclePrice(base, quote Instrument) error {
	return Errorf(CodeNotFound, "the oracle has no price for %s/%s", base, quote)
}

// Oracle is the price oracle the store values swaps with.
func (s *Store) Oracle() Oracle { return storeOracle{s} }

// SetOraclePrice sets the embedded oracle's price of base in quote, at the store's clock.
func (s *Store) SetOraclePrice(ctx context.Context, base, quote Instrument, price string) (*OraclePrice, error) {
	if base == quote {
		return nil, Errorf(CodeInvalidRequest, "base and quote must differ")
	}
	p, err := ParseAmount(price, quote)
	if err != nil {
		return nil, err
	}
	row := &oracleRow{Base: base, Quote: quote, Price: p, SetAt: At(s.now())}
	// The pools of the pair split their depth at the oracle's price: it moves with it.
	err = s.inTx(ctx, func(tx *Tx) error {
		if _, err := tx.NewInsert().Model(row).On("CONFLICT (base, quote) DO UPDATE").
			Set("price = EXCLUDED.price").Set("set_at = EXCLUDED.set_at").Exec(ctx); err != nil {
			return err
		}
		return tx.repivot(ctx, base, quote, p)
	})
	if err != nil {
		return nil, err
	}
	return &OraclePrice{Base: base, Quote: quote, Price: p, At: row.SetAt.Time}, nil
}
