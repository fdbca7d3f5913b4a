package store

import (
	"context"
	"fmt"
	"time"

	"github.com/shopspring/decimal"
	"github.com/uptrace/bun"
)

// A collection's figures over time, at the cost of a page however long it has traded: every
// sale (a buy, a sweep, an accept) and every write that moves the floor writes the UTC day's
// row of collection_days in its own transaction, under the collection's lock, and the
// collection keeps its total sales beside its volume. A read is the collection's row, the
// last 30 days' rows, and per trait value the NFT index's counts and floors (one walk of the
// listed NFTs, cheapest first), or by SQL until the index is built.

// statsDays is how many UTC days the daily figures cover, today included.
const statsDays = 30

// collectionDay is one UTC day of a collection's figures.
type collectionDay struct {
	bun.BaseModel `bun:"table:collection_days"`

	CollectionID string  `bun:"collection_id,pk"`
	Day          int64   `bun:"day,pk"` // days since 1970-01-01, UTC
	Volume       Amount  `bun:"volume"`
	Sales        int     `bun:"sales"`
	FloorPrice   *Amount `bun:"floor_price"` // the floor the day's last write left
}

func dayOf(t time.Time) int64 { return t.Unix() / 86400 }

// sold records a sale at price: the volume and the day's figures.
func (ct *collectionTx) sold(price Amount) {
	ct.c.Volume = ct.c.Volume.Add(price)
	ct.c.Sales++
	ct.soldVolume = ct.soldVolume.Add(price)
	ct.soldCount++
}

// writeDay adds what the transaction sold to today's figures, and the floor it leaves, when
// it sold or moved the floor. close calls it once the floor is known.
func (ct *collectionTx) writeDay(ctx context.Context) error {
	c, tx := ct.c, ct.tx
	if ct.soldCount == 0 && sameAmount(ct.floorBefore, c.FloorPrice) {
		return nil
	}
	day := collectionDay{CollectionID: c.ID, Day: dayOf(tx.Now()), Volume: Zero}
	if err := tx.Flush(ctx); err != nil { // a batch's earlier writes of the day first
		return err
	}
	var had []collectionDay
	if err := tx.NewSelect().Model(&had).Where("collection_id = ?", c.ID).Where("day = ?", day.Day).Scan(ctx); err != nil {
		return err
	}
	if len(had) > 0 {
		day.Volume, day.Sales = had[0].Volume, had[0].Sales
	}
	day.Volume, day.Sales, day.FloorPrice = day.Volume.Add(ct.soldVolume), day.Sales+ct.soldCount, c.FloorPrice
	return tx.Later(ctx, tx.NewInsert().Model(&day).On("CONFLICT (collection_id, day) DO UPDATE").
		Set("volume = EXCLUDED.volume").Set("sales = EXCLUDED.sales").Set("floor_price = EXCLUDED.floor_price"))
}

func sameAmount(a, b *Amount) bool {
	return a == nil && b == nil || a != nil && b != nil && a.Equal(*b)
}

// CollectionStats is a collection's figures now, by interval, by day and by trait value.
type CollectionStats struct {
	FloorPrice  *Amount
	TopOffer    *Amount
	ListedCount int
	Owners      int
	Supply      int
	Intervals   map[string]IntervalFigures // "1d", "7d", "30d", "all"
	Daily       []DayFigures               // the last 30 UTC days, oldest first
	Traits      []TraitStats
}

// IntervalFigures is what sold within an interval: the last 1, 7 or 30 UTC days (today
// included) or all time.
type IntervalFigures struct {
	Volume       Amount
	Sales        int     // NFTs sold: a sweep or an accept of several counts each
	AveragePrice *Amount // volume / sales, rounded down to the currency's precision; nil without sales
	FloorChange  *string // the floor now against the floor at the interval's start, as a decimal ratio; nil where either is missing
}

// DayFigures is one UTC day's sales and its closing floor.
type DayFigures struct {
	Day        string // YYYY-MM-DD
	Volume     Amount
	Sales      int
	FloorPrice *Amount // the floor at the day's end (now, for today)
}

// TraitStats is one trait value's figures now.
type TraitStats struct {
	Type, Value string
	Count       int
	Listed      int
	FloorPrice  *Amount
}

// Stats returns a collection's figures now.
func (s *Store) Stats(ctx context.Context, collectionRef string) (*CollectionStats, error) {
	ident, err := s.collectionIdentityOf(ctx, collectionRef)
	if err != nil {
		return nil, err
	}
	c, err := s.CollectionByID(ctx, ident.ID)
	if err != nil {
		return nil, err
	}
	now := s.now()
	today := dayOf(now)
	first := today - statsDays + 1
	var days []collectionDay
	if err := s.db.NewSelect().Model(&days).Where("collection_id = ?", c.ID).Where("day >= ?", first).Order("day").Scan(ctx); err != nil {
		return nil, err
	}
	// The floor carried into the window: the last row before it.
	var before []collectionDay
	if err := s.db.NewSelect().Model(&before).Column("floor_price").Where("collection_id = ?", c.ID).Where("day < ?", first).
		OrderExpr("day DESC").Limit(1).Scan(ctx); err != nil {
		return nil, err
	}
	st := &CollectionStats{FloorPrice: c.FloorPrice, TopOffer: c.TopOffer, ListedCount: c.ListedCount, Owners: c.Owners, Supply: c.Supply,
		Intervals: map[string]IntervalFigures{}}
	var floor *Amount // as each day closed
	if len(before) > 0 {
		floor = before[0].FloorPrice
	}
	opening := map[int64]*Amount{} // the floor each day opened with
	byDay := map[int64]collectionDay{}
	for _, d := range days {
		byDay[d.Day] = d
	}
	for d := first; d <= today; d++ {
		opening[d] = floor
		row, ok := byDay[d]
		if ok {
			floor = row.FloorPrice
		}
		f := DayFigures{Day: time.Unix(d*86400, 0).UTC().Format(time.DateOnly), Volume: Zero, FloorPrice: floor}
		if ok {
			f.Volume, f.Sales = row.Volume, row.Sales
		}
		if d == today {
			f.FloorPrice = c.FloorPrice
		}
		st.Daily = append(st.Daily, f)
	}
	for _, n := range []int{1, 7, 30} {
		f := IntervalFigures{Volume: Zero}
		for _, d := range st.Daily[statsDays-n:] {
			f.Volume, f.Sales = f.Volume.Add(d.Volume), f.Sales+d.Sales
		}
		f.AveragePrice = average(f.Volume, f.Sales, c.Currency)
		f.FloorChange = floorChange(opening[today-int64(n)+1], c.FloorPrice)
		st.Intervals[fmt.Sprintf("%dd", n)] = f
	}
	st.Intervals["all"] = IntervalFigures{Volume: c.Volume, Sales: c.Sales, AveragePrice: average(c.Volume, c.Sales, c.Currency)}
	if st.Traits, err = s.traitStats(ctx, c.ID, now); err != nil {
		return nil, err
	}
	return st, nil
}

func average(volume Amount, sales int, cur Instrument) *Amount {
	if sales == 0 {
		return nil
	}
	a := amountOf(volume.Decimal().Div(decimal.NewFromInt(int64(sales))).RoundFloor(cur.Decimals()))
	return &a
}

// floorChange is (now - start) / start to six decimals, or nil where either is missing.
func floorChange(start, now *Amount) *string {
	if start == nil || now == nil || !start.IsPositive() {
		return nil
	}
	r := now.Decimal().Sub(start.Decimal()).DivRound(start.Decimal(), 6).String()
	return &r
}

// traitStats is every trait value's figures at now: from the NFT index once built, else by SQL.
func (s *Store) traitStats(ctx context.Context, collectionID string, now time.Time) ([]TraitStats, error) {
	if !s.nftIndex.ready.Load() {
		return s.traitStatsBySQL(ctx, collectionID, now)
	}
	out := []TraitStats{}
	ci := s.nftIndex.index.Collection(collectionID)
	if ci == nil {
		return out, nil
	}
	for _, f := range ci.TraitFigures(now) {
		t := TraitStats{Type: f.Type, Value: f.Value, Count: f.Count, Listed: f.Listed}
		if f.Floor != nil {
			a := amountOf(*f.Floor)
			t.FloorPrice = &a
		}
		out = append(out, t)
	}
	return out, nil
}

// traitStatsBySQL is traitStats read by SQL: the reference the index's figures are tested
// against.
func (s *Store) traitStatsBySQL(ctx context.Context, collectionID string, now time.Time) ([]TraitStats, error) {
	out := []TraitStats{}
	var rows []struct {
		Type   string `bun:"trait_type"`
		Value  string `bun:"trait_value"`
		Count  int    `bun:"count"`
		Listed int    `bun:"listed"`
		Floor  string `bun:"floor_key"`
	}
	listed := "i.price_asc_key <> ? AND (i.list_expires IS NULL OR i.list_expires > ?)"
	err := s.db.NewSelect().TableExpr("nft_traits AS t").
		Join("JOIN nft_items AS i ON i.collection_id = t.collection_id AND i.serial = t.serial").
		ColumnExpr("t.trait_type, t.trait_value, COUNT(*) AS count").
		ColumnExpr("SUM(CASE WHEN "+listed+" THEN 1 ELSE 0 END) AS listed", noKey, At(now)).
		ColumnExpr("MIN(CASE WHEN "+listed+" THEN i.price_asc_key ELSE ? END) AS floor_key", noKey, At(now), noKey).
		Where("t.collection_id = ?", collectionID).GroupExpr("t.trait_type, t.trait_value").OrderExpr("t.trait_type, t.trait_value").
		Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		t := TraitStats{Type: r.Type, Value: r.Value, Count: r.Count, Listed: r.Listed}
		if r.Floor != noKey {
			a, err := amountOfKey(r.Floor)
			if err != nil {
				return nil, err
			}
			t.FloorPrice = &a
		}
		out = append(out, t)
	}
	return out, nil
}

// amountOfKey reads an ascending sort key back as its amount.
func amountOfKey(k string) (Amount, error) {
	d, err := decimal.NewFromString(k)
	if err != nil {
		return Amount{}, fmt.Errorf("sort key %q: %w", k, err)
	}
	return amountOf(d), nil
}

// fillCollectionDays writes the daily figures of collections whose history predates them
// (sales still NULL), from their sale events, under each collection's lock.
func (s *Store) fillCollectionDays(ctx context.Context) error {
	var ids []string
	if err := s.db.NewSelect().Model((*Collection)(nil)).Column("collection_id").Where("sales IS NULL").Scan(ctx, &ids); err != nil {
		return err
	}
	for _, id := range ids {
		err := s.inTx(ctx, func(tx *Tx) error {
			ct, err := tx.lockCollection(ctx, id)
			if err != nil {
				return err
			}
			var acts []nftActivity
			if err := tx.NewSelect().Model(&acts).Column("price", "at").Where("collection_id = ?", id).
				Where("kind IN (?)", bun.In([]string{EventSold, EventOfferAccepted})).Scan(ctx); err != nil {
				return err
			}
			byDay := map[int64]*collectionDay{}
			for _, a := range acts {
				d := dayOf(a.At.Time)
				if byDay[d] == nil {
					byDay[d] = &collectionDay{CollectionID: id, Day: d, Volume: Zero}
				}
				if a.Price != nil {
					byDay[d].Volume = byDay[d].Volume.Add(*a.Price)
				}
				byDay[d].Sales++
			}
			for _, d := range byDay {
				if _, err := tx.NewInsert().Model(d).On("CONFLICT (collection_id, day) DO NOTHING").Exec(ctx); err != nil {
					return err
				}
			}
			_, err = tx.NewUpdate().Model(ct.c).Set("sales = ?", len(acts)).WherePK().Exec(ctx)
			return err
		})
		if err != nil {
			return fmt.Errorf("daily figures of %s: %w", id, err)
		}
	}
	return nil
}
