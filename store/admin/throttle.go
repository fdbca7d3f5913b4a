package admin

import (
	"context"
	"time"
)

// LoginAttempt is the verdict on one admin console sign-in attempt against one budget.
type LoginAttempt struct {
	Allowed bool
	ResetIn time.Duration // until the budget's window ends
}

// CountLoginAttempt counts a sign-in attempt against key's budget of limit attempts per
// window and says whether it may go on. A window starts with the first attempt after the
// previous one ended. The count lives in the store, in one statement, so every instance of a
// fleet on one PostgreSQL counts against the same budget.
func (c *Console) CountLoginAttempt(ctx context.Context, key string, limit int, window time.Duration) (LoginAttempt, error) {
	now := c.s.Now().UnixMicro()
	expired := now - window.Microseconds()
	var row struct {
		Attempts    int   `bun:"attempts"`
		WindowStart int64 `bun:"window_start"`
	}
	err := c.s.WriteDB().NewRaw(`INSERT INTO admin_login_attempts (throttle_key, window_start, attempts) VALUES (?, ?, 1)
		ON CONFLICT (throttle_key) DO UPDATE SET
			attempts = CASE WHEN admin_login_attempts.window_start <= ? THEN 1 ELSE admin_login_attempts.attempts + 1 END,
			window_start = CASE WHEN admin_login_attempts.window_start <= ? THEN ? ELSE admin_login_attempts.window_start END
		RETURNING attempts, window_start`, key, now, expired, expired, now).Scan(ctx, &row)
	if err != nil {
		return LoginAttempt{}, err
	}
	return LoginAttempt{Allowed: row.Attempts <= limit, ResetIn: time.Duration(row.WindowStart+window.Microseconds()-now) * time.Microsecond}, nil
}

// ResetLoginAttempts forgets key's attempts (a user who signed in).
func (c *Console) ResetLoginAttempts(ctx context.Context, key string) error {
	_, err := c.s.WriteDB().NewRaw("DELETE FROM admin_login_attempts WHERE throttle_key = ?", key).Exec(ctx)
	return err
}

// pruneLoginAttempts removes the counts whose window ended more than window ago.
func (c *Console) pruneLoginAttempts(ctx context.Context, window time.Duration) error {
	_, err := c.s.WriteDB().NewRaw("DELETE FROM admin_login_attempts WHERE window_start <= ?", c.s.Now().Add(-2*window).UnixMicro()).Exec(ctx)
	return err
}
