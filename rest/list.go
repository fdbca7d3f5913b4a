package rest

import (
	"bytes"
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

// writeSharedList answers a page as writeList does, rendered once for every caller the store
// serves the same page from memory to; view must not depend on the request or the time.
func writeSharedList[T, V any](w http.ResponseWriter, page store.Page[T], view func(T) V) error {
	b, err := page.Render("rest", func() ([]byte, error) {
		var buf bytes.Buffer
		err := encodeJSON(&buf, listOf(page, view))
		return buf.Bytes(), err
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
