package store

import (
	"context"

	"github.com/shopspring/decimal"
)

// demoFundsFloor is the least a demo party is tapped of each instrument, and demoFundsSpare
// what it gets on top of what its plan spends, for the swap demo's quotes and swaps and for
// a newcomer trying the market as that party.
var (
	demoFundsFloor = decimal.NewFromInt(1_000_000)
	demoFundsSpare = decimal.NewFromInt(100_000)
)

// demoNeeds is what each party spends of each instrument on its planned mints (the public
// phase's price each) and buys (the listing's price each), and what its planned offers lock
// (price × quantity each).
func demoNeeds(plans []*collectionPlan, parties []*demoParty) map[*demoParty]map[Instrument]decimal.Decimal {
	needs := map[*demoParty]map[Instrument]decimal.Decimal{}
	add := func(p *demoParty, inst Instrument, v decimal.Decimal) {
		if needs[p] == nil {
			needs[p] = map[Instrument]decimal.Decimal{}
		}
		needs[p][inst] = needs[p][inst].Add(v)
	}
	for _, pl := range plans {
		price := MustAmount(demoMintPrice(pl.dc)).Decimal()
		for k, owner := range pl.runs {
			add(owner, pl.dc.currency, price.Mul(decimal.NewFromInt(int64(min(demoMintRun, pl.count-k*demoMintRun)))))
		}
		for b, buys := range pl.buys {
			for _, l := range buys {
				add(parties[b], pl.dc.currency, MustAmount(pl.listings[l].price).Decimal())
			}
		}
		for i := range pl.offers {
			add(pl.offers[i].maker, pl.dc.currency, pl.offers[i].lock())
		}
	}
	return needs
}

// seedFunds taps each party what its plan spends and locks of each instrument and a spare, at
// least demoFundsFloor, in taps of at most maxTap: the traders' funds grow with the market, so
// a seed of any size the demo allows can pay for every mint, buy and offer it plans. It runs before
// the first collection is written.
func (s *Store) seedFunds(ctx context.Context, plans []*collectionPlan, parties []*demoParty) error {
	needs := demoNeeds(plans, parties)
	return inParallel(len(parties), func(i int) error {
		p := parties[i]
		for _, inst := range []Instrument{CC, USDCx} {
			want := decimal.Max(needs[p][inst].Add(demoFundsSpare), demoFundsFloor)
			for left := want; left.IsPositive(); left = left.Sub(decimal.Min(left, maxTap.Decimal())) {
				amount := MustAmount(decimal.Min(left, maxTap.Decimal()).StringFixed(int32(inst.Decimals())))
				if _, err := p.run(ctx, s, KindTap, func() (*Prepared, error) { return s.PrepareTap(ctx, p.id, inst, amount) }); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// demoBulkPragmas are what the SQLite writer's one connection runs for the seed, and how it
// undoes each: a page cache of 64 MiB instead of 2 MiB, so more of the indexes the offers and
// NFTs land in at random stay in memory rather than be read back page by page, and
// temporary files in memory, so a batch's savepoint journal (one page for every index page
// its executes change) is no file written page by page.
var demoBulkPragmas = []struct{ name, value string }{
	{"cache_size", "-65536"},
	{"temp_store", "MEMORY"},
}

// bulkLoad sets demoBulkPragmas on a SQLite store's writer for the seed and returns what
// restores the values it found; on PostgreSQL it does nothing.
func (s *Store) bulkLoad(ctx context.Context) (restore func(), err error) {
	if s.dialect != SQLite {
		return func() {}, nil
	}
	var undo []string
	restore = func() {
		for _, stmt := range undo {
			_, _ = s.wdb.ExecContext(context.WithoutCancel(ctx), stmt)
		}
	}
	for _, p := range demoBulkPragmas {
		var was string
		if err := s.wdb.QueryRowContext(ctx, "PRAGMA "+p.name).Scan(&was); err != nil {
			restore()
			return nil, err
		}
		if _, err := s.wdb.ExecContext(ctx, "PRAGMA "+p.name+" = "+p.value); err != nil {
			restore()
			return nil, err
		}
		undo = append(undo, "PRAGMA "+p.name+" = "+was)
	}
	return restore, nil
}
