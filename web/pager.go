package web

import (
	"net/http"

	"marketd/store"
)

// pager is a list page's links to the page before it and the page after it ("" for none).
// They carry keyset cursors from the store: ?after=CURSOR reads on, ?before=CURSOR reads
// back, and every other query parameter (the list's filters) is kept.
type pager struct {
	Prev, Next string
}

// pageRequest is the page r asks for, of size limit, with each item's cursor so the pager can
// link both ways.
func pageRequest(r *http.Request, limit int) store.PageRequest {
	q := r.URL.Query()
	if c := q.Get("before"); c != "" {
		return store.PageRequest{Limit: limit, Cursor: c, Backward: true, ItemCursors: true}
	}
	return store.PageRequest{Limit: limit, Cursor: q.Get("after"), ItemCursors: true}
}

// pagerOf links the pages around p, read for r as req asked.
func pagerOf[T any](r *http.Request, req store.PageRequest, p store.Page[T]) pager {
	var before, after string
	first, last := "", ""
	if n := len(p.ItemCursors); n > 0 {
		first, last = p.ItemCursors[0], p.ItemCursors[n-1]
	}
	if req.Backward {
		before, after = p.Cursor, last // read back from a cursor: a page follows it
	} else {
		after = p.Cursor
		if req.Cursor != "" {
			before = first // read on from a cursor: a page precedes it
		}
	}
	link := func(dir, cursor string) string {
		if cursor == "" {
			return ""
		}
		q := r.URL.Query()
		q.Del("after")
		q.Del("before")
		q.Set(dir, cursor)
		return r.URL.Path + "?" + q.Encode()
	}
	return pager{Prev: link("before", before), Next: link("after", after)}
}
