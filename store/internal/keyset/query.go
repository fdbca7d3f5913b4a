package keyset

import (
	"crypto/hmac"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"

	"github.com/uptrace/bun"
)

// cursorBody is what a cursor carries: the list it belongs to and the keyset position of the
// last item returned.
type cursorBody struct {
	List string          `json:"l"`
	Key  json.RawMessage `json:"k"`
}

// Query is a keyset query's plan: its size, its direction and, past the first page, the
// cursor's position (decoded into the caller's key type) to read on from.
type Query[K any] struct {
	List        string // the list's name, which its cursors carry
	Limit       int    // the page's size
	From        *K     // the cursor's position; nil on the first page
	Backward    bool
	ItemCursors bool
}

// MACFunc returns the MAC a list's cursors are tagged with. Start, Finish and CursorAt call it
// only when they read or issue a cursor, and return its error as it is.
type MACFunc func() (*MAC, error)

// Start validates r for the list named list and decodes its cursor.
func Start[K any](list string, r Request, mac MACFunc) (*Query[K], error) {
	n, err := Size(r)
	if err != nil {
		return nil, err
	}
	q := &Query[K]{List: list, Limit: n, Backward: r.Backward, ItemCursors: r.ItemCursors}
	if r.Cursor == "" {
		return q, nil
	}
	m, err := mac()
	if err != nil {
		return nil, err
	}
	body64, mac64, ok := strings.Cut(r.Cursor, ".")
	if !ok || len(r.Cursor) > 1024 {
		return nil, ErrCursor
	}
	// Strict: a changed last character whose bits base64 would drop must not read as the same cursor.
	body, err1 := base64.RawURLEncoding.Strict().DecodeString(body64)
	tag, err2 := base64.RawURLEncoding.Strict().DecodeString(mac64)
	if err1 != nil || err2 != nil || !hmac.Equal(tag, m.Tag(nil, body)) {
		return nil, ErrCursor
	}
	var c cursorBody
	if err := json.Unmarshal(body, &c); err != nil || c.List != list {
		return nil, ErrCursor
	}
	q.From = new(K)
	if err := json.Unmarshal(c.Key, q.From); err != nil {
		return nil, ErrCursor
	}
	return q, nil
}

// Fetch is the number of rows to read: one more than the page, to learn whether another follows.
func (q *Query[K]) Fetch() int64 { return int64(q.Limit) + 1 }

// At is the cursor's position as the values of the list's keyset columns, nil on the first page.
func (q *Query[K]) At(values func(K) []any) []any {
	if q.From == nil {
		return nil
	}
	return values(*q.From)
}

// Seek orders sel by the keyset columns cols (descending when the list runs desc) in the
// read's direction and, from a cursor (at, nil for none), keeps the rows past it. A backward
// read runs the other way over the same index; Finish puts its rows back in list order.
func (q *Query[K]) Seek(sel *bun.SelectQuery, desc bool, cols []string, at []any) *bun.SelectQuery {
	order, past := q.Keyset(desc, cols, at != nil)
	if past != "" {
		sel = sel.Where(past, at...)
	}
	return sel.OrderExpr(order)
}

// Keyset is Seek as SQL text: the ORDER BY list, and, from a cursor (from), the condition
// that keeps the rows past it, whose ? marks take the cursor's values in cols' order.
func (q *Query[K]) Keyset(desc bool, cols []string, from bool) (order, past string) {
	if q.Backward {
		desc = !desc
	}
	dir, cmp := " ASC", " > "
	if desc {
		dir, cmp = " DESC", " < "
	}
	quoted := make([]string, len(cols))
	for i, c := range cols { // as bun.Ident writes a name: each part of a dotted one quoted
		quoted[i] = `"` + strings.ReplaceAll(c, ".", `"."`) + `"`
	}
	order = strings.Join(quoted, dir+", ") + dir
	if from {
		past = "(" + strings.Join(quoted, ", ") + ")" + cmp + "(" + strings.Repeat("?, ", len(cols)-1) + "?)"
	}
	return order, past
}

// Past reports whether item lies past the cursor in the read's direction, compare ordering
// keys as the list does; every item does on a first page. It is Seek's test, for rows a
// list merges in Go.
func (q *Query[K]) Past(compare func(a, b K) int, item K) bool {
	if q.From == nil {
		return true
	}
	if q.Backward {
		return compare(item, *q.From) < 0
	}
	return compare(item, *q.From) > 0
}

// Finish cuts rows (read in the query's direction) to the page, puts them in list order and,
// when more follow in that direction, issues the cursor that continues the read (and, when
// asked, each item's).
func Finish[T, K any](q *Query[K], rows []T, key func(T) K, mac MACFunc) (Page[T], error) {
	more := len(rows) > q.Limit
	if more {
		rows = rows[:q.Limit]
	}
	last := len(rows) - 1
	if q.Backward {
		slices.Reverse(rows)
		last = 0
	}
	page := Page[T]{Items: rows}
	if !more && !q.ItemCursors || len(rows) == 0 {
		return page, nil
	}
	m, err := mac()
	if err != nil {
		return Page[T]{}, err
	}
	// Every cursor of the page is {"l":list,"k":key} (cursorBody, as json.Marshal writes it),
	// then its tag; the list's part is the same for each.
	list, err := json.Marshal(q.List)
	if err != nil {
		return Page[T]{}, err
	}
	head := append(append([]byte(`{"l":`), list...), `,"k":`...)
	var body, out []byte
	cursor := func(item T) (string, error) {
		k, err := json.Marshal(key(item))
		if err != nil {
			return "", err
		}
		body = append(append(append(body[:0], head...), k...), '}')
		out = base64.RawURLEncoding.AppendEncode(out[:0], body)
		out = base64.RawURLEncoding.AppendEncode(append(out, '.'), m.Tag(nil, body))
		return string(out), nil
	}
	if q.ItemCursors {
		page.ItemCursors = make([]string, len(rows))
		for i := range rows {
			if page.ItemCursors[i], err = cursor(rows[i]); err != nil {
				return Page[T]{}, err
			}
		}
	}
	if more {
		if page.Cursor, err = cursor(rows[last]); err != nil {
			return Page[T]{}, err
		}
	}
	return page, nil
}

// CursorAt is the cursor of q's list at the keyset position key, for a read that stopped
// there without an item to name it by.
func CursorAt[K any](q *Query[K], key K, mac MACFunc) (string, error) {
	m, err := mac()
	if err != nil {
		return "", err
	}
	k, err := json.Marshal(key)
	if err != nil {
		return "", err
	}
	body, err := json.Marshal(cursorBody{List: q.List, Key: k})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(body) + "." + base64.RawURLEncoding.EncodeToString(m.Tag(nil, body)), nil
}
