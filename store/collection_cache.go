package store

// collectionPageKey names one page of the collections list; the list has one scope, "",
// invalidated by every committed write (any of them may move a collection's statistics).
type collectionPageKey struct {
	sort CollectionSort
	req  PageRequest
}

// maxCachedCollections bounds the collections kept in cached pages; past it, the cache starts over.
const maxCachedCollections = 512 * DefaultPageSize
