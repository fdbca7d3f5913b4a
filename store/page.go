package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"marketd/store/internal/keyset"
)

// The store's lists answer pages of the keyset package: a list's read asks startPage for its
// plan (decoding the cursor under the service's cursor key), reads in the plan's order past
// its position, and has finish cut the page and issue its cursors. What needs the store stays
// here: its cursor key, read only when a cursor is read or issued, and its error codes.

const (
	DefaultPageSize = keyset.DefaultPageSize
	MaxPageSize     = keyset.MaxPageSize
)

// MaxRequestBody is the most a request body may hold on every front door (1 MiB): a larger
// one is refused with payload_too_large (413) before it is read.
const MaxRequestBody = 1 << 20

// PageRequest asks for one page of a list: up to Limit items after the position Cursor names,
// or, Backward, up to Limit items before it (keyset.Request).
type PageRequest = keyset.Request

// Page is one page of a list, in list order (keyset.Page). Cursor continues the read in its
// direction: after the last item (before the first, Backward), "" when the list ends there.
// ItemCursors, when asked for, holds each item's cursor. Page.Render renders a page once when
// it is served from memory.
type Page[T any] = keyset.Page[T]

// startPage validates r for the list named list and decodes its cursor.
func startPage[K any](ctx context.Context, s *Store, list string, r PageRequest) (*keyset.Query[K], error) {
	q, err := keyset.Start[K](list, r, cursorMAC(ctx, s))
	return q, pageError(err)
}

// finish cuts rows (read in q's direction) to the page, puts them in list order and, when
// more follow in that direction, issues the cursor that continues the read (and, when asked,
// each item's).
func finish[T, K any](ctx context.Context, s *Store, q *keyset.Query[K], rows []T, key func(T) K) (Page[T], error) {
	return keyset.Finish(q, rows, key, cursorMAC(ctx, s))
}

// cursorAt is the cursor of q's list at the keyset position key, for a read that stopped
// there without an item to name it by.
func cursorAt[K any](ctx context.Context, s *Store, q *keyset.Query[K], key K) (string, error) {
	return keyset.CursorAt(q, key, cursorMAC(ctx, s))
}

// pageSize returns r's page size, or invalid_request when it is out of range: for a read that
// builds its keyset.Query itself.
func pageSize(r PageRequest) (int, error) {
	n, err := keyset.Size(r)
	return n, pageError(err)
}

// cursorMAC is how the keyset package reaches the service's cursor key: through s's keys, read
// under ctx when a cursor is read or issued.
func cursorMAC(ctx context.Context, s *Store) keyset.MACFunc {
	return func() (*keyset.MAC, error) {
		keys, err := s.serviceKeys(ctx)
		if err != nil {
			return nil, err
		}
		return keys.cursorMAC, nil
	}
}

// pageError is err as the store answers it: the keyset package's refusals with their codes
// and texts, anything else as it is.
func pageError(err error) error {
	switch {
	case errors.Is(err, keyset.ErrLimit):
		return Errorf(CodeInvalidRequest, "%s", err)
	case errors.Is(err, keyset.ErrCursor):
		return Errorf(CodeInvalidCursor, "%s", err)
	}
	return err
}

// hashText is a short, stable digest of s.
func hashText(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}
