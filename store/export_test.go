package store

import (
	"context"
	"errors"
	"fmt"
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
	s.commitLog = noLog{}
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

// PlainServiceKeys opens every row of service_keys under the store's KEK: each secret in plain
// bytes, by kid, for tests that look for them where they must not be.
func (s *Store) PlainServiceKeys(ctx context.Context) (map[string][]byte, error) {
	var rows []serviceKeyRow
	if err := s.wdb.NewSelect().Model(&rows).Scan(ctx); err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for i := range rows {
		plain, err := s.secretOf(&rows[i])
		if err != nil {
			return nil, err
		}
		out[rows[i].KID] = plain
	}
	return out, nil
}

// ExecRaw runs one statement on the store's writer, past the domain.
func (s *Store) ExecRaw(ctx context.Context, q string, args ...any) error {
	_, err := s.wdb.ExecContext(ctx, q, args...)
	return err
}

// TableValues reads every value of every table of the store, each as the bytes the database
// answers, by table.
func (s *Store) TableValues(ctx context.Context) (map[string][][]byte, error) {
	q := "SELECT name FROM sqlite_master WHERE type = 'table'"
	if s.dialect == Postgres {
		q = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
	}
	var tables []string
	if err := s.wdb.NewRaw(q).Scan(ctx, &tables); err != nil {
		return nil, err
	}
	out := map[string][][]byte{}
	for _, table := range tables {
		rows, err := s.wdb.QueryContext(ctx, `SELECT * FROM "`+table+`"`)
		if err != nil {
			return nil, err
		}
		cols, err := rows.Columns()
		if err != nil {
			rows.Close()
			return nil, err
		}
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return nil, err
			}
			for _, v := range vals {
				switch v := v.(type) {
				case []byte:
					out[table] = append(out[table], slices.Clone(v))
				case string:
					out[table] = append(out[table], []byte(v))
				case nil:
				default:
					out[table] = append(out[table], fmt.Appendf(nil, "%v", v))
				}
			}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// UnsealAsBefore turns a migrated store back into one the code before sealing wrote: every
// secret in plain bytes, no kek_id column, the sealing migration not applied.
func (s *Store) UnsealAsBefore(ctx context.Context) error {
	if err := s.unsealKeys(ctx); err != nil {
		return err
	}
	if err := s.ExecRaw(ctx, "ALTER TABLE service_keys DROP COLUMN kek_id"); err != nil {
		return err
	}
	return s.ExecRaw(ctx, "DELETE FROM bun_migrations WHERE name = '20261129000140'")
}

// noLog is the updateLog of a store whose commits skip the transparency log: each execute's
// receipt is completed without a log index, nothing else is written.
type noLog struct{}

func (noLog) beginWrite(context.Context, *Store)      {}
func (noLog) inserting(*Tx, []*Update) (clear func()) { return func() {} }
func (noLog) append(ctx context.Context, tx *Tx, us []*Update) error {
	for _, u := range us {
		if err := tx.receiptLogged(ctx, u, nil); err != nil {
			return err
		}
	}
	return nil
}

// RunMigration runs the migration file whose name ends with suffix (its statements for s's
// dialect) in one write transaction of s, as a test of that migration's up or down needs.
func (s *Store) RunMigration(t *testing.T, suffix string) {
	t.Helper()
	runStatements(t, s, renderMigration(t, s, suffix))
}
