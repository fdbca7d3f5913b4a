package admin

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"marketd/store"
)

// AuditEntry is one operator action of the admin console: who, what, on what, when, from where.
type AuditEntry struct {
	bun.BaseModel `bun:"table:admin_audit"`

	ID     int64           `bun:"id,pk,autoincrement"`
	At     store.Timestamp `bun:"at"`
	Actor  string          `bun:"actor"`
	Action string          `bun:"action"`
	Target string          `bun:"target"`
	Detail string          `bun:"detail"`
	Addr   string          `bun:"addr"`
}

// writeAudit records e in the audit log, at now, within tx: a write transaction of the
// store's (Store.WriteTx) whose own write e records.
func writeAudit(ctx context.Context, tx bun.IDB, now time.Time, e AuditEntry) error {
	e.ID, e.At = 0, store.At(now)
	_, err := tx.NewInsert().Model(&e).Exec(ctx)
	return err
}

// Audit records an operator action that has no store write of its own (e.g. a rate-limit
// reset), in a write transaction of its own.
func (c *Console) Audit(ctx context.Context, e AuditEntry) error {
	return c.s.WriteTx(ctx, func(ctx context.Context, tx bun.Tx, now time.Time) error {
		return writeAudit(ctx, tx, now, e)
	})
}

// firstPage asks for a list's first limit items, limit kept within 1 and MaxPageSize.
func firstPage(limit int) store.PageRequest {
	return store.PageRequest{Limit: min(max(limit, 1), store.MaxPageSize)}
}

// AuditLog lists up to limit audit entries newest first (at most MaxPageSize), of one actor
// when actor is not empty.
func (c *Console) AuditLog(ctx context.Context, actor string, limit int) ([]AuditEntry, error) {
	p, err := c.AuditPage(ctx, actor, firstPage(limit))
	return p.Items, err
}

// AuditPage is one page of the audit log, newest first, of one actor when actor is not empty.
func (c *Console) AuditPage(ctx context.Context, actor string, r store.PageRequest) (store.Page[AuditEntry], error) {
	q, err := store.StartPage[int64](ctx, c.s, "admin-audit:"+store.HashText(actor), r)
	if err != nil {
		return store.Page[AuditEntry]{}, err
	}
	var es []AuditEntry
	sel := c.s.ReadDB().NewSelect().Model(&es)
	if actor != "" {
		sel = sel.Where("actor = ?", actor)
	}
	sel = q.Seek(sel, true, []string{"id"}, q.At(func(id int64) []any { return []any{id} }))
	if err := sel.Limit(q.Fetch()).Scan(ctx); err != nil {
		return store.Page[AuditEntry]{}, err
	}
	return store.FinishPage(ctx, c.s, q, es, func(e AuditEntry) int64 { return e.ID })
}
