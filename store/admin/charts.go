package admin

import (
	"context"
	"time"

	"marketd/store"
)

// TimeBuckets are N consecutive intervals of Width, aligned to Width since the Unix epoch
// (whole minutes, whole hours, UTC), the last one holding now on the store's clock.
type TimeBuckets struct {
	Start time.Time // the first bucket's start
	Width time.Duration
	N     int
}

// lastBuckets are the n buckets of width that end with the one holding now.
func (c *Console) lastBuckets(n int, width time.Duration) TimeBuckets {
	return TimeBuckets{Start: c.s.Now().Truncate(width).Add(-time.Duration(n-1) * width), Width: width, N: n}
}

// At is the start of bucket i.
func (b TimeBuckets) At(i int) time.Time { return b.Start.Add(time.Duration(i) * b.Width) }

// span is the buckets as the SQL arguments of a range read: its start, width and end, in
// Unix microseconds (every instant of the store is one).
func (b TimeBuckets) span() (start, width, end int64) {
	start, width = b.Start.UnixMicro(), b.Width.Microseconds()
	return start, width, start + int64(b.N)*width
}

// bucketCount is one row of a per-bucket count: its bucket's index, a label (a currency, a
// scope), how many and, where one is summed, the sum.
type bucketCount struct {
	Bucket int64   `bun:"bucket"`
	Label  string  `bun:"label"`
	N      int64   `bun:"n"`
	Sum    float64 `bun:"total"`
}

// SalesChart is NFT sales per bucket: how many, and the volume in each currency. A sale is
// an NFT bought from a listing or sold into an offer; Accepts counts the latter apart too.
// Volumes are summed as floating point: a chart's figure, not an amount to settle.
type SalesChart struct {
	TimeBuckets
	Count   []int64
	Accepts []int64 // of Count, the NFTs sold into offers
	Volume  map[store.Instrument][]float64
}

// SalesPerHour is the NFT sales of the last hours hours, the current one included.
func (c *Console) SalesPerHour(ctx context.Context, hours int) (*SalesChart, error) {
	b := c.lastBuckets(hours, time.Hour)
	start, width, end := b.span()
	var rows []struct {
		bucketCount
		Kind string `bun:"kind"`
	}
	err := c.s.ReadDB().NewRaw(`SELECT (at - ?) / ? AS bucket, kind, currency AS label, COUNT(*) AS n,
			SUM(CAST(price AS DOUBLE PRECISION)) AS total
		FROM nft_activity WHERE kind IN (?, ?) AND at >= ? AND at < ?
		GROUP BY bucket, kind, currency`, start, width, store.EventSold, store.EventOfferAccepted, start, end).Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	out := &SalesChart{TimeBuckets: b, Count: make([]int64, hours), Accepts: make([]int64, hours), Volume: map[store.Instrument][]float64{}}
	for _, inst := range store.Instruments {
		out.Volume[inst] = make([]float64, hours)
	}
	for _, r := range rows {
		out.Count[r.Bucket] += r.N
		if r.Kind == store.EventOfferAccepted {
			out.Accepts[r.Bucket] += r.N
		}
		if v, ok := out.Volume[store.Instrument(r.Label)]; ok {
			v[r.Bucket] += r.Sum
		}
	}
	return out, nil
}

// CountChart is how many events fell in each bucket.
type CountChart struct {
	TimeBuckets
	Count []int64
}

func (c *Console) countChart(ctx context.Context, b TimeBuckets, query string) (*CountChart, error) {
	start, width, end := b.span()
	var rows []bucketCount
	if err := c.s.ReadDB().NewRaw(query, start, width, start, end).Scan(ctx, &rows); err != nil {
		return nil, err
	}
	out := &CountChart{TimeBuckets: b, Count: make([]int64, b.N)}
	for _, r := range rows {
		out.Count[r.Bucket] += r.N
	}
	return out, nil
}

// SwapFillsPerMinute is the swap fills of the last minutes minutes, by the time of the update
// that filled them.
func (c *Console) SwapFillsPerMinute(ctx context.Context, minutes int) (*CountChart, error) {
	return c.countChart(ctx, c.lastBuckets(minutes, time.Minute), `SELECT (u.recorded_at - ?) / ? AS bucket, COUNT(*) AS n
		FROM updates u JOIN swap_fills f ON f.update_id = u.update_id
		WHERE u.recorded_at >= ? AND u.recorded_at < ?
		GROUP BY bucket`)
}

// SignInsPerMinute is the wallet sign-ins (each opens a session) of the last minutes minutes.
func (c *Console) SignInsPerMinute(ctx context.Context, minutes int) (*CountChart, error) {
	return c.countChart(ctx, c.lastBuckets(minutes, time.Minute), `SELECT (created_at - ?) / ? AS bucket, COUNT(*) AS n
		FROM signin_sessions WHERE created_at >= ? AND created_at < ?
		GROUP BY bucket`)
}

// ScopedChart is a count per bucket for each of several scopes.
type ScopedChart struct {
	TimeBuckets
	Count map[string][]int64
}

// RefusalsPerMinute is the requests refused with 429 in the last minutes minutes, by scope,
// as every instance has flushed them (see store.CountRefusal): up to store.RefusalFlushEvery behind.
func (c *Console) RefusalsPerMinute(ctx context.Context, minutes int) (*ScopedChart, error) {
	b := c.lastBuckets(minutes, time.Minute)
	start, width, end := b.span()
	var rows []bucketCount
	err := c.s.ReadDB().NewRaw(`SELECT (minute - ?) / ? AS bucket, scope AS label, SUM(refused) AS n
		FROM rate_limit_refusals WHERE minute >= ? AND minute < ?
		GROUP BY bucket, scope`, start, width, start, end).Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	out := &ScopedChart{TimeBuckets: b, Count: map[string][]int64{}}
	for _, r := range rows {
		if out.Count[r.Label] == nil {
			out.Count[r.Label] = make([]int64, minutes)
		}
		out.Count[r.Label][r.Bucket] += r.N
	}
	return out, nil
}

// refusalRetention is how long the per-minute refusal counts are kept.
const refusalRetention = 7 * 24 * time.Hour

// pruneRefusals removes the refusal counts older than refusalRetention: the store's flusher
// adds them (store.FlushRefusals), the console reads and prunes them.
func (c *Console) pruneRefusals(ctx context.Context) error {
	_, err := c.s.WriteDB().NewDelete().Model((*store.RateLimitRefusal)(nil)).
		Where("minute < ?", c.s.Now().Add(-refusalRetention).UnixMicro()).Exec(ctx)
	return err
}

// OpenSessions is how many wallet sign-in sessions are open now: neither revoked nor past
// their token's expiry.
func (c *Console) OpenSessions(ctx context.Context) (int64, error) {
	n, err := c.s.ReadDB().NewSelect().Model((*store.Session)(nil)).
		Where("revoked_at IS NULL").Where("token_expires_at > ?", store.At(c.s.Now())).Count(ctx)
	return int64(n), err
}
