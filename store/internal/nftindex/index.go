// Package nftindex is the NFT index's data structure: it answers a page of a collection's
// NFTs from memory, at a cost that follows the page rather than how many NFTs the collection
// holds or how many a filter skips. Per collection it keeps a compressed bitmap of serials for
// every trait value, every owner, the live NFTs and the listed ones, and the listed NFTs
// ordered by each price sort. A page intersects the filter's bitmaps, then walks the sort
// order from the cursor until it is full.
//
// It takes plain values (serials, owners, trait values, listings with their prices and sort
// keys) and answers pages of them; it knows nothing of where they come from. The store builds
// it from its tables and keeps it current from its update log, and pages the answers.
package nftindex

import (
	"maps"
	"sync/atomic"
)

// Index is the index of every collection. Lookups are safe at any time; adding a collection
// or replacing them all is for one writer at a time (the caller serializes them).
type Index struct {
	colls atomic.Pointer[map[string]*Collection] // copied on write: collections are few
}

// New returns an index of no collections.
func New() *Index {
	x := &Index{}
	x.colls.Store(&map[string]*Collection{})
	return x
}

// Collection returns the index of a collection, nil when it has none.
func (x *Index) Collection(id string) *Collection {
	return (*x.colls.Load())[id]
}

// Add returns the index of a collection, made empty when it has none.
func (x *Index) Add(id string) *Collection {
	colls := *x.colls.Load()
	if c := colls[id]; c != nil {
		return c
	}
	next := maps.Clone(colls)
	c := NewCollection(id)
	next[id] = c
	x.colls.Store(&next)
	return c
}

// Replace makes colls, by collection id, the index's collections.
func (x *Index) Replace(colls map[string]*Collection) { x.colls.Store(&colls) }

// Size is what the index holds.
type Size struct {
	NFTs        int
	Listed      int
	BitmapBytes uint64 // what the bitmaps hold, by roaring's own count
}

// Size counts what the index holds now.
func (x *Index) Size() Size {
	var sz Size
	for _, c := range *x.colls.Load() {
		c.mu.RLock()
		sz.NFTs += int(c.all.GetCardinality())
		sz.Listed += int(c.listed.GetCardinality())
		sz.BitmapBytes += c.all.GetSizeInBytes() + c.listed.GetSizeInBytes()
		for _, vs := range c.traits {
			for _, b := range vs {
				sz.BitmapBytes += b.GetSizeInBytes()
			}
		}
		for _, b := range c.owners {
			sz.BitmapBytes += b.GetSizeInBytes()
		}
		c.mu.RUnlock()
	}
	return sz
}
