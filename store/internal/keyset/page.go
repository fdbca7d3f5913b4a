// Package keyset holds the pages of the store's lists and the keyset reads behind them: what a
// caller asks for (Request), what it is answered (Page, rendered once when shared), a read's
// plan (Query: its size, its direction, and the SQL order and condition that continue past a
// cursor's position) and the cursors themselves, a list's name and a position in JSON, tagged
// with a MAC so that only the list that issued a cursor reads it.
//
// The package does not know the store: the lists' names, their keyset columns and key types,
// the MAC's key (asked for only when a cursor is read or issued) and the codes its errors are
// answered with (ErrLimit, ErrCursor) are the caller's.
package keyset

import (
	"errors"
	"fmt"
	"sync"

	"marketd/store/wallet"
)

const (
	DefaultPageSize = 20
	MaxPageSize     = wallet.MaxPageSize // the limit a wallet asks its pages of
)

// Request asks for one page of a list: up to Limit items after the position Cursor names,
// or, Backward, up to Limit items before it.
type Request struct {
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

// Share marks p as a page served from memory to many callers, whose renderings are kept.
func Share[T any](p *Page[T]) { p.renderings = new(renderings) }

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

// ErrLimit refuses a Request whose Limit is out of range; the store answers it as
// invalid_request, with this text.
var ErrLimit = fmt.Errorf("limit must be 1 to %d", MaxPageSize)

// ErrCursor refuses a cursor that is not one the list issued (malformed, tagged under another
// key, or of another list); the store answers it as invalid_cursor, with this text.
var ErrCursor = errors.New("the cursor was not issued by this list; start from the first page")

// Size returns r's page size, or ErrLimit when it is out of range.
func Size(r Request) (int, error) {
	switch {
	case r.Limit == 0:
		return DefaultPageSize, nil
	case r.Limit < 1 || r.Limit > MaxPageSize:
		return 0, ErrLimit
	}
	return r.Limit, nil
}
