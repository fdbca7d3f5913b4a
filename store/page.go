package store

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
)

const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// PageRequest asks for one page of a list: up to Limit items after the position Cursor names.
type PageRequest struct {
	Limit  int    // 0 means DefaultPageSize
	Cursor string // "" means the first page

	// ItemCursors asks for the cursor after each item, not only after the page (a GraphQL
	// connection gives every edge one).
	ItemCursors bool
}

// Page is one page of a list; Cursor is "" on the last page. ItemCursors, when asked for,
// holds the cursor that resumes after each item.
type Page[T any] struct {
	Items       []T
	Cursor      string
	ItemCursors []string
}

// size returns the page size, or invalid_request when it is out of range.
func (r PageRequest) size() (int, error) {
	switch {
	case r.Limit == 0:
		return DefaultPageSize, nil
	case r.Limit < 1 || r.Limit > MaxPageSize:
		return 0, Errorf(CodeInvalidRequest, "limit must be 1 to %d", MaxPageSize)
	}
	return r.Limit, nil
}

// cursorBody is what a cursor carries: the list it belongs to and the keyset position of the
// last item returned.
type cursorBody struct {
	List string          `json:"l"`
	Key  json.RawMessage `json:"k"`
}

// pageQuery is a keyset query's plan: its size and, on a later page, the position to start
// after (decoded into the caller's key type).
type pageQuery[K any] struct {
	list        string
	limit       int
	after       *K
	itemCursors bool
}

// startPage validates r for the list named list and decodes its cursor.
func startPage[K any](ctx context.Context, s *Store, list string, r PageRequest) (*pageQuery[K], error) {
	n, err := r.size()
	if err != nil {
		return nil, err
	}
	q := &pageQuery[K]{list: list, limit: n, itemCursors: r.ItemCursors}
	if r.Cursor == "" {
		return q, nil
	}
	keys, err := s.serviceKeys(ctx)
	if err != nil {
		return nil, err
	}
	bad := Errorf(CodeInvalidCursor, "the cursor was not issued by this list; start from the first page")
	body64, mac64, ok := strings.Cut(r.Cursor, ".")
	if !ok || len(r.Cursor) > 1024 {
		return nil, bad
	}
	// Strict: a changed last character whose bits base64 would drop must not read as the same cursor.
	body, err1 := base64.RawURLEncoding.Strict().DecodeString(body64)
	mac, err2 := base64.RawURLEncoding.Strict().DecodeString(mac64)
	if err1 != nil || err2 != nil || !hmac.Equal(mac, cursorMAC(keys.cursorMAC, body)) {
		return nil, bad
	}
	var c cursorBody
	if err := json.Unmarshal(body, &c); err != nil || c.List != list {
		return nil, bad
	}
	q.after = new(K)
	if err := json.Unmarshal(c.Key, q.after); err != nil {
		return nil, bad
	}
	return q, nil
}

// fetch is the number of rows to read: one more than the page, to learn whether another follows.
func (q *pageQuery[K]) fetch() int64 { return int64(q.limit) + 1 }

// finish cuts rows to the page and, when more follow, issues the cursor after its last item
// (and, when asked, after each item).
func finish[T, K any](ctx context.Context, s *Store, q *pageQuery[K], rows []T, key func(T) K) (Page[T], error) {
	more := len(rows) > q.limit
	if more {
		rows = rows[:q.limit]
	}
	page := Page[T]{Items: rows}
	if !more && !q.itemCursors || len(rows) == 0 {
		return page, nil
	}
	keys, err := s.serviceKeys(ctx)
	if err != nil {
		return Page[T]{}, err
	}
	cursor := func(item T) (string, error) {
		k, err := json.Marshal(key(item))
		if err != nil {
			return "", err
		}
		body, err := json.Marshal(cursorBody{List: q.list, Key: k})
		if err != nil {
			return "", err
		}
		return base64.RawURLEncoding.EncodeToString(body) + "." + base64.RawURLEncoding.EncodeToString(cursorMAC(keys.cursorMAC, body)), nil
	}
	if q.itemCursors {
		page.ItemCursors = make([]string, len(rows))
		for i := range rows {
			if page.ItemCursors[i], err = cursor(rows[i]); err != nil {
				return Page[T]{}, err
			}
		}
	}
	if more {
		if page.Cursor, err = cursor(rows[len(rows)-1]); err != nil {
			return Page[T]{}, err
		}
	}
	return page, nil
}

func cursorMAC(key, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return m.Sum(nil)[:16]
}
