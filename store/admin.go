package store

import (
	"context"
	"time"
)

func (tx *Tx) audit(ctx context.Context, e AuditEntry) error { return WriteAudit(ctx, tx, tx.Now(), e) }

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
