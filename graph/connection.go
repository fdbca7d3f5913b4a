package graph

import (
	"context"

	"marketd/store"
)

// pageRequest reads a connection's arguments as a store page request with a cursor per item:
// first/after reads forwards, last/before backwards, each 1 to 100 like REST's limit.
func pageRequest(first *int, after *string, last *int, before *string) (store.PageRequest, error) {
	pr := store.PageRequest{Limit: store.DefaultPageSize, ItemCursors: true}
	switch {
	case first != nil && last != nil:
		return pr, store.Errorf(store.CodeInvalidRequest, "give first or last, not both")
	case after != nil && before != nil:
		return pr, store.Errorf(store.CodeInvalidRequest, "give after or before, not both")
	case first != nil && before != nil:
		return pr, store.Errorf(store.CodeInvalidRequest, "before pages backwards: give last with it, not first")
	case last != nil && after != nil:
		return pr, store.Errorf(store.CodeInvalidRequest, "after pages forwards: give first with it, not last")
	}
	size, name := first, "first"
	if last != nil || before != nil {
		pr.Backward = true
		size, name = last, "last"
	}
	if size != nil {
		if *size < 1 || *size > store.MaxPageSize {
			return pr, store.Errorf(store.CodeInvalidRequest, "%s must be 1 to %d", name, store.MaxPageSize)
		}
		pr.Limit = *size
	}
	switch {
	case after != nil:
		pr.Cursor = *after
	case before != nil:
		pr.Cursor = *before
	}
	return pr, nil
}

// pageInfo describes a store page as a Relay page. The page's own cursor says whether the list
// goes on in the read's direction; a cursor the page was asked from says items lie the other way.
func pageInfo[T any](pr store.PageRequest, page store.Page[T]) *PageInfo {
	info := &PageInfo{HasNextPage: page.Cursor != "", HasPreviousPage: pr.Cursor != ""}
	if pr.Backward {
		info.HasNextPage, info.HasPreviousPage = info.HasPreviousPage, info.HasNextPage
	}
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

// collectionNFTs is Collection.nfts for the executor and the fast path: the page, with the
// collection primed in the request's loader, as every NFT of the page belongs to it.
func (r *Resolver) collectionNFTs(ctx context.Context, c *store.Collection, filter *NFTFilter, sort *NFTSort, first *int, after *string, last *int, before *string) (*NFTConnection, []store.NFTView, error) {
	loadersOf(ctx).collection.Prime(ctx, c.ID, c)
	return r.nftPage(ctx, c, filter, sort, first, after, last, before)
}

// collectionPageRead names a read of a page of collections in an operation's memo.
type collectionPageRead struct {
	sort store.CollectionSort
	page store.PageRequest
}

// nftPageRead names a read of a page of NFTs in an operation's memo.
type nftPageRead struct {
	collection, filter string
	sort               store.NFTSort
	page               store.PageRequest
}

// nftPage reads a page of the collection's NFTs as Collection.nfts answers it, and the NFTs.
func (r *Resolver) nftPage(ctx context.Context, c *store.Collection, filter *NFTFilter, sort *NFTSort, first *int, after *string, last *int, before *string) (*NFTConnection, []store.NFTView, error) {
	pr, err := pageRequest(first, after, last, before)
	if err != nil {
		return nil, nil, err
	}
	f, err := filter.store()
	if err != nil {
		return nil, nil, err
	}
	page, err := memoized(ctx, func() any { return nftPageRead{c.ID, f.Key(), sort.store(), pr} }, func() (store.Page[store.NFTView], error) {
		return r.store.NFTs(ctx, c.ID, f, sort.store(), pr)
	})
	if err != nil {
		return nil, nil, err
	}
	conn := &NFTConnection{PageInfo: pageInfo(pr, page)}
	if filter == nil {
		// The collection keeps its live supply; a filtered count would scan.
		live := c.Minted - c.Burned
		conn.TotalCount = &live
	}
	conn.Edges = make([]*NFTEdge, len(page.Items))
	for i := range page.Items {
		conn.Edges[i] = &NFTEdge{Cursor: page.ItemCursors[i], Node: &page.Items[i]}
	}
	return conn, page.Items, nil
}

// offerConnection reads one page of offers with read, as a Relay connection.
func offerConnection(first *int, after *string, last *int, before *string, read func(store.PageRequest) (store.Page[store.Offer], error)) (*OfferConnection, error) {
	pr, err := pageRequest(first, after, last, before)
	if err != nil {
		return nil, err
	}
	page, err := read(pr)
	if err != nil {
		return nil, err
	}
	conn := &OfferConnection{PageInfo: pageInfo(pr, page), Edges: make([]*OfferEdge, len(page.Items))}
	for i := range page.Items {
		conn.Edges[i] = &OfferEdge{Cursor: page.ItemCursors[i], Node: &page.Items[i]}
	}
	return conn, nil
}
