package rest

import (
	"net/http"
	"strconv"

	"marketd/store"
)

// pageRequest reads ?limit= and ?cursor= for a list endpoint.
func pageRequest(r *http.Request) (store.PageRequest, error) {
	q := r.URL.Query()
	pr := store.PageRequest{Cursor: q.Get("cursor")}
	if v := q.Get("limit"); v != "" || q.Has("limit") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxPageSize {
			return pr, store.Errorf(store.CodeInvalidRequest, "limit must be an integer from 1 to %d", store.MaxPageSize)
		}
		pr.Limit = n
	}
	if q.Has("cursor") && pr.Cursor == "" {
		return pr, store.Errorf(store.CodeInvalidCursor, "cursor is empty; omit it for the first page")
	}
	return pr, nil
}

// listResponse is every list's shape: {"items": [...], "cursor": STRING|null}.
type listResponse[V any] struct {
	Items  []V     `json:"items"`
	Cursor *string `json:"cursor"`
}

// writeList answers a page, each item rendered by view.
func writeList[T, V any](w http.ResponseWriter, page store.Page[T], view func(T) V) {
	writeJSON(w, http.StatusOK, listOf(page, view))
}

// writeSharedList answers a page as writeList does, each item appended to the JSON by item,
// rendered once for every caller the store serves the same page from memory to; item must
// not depend on the request or the time.
func writeSharedList[T any](w http.ResponseWriter, page store.Page[T], item func(b []byte, it T) []byte) error {
	b, err := page.Render("rest", func() ([]byte, error) {
		b := append(make([]byte, 0, 1024*(1+len(page.Items))), `{"items":[`...)
		for i, it := range page.Items {
			if i > 0 {
				b = append(b, ',')
			}
			b = item(b, it)
		}
		b = append(b, `],"cursor":`...)
		if page.Cursor == "" {
			b = append(b, "null"...)
		} else {
			b = appendJSONString(b, page.Cursor)
		}
		return append(b, '}', '\n'), nil
	})
	if err != nil {
		return err
	}
	writeRaw(w, http.StatusOK, b)
	return nil
}

func listOf[T, V any](page store.Page[T], view func(T) V) listResponse[V] {
	out := listResponse[V]{Items: make([]V, 0, len(page.Items))}
	for _, it := range page.Items {
		out.Items = append(out.Items, view(it))
	}
	if page.Cursor != "" {
		out.Cursor = &page.Cursor
	}
	return out
}
