package store

// collectionPageKey names one page of the collections list, or one collection by id or slug
// (a page of one); they share one scope, "", invalidated by every committed write (any of
// them may move a collection's statistics).
type collectionPageKey struct {
	sort CollectionSort
	req  PageRequest
	one  string // "id:" or "slug:" and the name, for one collection
}

// maxCachedCollections bounds the collections kept in cached pages; past it, the cache starts over.
const maxCachedCollections = 512 * DefaultPageSize
