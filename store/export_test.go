package store

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// IndexedNFTs reads a page of a collection's NFTs from the NFT index, past the page cache,
// once the index is built.
func (s *Store) IndexedNFTs(ctx context.Context, collectionID string, f NFTFilter, sort NFTSort, r PageRequest) (Page[NFTView], error) {
	if err := s.AwaitNFTIndex(ctx); err != nil {
		return Page[NFTView]{}, err
	}
	c, err := s.collectionIdentityOf(ctx, collectionID)
	if err != nil {
		return Page[NFTView]{}, err
	}
	return s.readNFTs(ctx, c, f, sort, r, s.now())
}

// ReferenceNFTs reads the same page by SQL: the reference the index answers as.
func (s *Store) ReferenceNFTs(ctx context.Context, collectionID string, f NFTFilter, sort NFTSort, r PageRequest) (Page[NFTView], error) {
	c, err := s.collectionIdentityOf(ctx, collectionID)
	if err != nil {
		return Page[NFTView]{}, err
	}
	nq, q, err := s.startNFTPage(ctx, c, f, sort, r)
	if err != nil {
		return Page[NFTView]{}, err
	}
	return s.queryNFTs(ctx, c.ID, nq, q, s.now())
}

// SortNFTRunsUnder sets the size up to which the NFT index sorts a price run's candidates
// instead of walking the price order (-1: always walk, 0: by their costs, as it runs), so
// tests take both ways.
func (s *Store) SortNFTRunsUnder(n int) { s.nftIndex.sortUnder.Store(int64(n)) }

// AggregatesFromContracts computes a pool's aggregates from its open quotes and live fees, as
// they were computed before running figures: the reference the figures equal.
func (s *Store) AggregatesFromContracts(ctx context.Context, poolID string) (*PoolAggregates, error) {
	p, err := s.PoolByID(ctx, poolID)
	if err != nil {
		return nil, err
	}
	op, err := s.Oracle().Price(ctx, p.Base, p.Quote)
	if err != nil {
		return nil, err
	}
	quotes, err := openQuotes(ctx, s.db, poolID)
	if err != nil {
		return nil, err
	}
	var fees []LPFee
	if err := s.db.NewSelect().Model(&fees).Where("pool_id = ?", poolID).Where("consumed_update IS NULL").Scan(ctx); err != nil {
		return nil, err
	}
	a := &PoolAggregates{Pool: p, AccruedFees: map[Instrument]Amount{p.Base: Zero, p.Quote: Zero}}
	tvl, depth, weighted := decimal.Zero, decimal.Zero, decimal.Zero
	lps := map[string]bool{}
	for _, q := range quotes {
		lps[q.LP] = true
		if q.Instrument == p.Base {
			tvl = tvl.Add(q.Amount.Decimal().Mul(op.Price.Decimal()))
		} else {
			tvl = tvl.Add(q.Amount.Decimal())
		}
		depth = depth.Add(q.Remaining.Decimal())
		weighted = weighted.Add(q.Remaining.Decimal().Mul(q.Price.Decimal().Sub(op.Price.Decimal()).Abs()))
	}
	for _, f := range fees {
		a.AccruedFees[f.Instrument] = a.AccruedFees[f.Instrument].Add(f.Amount)
	}
	a.TVL = amountOf(tvl.Truncate(p.Quote.Decimals()))
	a.LPCount = len(lps)
	a.DepthWeightedSpreadBps = Zero
	if depth.IsPositive() {
		a.DepthWeightedSpreadBps = amountOf(weighted.Mul(decimal.NewFromInt(20000)).DivRound(op.Price.Decimal().Mul(depth), 8).Truncate(2))
	}
	return a, nil
}

// SlowWrite holds a write transaction for d: on PostgreSQL with a pg_sleep the server runs,
// on SQLite by keeping the single writer's transaction open.
func (s *Store) SlowWrite(ctx context.Context, d time.Duration) error {
	return s.inTx(ctx, func(tx *Tx) error {
		if s.dialect == Postgres {
			_, err := tx.ExecContext(ctx, "SELECT pg_sleep(?)", d.Seconds())
			return err
		}
		time.Sleep(d)
		return nil
	})
}

// SkipTransparencyLog makes the store's commits skip the transparency log, for a benchmark of
// what the log costs the write path: on PostgreSQL its COMMITs number no entries (the trigger
// that assigns offsets runs with marketd.transparency_log off).
func (s *Store) SkipTransparencyLog(tb testing.TB) {
	s.unlogged = true
	if s.dialect == Postgres {
		if _, err := s.db.ExecContext(context.Background(), "ALTER FUNCTION assign_ledger_offset() SET marketd.transparency_log = 'off'"); err != nil {
			tb.Fatal(err)
		}
	}
}

// BookBestOffers sets the NFTs' best offers from the offer book, once the NFT index is built.
func (s *Store) BookBestOffers(ctx context.Context, collectionID string, nfts []NFTView) error {
	if err := s.AwaitNFTIndex(ctx); err != nil {
		return err
	}
	s.offerBook.annotate(collectionID, nfts, s.now())
	return nil
}

// ReferenceBestOffers sets them by SQL: the reference the book answers as.
func (s *Store) ReferenceBestOffers(ctx context.Context, collectionID string, nfts []NFTView) error {
	_, err := s.bestOffersBySQL(ctx, collectionID, nfts, s.now())
	return err
}

// IndexedTraitStats and ReferenceTraitStats read a collection's trait figures from the NFT
// index (once built) and by SQL.
func (s *Store) IndexedTraitStats(ctx context.Context, collectionID string) ([]TraitStats, error) {
	if err := s.AwaitNFTIndex(ctx); err != nil {
		return nil, err
	}
	return s.traitStats(ctx, collectionID, s.now())
}

func (s *Store) ReferenceTraitStats(ctx context.Context, collectionID string) ([]TraitStats, error) {
	return s.traitStatsBySQL(ctx, collectionID, s.now())
}

// ScaleDemoPrices multiplies the demo collections' floors, and so their mint and listing
// prices, by f until the test ends.
func ScaleDemoPrices(t interface{ Cleanup(func()) }, f float64) {
	saved := slices.Clone(demoCollections)
	for i := range demoCollections {
		demoCollections[i].floor *= f
	}
	t.Cleanup(func() { demoCollections = saved })
}
