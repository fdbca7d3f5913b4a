package store

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"marketd/store/ledger"
)

const (
	templatePool    = "swap_pools"
	KindPoolCreate  = "swap.pool-create" // committed by the operator, not prepared
	MaxPoolFeeBps   = 1000
	maxSwapPoolsAll = 100
)

// Pool is a pair of instruments LPs quote and takers swap in, with the fee every fill
// retains for the LP, in basis points of what the LP quote gives. The operator owns it.
type Pool struct {
	bun.BaseModel `bun:"table:swap_pools"`
	Lifecycle

	PoolID   string     `bun:"pool_id"`
	Operator string     `bun:"operator"`
	Base     Instrument `bun:"base"`
	Quote    Instrument `bun:"quote"`
	FeeBps   int        `bun:"fee_bps"`
}

func (*Pool) Template() string     { return templatePool }
func (p *Pool) Controller() string { return p.Operator }

// A pool is the operator's contract.
func init() { ledger.RegisterTemplate(templatePool, ledger.TemplateSpec{Owner: "operator"}) }

// PoolIDFor is the id of the pool of base/quote with feeBps: "CC-USDCx-30".
func PoolIDFor(base, quote Instrument, feeBps int) string {
	return fmt.Sprintf("%s-%s-%d", base, quote, feeBps)
}

// CreatePool creates the pool of base/quote with feeBps, as the operator. The oracle must
// already price the pair: pools are valued at it.
func (s *Store) CreatePool(ctx context.Context, base, quote Instrument, feeBps int) (*Pool, error) {
	if base == quote {
		return nil, Errorf(CodeInvalidRequest, "a pool needs two different instruments")
	}
	if feeBps < 0 || feeBps > MaxPoolFeeBps {
		return nil, Errorf(CodeInvalidRequest, "feeBps must be 0 to %d", MaxPoolFeeBps)
	}
	price, err := s.Oracle().Price(ctx, base, quote)
	if err != nil {
		if ErrorCode(err) == CodeNotFound {
			return nil, Errorf(CodeConflict, "the oracle has no price for %s/%s yet; set one first (marketd oracle set)", base, quote)
		}
		return nil, err
	}
	op, err := s.OperatorParty(ctx)
	if err != nil {
		return nil, err
	}
	p := &Pool{PoolID: PoolIDFor(base, quote, feeBps), Operator: op, Base: base, Quote: quote, FeeBps: feeBps}
	err = s.commit(ctx, KindPoolCreate, op, func(tx *Tx, u *Update) error {
		if err := tx.s.ledger.Commit(ctx, tx.Tx, u, &Transaction{Create: []Contract{p}}); err != nil {
			return err
		}
		return tx.Later(ctx, tx.NewInsert().Model(newPoolFigures(p, price.Price)))
	})
	if isUniqueViolation(err) {
		return nil, Errorf(CodeConflict, "pool %s exists already", p.PoolID)
	}
	return p, err
}

// PoolByID returns an active pool, or not_found.
func (s *Store) PoolByID(ctx context.Context, poolID string) (*Pool, error) {
	return poolByID(ctx, s.db, poolID)
}

func poolByID(ctx context.Context, db bun.IDB, poolID string) (*Pool, error) {
	var ps []Pool
	if err := db.NewSelect().Model(&ps).Where("pool_id = ?", poolID).Where("consumed_update IS NULL").Scan(ctx); err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		return nil, Errorf(CodeNotFound, "no pool %q", truncate(poolID, 80))
	}
	return &ps[0], nil
}

// Pools lists the active pools, by id.
func (s *Store) Pools(ctx context.Context) ([]Pool, error) {
	var ps []Pool
	err := s.db.NewSelect().Model(&ps).Where("consumed_update IS NULL").Order("pool_id").Limit(maxSwapPoolsAll).Scan(ctx)
	return ps, err
}

// lockPool locks the pool for one swap transaction: every transaction that consumes the
// pool's LP quotes or intents takes this lock first, so no two take the same liquidity.
func (tx *Tx) lockPool(ctx context.Context, poolID string) (*Pool, error) {
	w := tx.swapPart()
	if p, ok := w.pools[poolID]; ok {
		return p, nil
	}
	var ps []Pool
	if err := tx.ForUpdate(tx.NewSelect().Model(&ps).Where("pool_id = ?", poolID).Where("consumed_update IS NULL")).Scan(ctx); err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		return nil, Errorf(CodeNotFound, "no pool %q", truncate(poolID, 80))
	}
	if w.pools == nil {
		w.pools = map[string]*Pool{}
	}
	w.pools[poolID] = &ps[0]
	return &ps[0], nil
}
