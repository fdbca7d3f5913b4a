package store

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"hash"
	"slices"
	"strings"
	"sync"

	"github.com/uptrace/bun"
)

const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// MaxRequestBody is the most a request body may hold on every front door (1 MiB): a larger
// one is refused with payload_too_large (413) before it is read.
const MaxRequestBody = 1 << 20

// PageRequest asks for one page of a list: up to Limit items after the position Cursor names,
// or, Backward, up to Limit items before it.
type PageRequest struct {
	Limit  int    // 0 means DefaultPageSize
	Cursor string // "" means the first page (the last, Backward)

	// Backward asks for the items just before Cursor (the list's last items when Cursor is
	// ""), still in list order. Any cursor of the list serves either way: it names an item's
	// keyset position, and the read walks the same index the other way.
	Backward bool

	// ItemCursors asks for each item's cursor, not only the page's (a GraphQL connection
	// gives every edge one).
	ItemCursors bool
}

// Page is one page of a list, in list order. Cursor continues the read in its direction: after
// the last item (before the first, Backward), "" when the list ends there. ItemCursors, when
// asked for, holds each item's cursor.
type Page[T any] struct {
	Items       []T
	Cursor      string
	ItemCursors []string

	renderings *renderings // a page kept in memory: shared by every caller it is served to
}

// renderings keeps what front doors made of one page kept in memory, by name.
type renderings struct {
	mu sync.Mutex
	by map[string][]byte
}

// shared marks p as a page served from memory to many callers, whose renderings are kept.
func (p *Page[T]) shared() { p.renderings = new(renderings) }

// Render returns render's result for the page. A page served from memory is the same for
// every caller until it ends, so it is rendered once under each name and the bytes are shared:
// they must not be changed. A page read for one caller is rendered each time.
func (p Page[T]) Render(name string, render func() ([]byte, error)) ([]byte, error) {
	r := p.renderings
	if r == nil {
		return render()
	}
	r.mu.Lock()
	b, ok := r.by[name]
	r.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err := render()
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if r.by == nil {
		r.by = map[string][]byte{}
	}
	r.by[name] = b
	r.mu.Unlock()
	return b, nil
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

// pageQuery is a keyset query's plan: its size, its direction and, past the first page, the
// cursor's position (decoded into the caller's key type) to read on from.
type pageQuery[K any] struct {
	list        string
	limit       int
	from        *K
	backward    bool
	itemCursors bool
}

// startPage validates r for the list named list and decodes its cursor.
func startPage[K any](ctx context.Context, s *Store, list string, r PageRequest) (*pageQuery[K], error) {
	n, err := r.size()
	if err != nil {
		return nil, err
	}
	q := &pageQuery[K]{list: list, limit: n, backward: r.Backward, itemCursors: r.ItemCursors}
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
	if err1 != nil || err2 != nil || !hmac.Equal(mac, keys.cursorMAC.tag(nil, body)) {
		return nil, bad
	}
	var c cursorBody
	if err := json.Unmarshal(body, &c); err != nil || c.List != list {
		return nil, bad
	}
	q.from = new(K)
	if err := json.Unmarshal(c.Key, q.from); err != nil {
		return nil, bad
	}
	return q, nil
}

// fetch is the number of rows to read: one more than the page, to learn whether another follows.
func (q *pageQuery[K]) fetch() int64 { return int64(q.limit) + 1 }

// at is the cursor's position as the values of the list's keyset columns, nil on the first page.
func (q *pageQuery[K]) at(values func(K) []any) []any {
	if q.from == nil {
		return nil
	}
	return values(*q.from)
}

// seek orders sel by the keyset columns cols (descending when the list runs desc) in the
// read's direction and, from a cursor (at, nil for none), keeps the rows past it. A backward
// read runs the other way over the same index; finish puts its rows back in list order.
func (q *pageQuery[K]) seek(sel *bun.SelectQuery, desc bool, cols []string, at []any) *bun.SelectQuery {
	order, past := q.keyset(desc, cols, at != nil)
	if past != "" {
		sel = sel.Where(past, at...)
	}
	return sel.OrderExpr(order)
}

// keyset is seek as SQL text: the ORDER BY list, and, from a cursor (from), the condition
// that keeps the rows past it, whose ? marks take the cursor's values in cols' order.
func (q *pageQuery[K]) keyset(desc bool, cols []string, from bool) (order, past string) {
	if q.backward {
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

// past reports whether item lies past the cursor in the read's direction, compare ordering
// keys as the list does; every item does on a first page. It is seek's test, for rows a
// list merges in Go.
func (q *pageQuery[K]) past(compare func(a, b K) int, item K) bool {
	if q.from == nil {
		return true
	}
	if q.backward {
		return compare(item, *q.from) < 0
	}
	return compare(item, *q.from) > 0
}

// finish cuts rows (read in the query's direction) to the page, puts them in list order and,
// when more follow in that direction, issues the cursor that continues the read (and, when
// asked, each item's).
func finish[T, K any](ctx context.Context, s *Store, q *pageQuery[K], rows []T, key func(T) K) (Page[T], error) {
	more := len(rows) > q.limit
	if more {
		rows = rows[:q.limit]
	}
	last := len(rows) - 1
	if q.backward {
		slices.Reverse(rows)
		last = 0
	}
	page := Page[T]{Items: rows}
	if !more && !q.itemCursors || len(rows) == 0 {
		return page, nil
	}
	keys, err := s.serviceKeys(ctx)
	if err != nil {
		return Page[T]{}, err
	}
	// Every cursor of the page is {"l":list,"k":key} (cursorBody, as json.Marshal writes it),
	// then its tag; the list's part is the same for each.
	list, err := json.Marshal(q.list)
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
		out = base64.RawURLEncoding.AppendEncode(append(out, '.'), keys.cursorMAC.tag(nil, body))
		return string(out), nil
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
		if page.Cursor, err = cursor(rows[last]); err != nil {
			return Page[T]{}, err
		}
	}
	return page, nil
}

// keyedMAC is HMAC-SHA-256 under one key, its keyed hashes reused: a page of a connection
// tags a cursor for every item.
type keyedMAC struct{ hashes sync.Pool }

func newKeyedMAC(key []byte) *keyedMAC {
	m := &keyedMAC{}
	m.hashes.New = func() any { return hmac.New(sha256.New, key) }
	return m
}

// tag appends to dst the first 16 bytes of body's MAC: what a cursor carries.
func (m *keyedMAC) tag(dst, body []byte) []byte {
	h := m.hashes.Get().(hash.Hash)
	h.Reset()
	h.Write(body)
	var sum [sha256.Size]byte
	dst = append(dst, h.Sum(sum[:0])[:16]...)
	m.hashes.Put(h)
	return dst
}

// hashText is a short, stable digest of s.
func hashText(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// cursorAt is the cursor of q's list at the keyset position key, for a read that stopped
// there without an item to name it by.
func cursorAt[K any](ctx context.Context, s *Store, q *pageQuery[K], key K) (string, error) {
	keys, err := s.serviceKeys(ctx)
	if err != nil {
		return "", err
	}
	k, err := json.Marshal(key)
	if err != nil {
		return "", err
	}
	body, err := json.Marshal(cursorBody{List: q.list, Key: k})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(body) + "." + base64.RawURLEncoding.EncodeToString(keys.cursorMAC.tag(nil, body)), nil
}
