package admin

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"time"

	"github.com/uptrace/bun"
)

// SessionStore keeps the admin console's browser sessions (scs) in the store, so a restart
// or a second instance keeps them. It implements scs.Store. scs stamps expiries with the wall
// clock, so they are compared with the wall clock here too. A session's token is a bearer
// secret (the cookie), so the store never keeps it: each row is keyed by the token's hash
// (sessionTokenHash), and whoever reads the database cannot present one.
type SessionStore struct{ c *Console }

// Sessions returns the store of the admin console's sessions.
func (c *Console) Sessions() SessionStore { return SessionStore{c} }

type adminSession struct {
	bun.BaseModel `bun:"table:admin_sessions"`

	TokenHash string `bun:"token,pk"` // sessionTokenHash of the token, never the token
	Data      []byte `bun:"data"`
	Expiry    int64  `bun:"expiry"` // Unix microseconds
}

// sessionTokenHash is what the store keeps of a console session's token: its SHA-256, in
// unpadded base64url. A token is 32 random bytes, so the hash needs no salt or stretching,
// and a lookup stays one read of the primary key. It is the form scs's own HashTokenInStore
// writes, which the console used before the store hashed: sessions opened then stay valid.
func sessionTokenHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// Find returns a live session's data.
func (a SessionStore) Find(token string) ([]byte, bool, error) {
	return a.FindCtx(context.Background(), token)
}

// Commit writes a session's data and expiry.
func (a SessionStore) Commit(token string, b []byte, expiry time.Time) error {
	return a.CommitCtx(context.Background(), token, b, expiry)
}

// Delete removes a session.
func (a SessionStore) Delete(token string) error {
	return a.DeleteCtx(context.Background(), token)
}

// FindCtx is Find with a context.
func (a SessionStore) FindCtx(ctx context.Context, token string) ([]byte, bool, error) {
	var rows []adminSession
	err := a.c.s.WriteDB().NewSelect().Model(&rows).Where("token = ?", sessionTokenHash(token)).Where("expiry > ?", time.Now().UnixMicro()).Scan(ctx)
	if err != nil || len(rows) == 0 {
		return nil, false, err
	}
	return rows[0].Data, true, nil
}

// CommitCtx is Commit with a context.
func (a SessionStore) CommitCtx(ctx context.Context, token string, b []byte, expiry time.Time) error {
	row := &adminSession{TokenHash: sessionTokenHash(token), Data: b, Expiry: expiry.UnixMicro()}
	_, err := a.c.s.WriteDB().NewInsert().Model(row).
		On("CONFLICT (token) DO UPDATE").Set("data = EXCLUDED.data").Set("expiry = EXCLUDED.expiry").
		Exec(ctx)
	return err
}

// DeleteCtx is Delete with a context.
func (a SessionStore) DeleteCtx(ctx context.Context, token string) error {
	_, err := a.c.s.WriteDB().NewDelete().Model((*adminSession)(nil)).Where("token = ?", sessionTokenHash(token)).Exec(ctx)
	return err
}

// PruneSessions removes expired admin console sessions, sign-in attempt counts whose window
// ended long ago and rate-limit refusal counts older than a week (pruneRefusals).
func (c *Console) PruneSessions(ctx context.Context) (int64, error) {
	if err := c.pruneLoginAttempts(ctx, time.Hour); err != nil {
		return 0, err
	}
	if err := c.pruneRefusals(ctx); err != nil {
		return 0, err
	}
	res, err := c.s.WriteDB().NewDelete().Model((*adminSession)(nil)).Where("expiry <= ?", time.Now().UnixMicro()).Exec(ctx)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
