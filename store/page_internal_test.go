package store

import (
	"errors"
	"testing"

	"marketd/store/internal/keyset"
)

// TestStartPage_ReadsTheStoresCursorsAndRefusesWithCodes: a cursor finish issues under the
// service's cursor key reads back through startPage as the item's position, for its own list
// only; a cursor of another list or key, a changed one and a limit out of range are refused
// with the codes and texts the wire rules give them.
func TestStartPage_ReadsTheStoresCursorsAndRefusesWithCodes(t *testing.T) {
	withKey := func(key string) *Store {
		s := &Store{}
		s.keys.cur.Store(&serviceKeys{cursorMAC: keyset.NewMAC([]byte(key))})
		return s
	}
	s, other := withKey("k"), withKey("another key")
	page, err := finish(t.Context(), s, &keyset.Query[int64]{List: "l", Limit: 1}, []int64{7, 8}, func(id int64) int64 { return id })
	if err != nil || page.Cursor == "" {
		t.Fatalf("finish: %+v %v", page, err)
	}
	q, err := startPage[int64](t.Context(), s, "l", PageRequest{Cursor: page.Cursor, Limit: 5})
	if err != nil || q.From == nil || *q.From != 7 || q.Limit != 5 {
		t.Fatalf("startPage read the cursor back as %+v, %v", q, err)
	}
	if q, err := startPage[int64](t.Context(), s, "l", PageRequest{}); err != nil || q.From != nil || q.Limit != DefaultPageSize {
		t.Fatalf("a first page: %+v, %v", q, err)
	}
	changed := []byte(page.Cursor)
	changed[len(changed)-1] ^= 1
	refused := []struct {
		name string
		s    *Store
		list string
		r    PageRequest
		code Code
		text string
	}{
		{"another list", s, "m", PageRequest{Cursor: page.Cursor}, CodeInvalidCursor, "the cursor was not issued by this list; start from the first page"},
		{"another key", other, "l", PageRequest{Cursor: page.Cursor}, CodeInvalidCursor, "the cursor was not issued by this list; start from the first page"},
		{"a changed cursor", s, "l", PageRequest{Cursor: string(changed)}, CodeInvalidCursor, "the cursor was not issued by this list; start from the first page"},
		{"limit over", s, "l", PageRequest{Limit: MaxPageSize + 1}, CodeInvalidRequest, "limit must be 1 to 100"},
		{"limit under", s, "l", PageRequest{Limit: -1}, CodeInvalidRequest, "limit must be 1 to 100"},
	}
	for _, c := range refused {
		_, err := startPage[int64](t.Context(), c.s, c.list, c.r)
		var e *Error
		if !errors.As(err, &e) || e.Code != c.code || e.Message != c.text || e.Err != nil {
			t.Errorf("%s: %v; want %s %q", c.name, err, c.code, c.text)
		}
	}
	if _, err := pageSize(PageRequest{Limit: 0}); err != nil {
		t.Error(err)
	}
	if _, err := pageSize(PageRequest{Limit: MaxPageSize + 1}); ErrorCode(err) != CodeInvalidRequest {
		t.Errorf("pageSize of a limit over: %v", err)
	}
}
