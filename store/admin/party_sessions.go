package admin

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/uptrace/bun"

	"marketd/store"
	"marketd/store/ledger"
)

// The parties' sign-in sessions as the console sees them: a search by party id or its prefix,
// and an operator's revoke, recorded in the audit log with the same commit.

// RevokeSession revokes a party's sign-in session on an operator's behalf and records it in
// the audit log in the same transaction: every token of the session is refused from the
// moment this returns, on every instance (store.RevokeSessionWith).
func (c *Console) RevokeSession(ctx context.Context, sid string, e AuditEntry) error {
	row := new(store.Session)
	err := c.s.WriteDB().NewSelect().Model(row).Where("sid = ?", sid).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Errorf(store.CodeNotFound, "no sign-in session %s", ledger.Truncate(sid, 80))
	}
	if err != nil {
		return err
	}
	if row.RevokedAt != nil {
		return store.Errorf(store.CodeConflict, "the session was already revoked at %s", row.RevokedAt.UTC().Format(time.RFC3339))
	}
	e.Action, e.Target = "revoke-session", sid
	if e.Detail == "" {
		e.Detail = "party " + row.PartyID
	}
	return c.s.RevokeSessionWith(ctx, sid, row.PartyID, func(ctx context.Context, tx bun.Tx, now time.Time) error {
		return writeAudit(ctx, tx, now, e)
	})
}

// SessionQuery narrows the console's list of sign-in sessions.
type SessionQuery struct {
	Party  string // a party id, or the start of one (its hint)
	Active bool   // only sessions neither revoked nor expired
	Limit  int    // SearchSessions' page size; MaxPageSize when 0 or above
}

// SearchSessions lists the newest sign-in sessions, by party id or its prefix.
func (c *Console) SearchSessions(ctx context.Context, q SessionQuery) ([]store.Session, error) {
	if q.Limit <= 0 || q.Limit > store.MaxPageSize {
		q.Limit = store.MaxPageSize
	}
	p, err := c.SessionsPage(ctx, q, store.PageRequest{Limit: q.Limit})
	return p.Items, err
}

// SessionsPage is one page of sign-in sessions, newest first, by party id or its prefix.
func (c *Console) SessionsPage(ctx context.Context, f SessionQuery, r store.PageRequest) (store.Page[store.Session], error) {
	active := ""
	if f.Active {
		active = "active"
	}
	return c.s.SessionPage(ctx, "admin-sessions:"+store.HashText(f.Party+"|"+active), r, func(sel *bun.SelectQuery) *bun.SelectQuery {
		if f.Party != "" {
			// A prefix compared as it is: a collation's range or LIKE's wildcards would not be exact.
			sel = sel.Where("substr(party_id, 1, ?) = ?", len(f.Party), f.Party)
		}
		if f.Active {
			sel = sel.Where("revoked_at IS NULL").Where("token_expires_at > ?", store.At(c.s.Now()))
		}
		return sel
	})
}
