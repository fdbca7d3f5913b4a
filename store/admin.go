package store

import (
	"context"
	"time"

	"github.com/uptrace/bun"
)

// AuditEntry is one operator action of the admin console: who, what, on what, when, from where.
type AuditEntry struct {
	bun.BaseModel `bun:"table:admin_audit"`

	ID     int64     `bun:"id,pk,autoincrement"`
	At     Timestamp `bun:"at"`
	Actor  string    `bun:"actor"`
	Action string    `bun:"action"`
	Target string    `bun:"target"`
	Detail string    `bun:"detail"`
	Addr   string    `bun:"addr"`
}

// Audit records an operator action that has no store write of its own (e.g. a rate-limit reset).
func (s *Store) Audit(ctx context.Context, e AuditEntry) error {
	return s.inTx(ctx, func(tx *Tx) error { return tx.audit(ctx, e) })
}

func (tx *Tx) audit(ctx context.Context, e AuditEntry) error { return WriteAudit(ctx, tx, tx.Now(), e) }

// WriteAudit records e in the audit log, at now, within tx: a write transaction of the
// store's (Store.WriteTx) whose own write e records (store/admin's user management).
func WriteAudit(ctx context.Context, tx bun.IDB, now time.Time, e AuditEntry) error {
	e.ID, e.At = 0, At(now)
	_, err := tx.NewInsert().Model(&e).Exec(ctx)
	return err
}

// firstPage asks for a list's first limit items, limit kept within 1 and MaxPageSize.
func firstPage(limit int) PageRequest { return PageRequest{Limit: min(max(limit, 1), MaxPageSize)} }

// AuditLog lists up to limit audit entries newest first (at most MaxPageSize), of one actor
// when actor is not empty.
func (s *Store) AuditLog(ctx context.Context, actor string, limit int) ([]AuditEntry, error) {
	p, err := s.AuditPage(ctx, actor, firstPage(limit))
	return p.Items, err
}

// AuditPage is one page of the audit log, newest first, of one actor when actor is not empty.
func (s *Store) AuditPage(ctx context.Context, actor string, r PageRequest) (Page[AuditEntry], error) {
	q, err := startPage[int64](ctx, s, "admin-audit:"+hashText(actor), r)
	if err != nil {
		return Page[AuditEntry]{}, err
	}
	var es []AuditEntry
	sel := s.db.NewSelect().Model(&es)
	if actor != "" {
		sel = sel.Where("actor = ?", actor)
	}
	sel = q.Seek(sel, true, []string{"id"}, q.At(func(id int64) []any { return []any{id} }))
	if err := sel.Limit(q.Fetch()).Scan(ctx); err != nil {
		return Page[AuditEntry]{}, err
	}
	return finish(ctx, s, q, es, func(e AuditEntry) int64 { return e.ID })
}

// RevokeSession revokes a party's sign-in session on an operator's behalf and records it in
// the audit log in the same transaction: every token of the session is refused from the
// moment this returns, on every instance (see store_notify.go).
func (s *Store) RevokeSession(ctx context.Context, sid string, e AuditEntry) error {
	row := new(Session)
	err := s.wdb.NewSelect().Model(row).Where("sid = ?", sid).Scan(ctx)
	if isNoRows(err) {
		return Errorf(CodeNotFound, "no sign-in session %s", truncate(sid, 80))
	}
	if err != nil {
		return err
	}
	if row.RevokedAt != nil {
		return Errorf(CodeConflict, "the session was already revoked at %s", row.RevokedAt.UTC().Format(time.RFC3339))
	}
	e.Action, e.Target = "revoke-session", sid
	if e.Detail == "" {
		e.Detail = "party " + row.PartyID
	}
	return s.revokeSession(ctx, sid, row.PartyID, func(tx *Tx) error { return tx.audit(ctx, e) })
}

// AdminSessionQuery narrows the console's list of sign-in sessions.
type AdminSessionQuery struct {
	Party  string // a party id, or the start of one (its hint)
	Active bool   // only sessions neither revoked nor expired
	Limit  int    // SearchSessions' page size; MaxPageSize when 0 or above
}

// SearchSessions lists the newest sign-in sessions, by party id or its prefix.
func (s *Store) SearchSessions(ctx context.Context, q AdminSessionQuery) ([]Session, error) {
	if q.Limit <= 0 || q.Limit > MaxPageSize {
		q.Limit = MaxPageSize
	}
	p, err := s.SessionsPage(ctx, q, PageRequest{Limit: q.Limit})
	return p.Items, err
}

// SessionsPage is one page of sign-in sessions, newest first, by party id or its prefix.
func (s *Store) SessionsPage(ctx context.Context, f AdminSessionQuery, r PageRequest) (Page[Session], error) {
	active := ""
	if f.Active {
		active = "active"
	}
	q, err := startPage[sessionKey](ctx, s, "admin-sessions:"+hashText(f.Party+"|"+active), r)
	if err != nil {
		return Page[Session]{}, err
	}
	var rows []Session
	sel := s.db.NewSelect().Model(&rows)
	if f.Party != "" {
		// A prefix compared as it is: a collation's range or LIKE's wildcards would not be exact.
		sel = sel.Where("substr(party_id, 1, ?) = ?", len(f.Party), f.Party)
	}
	if f.Active {
		sel = sel.Where("revoked_at IS NULL").Where("token_expires_at > ?", At(s.now()))
	}
	return s.sessionsPage(ctx, q, sel, &rows)
}

// LatestUpdates lists the newest committed updates (at most MaxPageSize), of one party when
// party is not empty.
func (s *Store) LatestUpdates(ctx context.Context, party string, limit int) ([]Update, error) {
	p, err := s.UpdatesPage(ctx, party, firstPage(limit))
	return p.Items, err
}

// UpdatesPage is one page of committed updates, newest first, of one party when party is not
// empty.
func (s *Store) UpdatesPage(ctx context.Context, party string, r PageRequest) (Page[Update], error) {
	q, err := startPage[int64](ctx, s, "admin-updates:"+hashText(party), r)
	if err != nil {
		return Page[Update]{}, err
	}
	var us []Update
	sel := s.db.NewSelect().Model(&us).Where("ledger_offset IS NOT NULL")
	if party != "" {
		sel = sel.Where("act_as = ?", party)
	}
	sel = q.Seek(sel, true, []string{"ledger_offset"}, q.At(func(offset int64) []any { return []any{offset} }))
	if err := sel.Limit(q.Fetch()).Scan(ctx); err != nil {
		return Page[Update]{}, err
	}
	return finish(ctx, s, q, us, func(u Update) int64 { return u.Offset })
}

// LatestPrepared lists the newest prepared transactions, of one party when party is not empty.
func (s *Store) LatestPrepared(ctx context.Context, party string, limit int) ([]PreparedTx, error) {
	var ps []PreparedTx
	q := s.db.NewSelect().Model(&ps).ExcludeColumn("body", "signer_key", "result")
	if party != "" {
		q = q.Where("act_as = ?", party)
	}
	err := q.OrderExpr("prepared_at DESC").Limit(int64(limit)).Scan(ctx)
	return ps, err
}

// TimeBuckets are N consecutive intervals of Width, aligned to Width since the Unix epoch
// (whole minutes, whole hours, UTC), the last one holding now on the store's clock.
type TimeBuckets struct {
	Start time.Time // the first bucket's start
	Width time.Duration
	N     int
}

// lastBuckets are the n buckets of width that end with the one holding now.
func (s *Store) lastBuckets(n int, width time.Duration) TimeBuckets {
	return TimeBuckets{Start: s.now().Truncate(width).Add(-time.Duration(n-1) * width), Width: width, N: n}
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
	Volume  map[Instrument][]float64
}

// SalesPerHour is the NFT sales of the last hours hours, the current one included.
func (s *Store) SalesPerHour(ctx context.Context, hours int) (*SalesChart, error) {
	b := s.lastBuckets(hours, time.Hour)
	start, width, end := b.span()
	var rows []struct {
		bucketCount
		Kind string `bun:"kind"`
	}
	err := s.db.NewRaw(`SELECT (at - ?) / ? AS bucket, kind, currency AS label, COUNT(*) AS n,
			SUM(CAST(price AS DOUBLE PRECISION)) AS total
		FROM nft_activity WHERE kind IN (?, ?) AND at >= ? AND at < ?
		GROUP BY bucket, kind, currency`, start, width, EventSold, EventOfferAccepted, start, end).Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	c := &SalesChart{TimeBuckets: b, Count: make([]int64, hours), Accepts: make([]int64, hours), Volume: map[Instrument][]float64{}}
	for _, inst := range Instruments {
		c.Volume[inst] = make([]float64, hours)
	}
	for _, r := range rows {
		c.Count[r.Bucket] += r.N
		if r.Kind == EventOfferAccepted {
			c.Accepts[r.Bucket] += r.N
		}
		if v, ok := c.Volume[Instrument(r.Label)]; ok {
			v[r.Bucket] += r.Sum
		}
	}
	return c, nil
}

// CountChart is how many events fell in each bucket.
type CountChart struct {
	TimeBuckets
	Count []int64
}

func (s *Store) countChart(ctx context.Context, b TimeBuckets, query string) (*CountChart, error) {
	start, width, end := b.span()
	var rows []bucketCount
	if err := s.db.NewRaw(query, start, width, start, end).Scan(ctx, &rows); err != nil {
		return nil, err
	}
	c := &CountChart{TimeBuckets: b, Count: make([]int64, b.N)}
	for _, r := range rows {
		c.Count[r.Bucket] += r.N
	}
	return c, nil
}

// SwapFillsPerMinute is the swap fills of the last minutes minutes, by the time of the update
// that filled them.
func (s *Store) SwapFillsPerMinute(ctx context.Context, minutes int) (*CountChart, error) {
	return s.countChart(ctx, s.lastBuckets(minutes, time.Minute), `SELECT (u.recorded_at - ?) / ? AS bucket, COUNT(*) AS n
		FROM updates u JOIN swap_fills f ON f.update_id = u.update_id
		WHERE u.recorded_at >= ? AND u.recorded_at < ?
		GROUP BY bucket`)
}

// SignInsPerMinute is the wallet sign-ins (each opens a session) of the last minutes minutes.
func (s *Store) SignInsPerMinute(ctx context.Context, minutes int) (*CountChart, error) {
	return s.countChart(ctx, s.lastBuckets(minutes, time.Minute), `SELECT (created_at - ?) / ? AS bucket, COUNT(*) AS n
		FROM signin_sessions WHERE created_at >= ? AND created_at < ?
		GROUP BY bucket`)
}

// ScopedChart is a count per bucket for each of several scopes.
type ScopedChart struct {
	TimeBuckets
	Count map[string][]int64
}

// RefusalsPerMinute is the requests refused with 429 in the last minutes minutes, by scope,
// as every instance has flushed them (see CountRefusal): up to RefusalFlushEvery behind.
func (s *Store) RefusalsPerMinute(ctx context.Context, minutes int) (*ScopedChart, error) {
	b := s.lastBuckets(minutes, time.Minute)
	start, width, end := b.span()
	var rows []bucketCount
	err := s.db.NewRaw(`SELECT (minute - ?) / ? AS bucket, scope AS label, SUM(refused) AS n
		FROM rate_limit_refusals WHERE minute >= ? AND minute < ?
		GROUP BY bucket, scope`, start, width, start, end).Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	c := &ScopedChart{TimeBuckets: b, Count: map[string][]int64{}}
	for _, r := range rows {
		if c.Count[r.Label] == nil {
			c.Count[r.Label] = make([]int64, minutes)
		}
		c.Count[r.Label][r.Bucket] += r.N
	}
	return c, nil
}

// OpenSessions is how many wallet sign-in sessions are open now: neither revoked nor past
// their token's expiry.
func (s *Store) OpenSessions(ctx context.Context) (int64, error) {
	n, err := s.db.NewSelect().Model((*Session)(nil)).
		Where("revoked_at IS NULL").Where("token_expires_at > ?", At(s.now())).Count(ctx)
	return int64(n), err
}
