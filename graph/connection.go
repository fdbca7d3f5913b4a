package graph

import (
	"marketd/store"
)

// pageRequest reads a connection's first/after as a store page request with a cursor per
// item; first is 1 to 100 like REST's limit.
func pageRequest(first *int, after *string) (store.PageRequest, error) {
	pr := store.PageRequest{Limit: store.DefaultPageSize, ItemCursors: true}
	if first != nil {
		if *first < 1 || *first > store.MaxPageSize {
			return pr, store.Errorf(store.CodeInvalidRequest, "first must be 1 to %d", store.MaxPageSize)
		}
		pr.Limit = *first
	}
	if after != nil {
		pr.Cursor = *after
	}
	return pr, nil
}

// pageInfo describes a store page as a Relay page. Lists page forwards only: a page asked
// for after a cursor has items before it.
func pageInfo[T any](pr store.PageRequest, page store.Page[T]) *PageInfo {
	info := &PageInfo{HasNextPage: page.Cursor != "", HasPreviousPage: pr.Cursor != ""}
	if n := len(page.ItemCursors); n > 0 {
		info.StartCursor, info.EndCursor = &page.ItemCursors[0], &page.ItemCursors[n-1]
	}
	return info
}

func pointers[T any](xs []T) []*T {
	out := make([]*T, len(xs))
	for i := range xs {
		out[i] = &xs[i]
	}
	return out
}

func (s *CollectionSort) store() store.CollectionSort {
	if s == nil {
		return store.SortNewest
	}
	switch *s {
	case CollectionSortVolume:
		return store.SortVolume
	case CollectionSortFloor:
		return store.SortFloor
	}
	return store.SortNewest
}

func (s *NFTSort) store() store.NFTSort {
	if s == nil {
		return store.SortSerial
	}
	switch *s {
	case NFTSortPriceAsc:
		return store.SortPriceAsc
	case NFTSortPriceDesc:
		return store.SortPriceDesc
	}
	return store.SortSerial
}

// store reads the filter as REST's: trait values of one type OR-ed, types AND-ed.
func (f *NFTFilter) store() (store.NFTFilter, error) {
	var out store.NFTFilter
	if f == nil {
		return out, nil
	}
	var traits []string
	for _, t := range f.Traits {
		if len(t.Values) == 0 {
			return out, store.Errorf(store.CodeInvalidRequest, "trait filter %q has no values", t.Type)
		}
		for _, v := range t.Values {
			traits = append(traits, t.Type+":"+v)
		}
	}
	var err error
	if out.Traits, err = store.ParseTraitFilters(traits); err != nil {
		return out, err
	}
	out.Listed = f.Listed != nil && *f.Listed
	if f.MinPrice != nil {
		out.MinPrice = f.MinPrice.String()
	}
	if f.MaxPrice != nil {
		out.MaxPrice = f.MaxPrice.String()
	}
	if f.Owner != nil {
		out.Owner = *f.Owner
	}
	return out, nil
}
