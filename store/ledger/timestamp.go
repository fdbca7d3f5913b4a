package ledger

import (
	"database/sql/driver"
	"fmt"
	"strconv"
	"time"
)

// Timestamp is an instant stored as BIGINT Unix microseconds on both dialects, so SQL
// comparisons are exact (bun writes time.Time to SQLite as text of varying width, which does
// not compare in order).
type Timestamp struct{ time.Time }

// At wraps t as a Timestamp.
func At(t time.Time) Timestamp { return Timestamp{t.UTC()} }

// AtPtr wraps t as a *Timestamp.
func AtPtr(t time.Time) *Timestamp { ts := At(t); return &ts }

func (t Timestamp) Value() (driver.Value, error) { return t.UnixMicro(), nil }

func (t *Timestamp) Scan(src any) error {
	var us int64
	switch v := src.(type) {
	case int64:
		us = v
	case []byte:
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return fmt.Errorf("timestamp: %w", err)
		}
		us = n
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("timestamp: %w", err)
		}
		us = n
	default:
		return fmt.Errorf("timestamp: cannot scan %T", src)
	}
	t.Time = time.UnixMicro(us).UTC()
	return nil
}
