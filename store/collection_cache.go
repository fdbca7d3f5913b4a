package store

import (
	"sync"
	"time"
)

// collectionPageTTL bounds how long a page of the collections list is served from memory.
// A write through this store clears the pages at once; a write through another instance on
// the same database shows here within this time.
const collectionPageTTL = time.Second

// collectionPages caches pages of the collections list: the list is small and every
// dashboard polls it, while it changes only when an NFT trades.
type collectionPages struct {
	mu      sync.Mutex
	gen     uint64 // bumped by every committed write
	entries map[collectionPageKey]collectionPage
}

type collectionPageKey struct {
	sort        CollectionSort
	limit       int
	cursor      string
	backward    bool
	itemCursors bool
}

type collectionPage struct {
	gen   uint64
	at    time.Time
	until time.Time // on the store's clock, when a listing the page may count expires; zero for none
	page  Page[Collection]
}

// maxCollectionPages bounds the cache; past it, it starts over.
const maxCollectionPages = 512

// start returns the cached page for k at the store's time now, or the generation a page read
// now belongs to.
func (c *collectionPages) start(k collectionPageKey, now time.Time) (Page[Collection], bool, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if ok && e.gen == c.gen && time.Since(e.at) < collectionPageTTL && (e.until.IsZero() || now.Before(e.until)) {
		return e.page, true, c.gen
	}
	return Page[Collection]{}, false, c.gen
}

// keep caches a page read at generation gen, unless a write committed since.
func (c *collectionPages) keep(k collectionPageKey, gen uint64, read, until time.Time, p Page[Collection]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if c.entries == nil || len(c.entries) >= maxCollectionPages {
		c.entries = map[collectionPageKey]collectionPage{}
	}
	c.entries[k] = collectionPage{gen: gen, at: read, until: until, page: p}
}

// invalidate forgets every page: a write has committed.
func (c *collectionPages) invalidate() {
	c.mu.Lock()
	c.gen++
	c.entries = nil
	c.mu.Unlock()
}
