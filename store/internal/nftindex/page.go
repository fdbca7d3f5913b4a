package nftindex

import (
	"cmp"
	"slices"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
)

// Sort is the order of a page.
type Sort int

const (
	// BySerial orders every NFT by serial.
	BySerial Sort = iota
	// ByPriceAsc orders the NFTs listed now by price, lowest first, then the rest by serial.
	ByPriceAsc
	// ByPriceDesc orders the NFTs listed now by price, highest first, then the rest by serial.
	ByPriceDesc
)

// SortByCost is the Query.SortUnder that lets the index choose how to read a price run:
// sort the candidates when they are few, walk the price order when they are many (it skips
// about |listed|/|candidates| entries per NFT found).
const SortByCost = 0

// Query is a page request on a collection's NFTs.
type Query struct {
	Traits map[string][]string // type -> values: OR-ed within a type, AND-ed across types
	Owner  string              // "" for any
	Sort   Sort
	Listed bool // only NFTs listed now, within the price bounds
	// The price bounds as keys, "" for none: MinKey and MaxKey in ascending keys; DescLo and
	// DescHi the same bounds as descending keys (DescLo from the highest price), read only by
	// ByPriceDesc.
	MinKey, MaxKey string
	DescLo, DescHi string
	From           *Cursor // nil: from the start, or from the end backward
	Backward       bool    // read toward the start
	Limit          int     // at most this many NFTs
	// SortUnder says how a price run is read: SortByCost, -1 always walks the price order,
	// and n > 0 sorts runs of up to n candidates (tests set it to reach both ways).
	SortUnder int
}

// Cursor is a place in a page's order, not included in the page: an NFT's serial, and in a
// price order its price key, or that it is in the run of NFTs not listed.
type Cursor struct {
	Key      string
	Serial   uint32
	Unlisted bool
}

// Page reads the NFTs of q's page: at most q.Limit of them, in the read's direction, listings
// taken as they stand at now.
func (c *Collection) Page(q *Query, now time.Time) []*Entry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	match := c.matching(q.Traits, q.Owner)
	if match.IsEmpty() {
		return nil
	}
	expired := roaring.New()
	c.expiring.Ascend(func(e expiryEntry) bool {
		if e.at > now.UnixMicro() {
			return false
		}
		expired.Add(e.serial)
		return true
	})
	listedNow := c.listed
	if !expired.IsEmpty() {
		listedNow = roaring.AndNot(c.listed, expired)
	}
	inRange := func(n *Entry) bool {
		return (q.MinKey == "" || n.Listing.AscKey >= q.MinKey) && (q.MaxKey == "" || n.Listing.AscKey <= q.MaxKey)
	}
	fetch := q.Limit
	var rows []*Entry
	if q.Sort == BySerial {
		set := match
		if q.Listed {
			set = roaring.And(match, listedNow)
		}
		var from *uint32
		if q.From != nil {
			s := q.From.Serial
			from = &s
		}
		c.bySerial(set, from, q.Backward, fetch, func(n *Entry) bool {
			return !q.Listed || inRange(n)
		}, &rows)
		return rows
	}
	// A price sort reads two runs: the NFTs listed now by price, then (unless the filter
	// wants listed ones only) the rest by serial. A backward read takes them in reverse.
	runs := []bool{false} // whether the run is the rest
	if !q.Listed {
		runs = append(runs, true)
	}
	if q.Backward {
		slices.Reverse(runs)
	}
	started := q.From == nil
	for _, rest := range runs {
		if len(rows) >= fetch {
			break
		}
		inRun := q.From != nil && q.From.Unlisted == rest
		if !started && !inRun {
			continue
		}
		started = true
		if rest {
			var from *uint32
			if inRun {
				s := q.From.Serial
				from = &s
			}
			c.bySerial(roaring.AndNot(match, listedNow), from, q.Backward, fetch-len(rows), nil, &rows)
			continue
		}
		var from *priceEntry
		if inRun {
			from = &priceEntry{q.From.Key, q.From.Serial}
		}
		c.byPrice(q, roaring.And(match, listedNow), from, fetch-len(rows), &rows)
	}
	return rows
}

// matching is the set of live serials the filter's traits and owner allow. Every bitmap it
// reads holds live serials only, so the filter's own bitmaps are intersected, smallest first.
func (c *Collection) matching(traits map[string][]string, owner string) *roaring.Bitmap {
	var sets []*roaring.Bitmap
	for typ, values := range traits {
		var any []*roaring.Bitmap
		for _, v := range values {
			if b := c.traits[typ][v]; b != nil {
				any = append(any, b)
			}
		}
		switch len(any) {
		case 0:
			return roaring.New()
		case 1:
			sets = append(sets, any[0])
		default:
			sets = append(sets, roaring.FastOr(any...))
		}
	}
	if owner != "" {
		o := c.owners[owner]
		if o == nil {
			return roaring.New()
		}
		sets = append(sets, o)
	}
	switch len(sets) {
	case 0:
		return c.all
	case 1:
		return sets[0]
	}
	slices.SortFunc(sets, func(a, b *roaring.Bitmap) int { return cmp.Compare(a.GetCardinality(), b.GetCardinality()) })
	out := roaring.And(sets[0], sets[1])
	for _, b := range sets[2:] {
		out.And(b)
	}
	return out
}

// bySerial appends to rows, up to n, the NFTs of set past from (nil: from the start, or the
// end backward) in serial order, those keep allows (nil: all).
func (c *Collection) bySerial(set *roaring.Bitmap, from *uint32, backward bool, n int, keep func(*Entry) bool, rows *[]*Entry) {
	took := 0
	add := func(serial uint32) bool {
		it := c.items[serial]
		if keep == nil || keep(it) {
			*rows = append(*rows, it)
			took++
		}
		return took < n
	}
	if !backward {
		iter := set.Iterator()
		if from != nil {
			if *from == ^uint32(0) {
				return
			}
			iter.AdvanceIfNeeded(*from + 1)
		}
		for iter.HasNext() && add(iter.Next()) {
		}
		return
	}
	// Backward: the rank of the cursor says how many lie before it; select them one by one.
	before := set.GetCardinality()
	if from != nil {
		if *from == 0 {
			return
		}
		before = set.Rank(*from - 1)
	}
	for i := int64(before) - 1; i >= 0; i-- {
		serial, err := set.Select(uint32(i))
		if err != nil || !add(serial) {
			return
		}
	}
}

// byPrice appends to rows, up to n, the NFTs of set (listed now) in the query's price order,
// past from (nil: from the start, or the end backward), within its price bounds.
func (c *Collection) byPrice(q *Query, set *roaring.Bitmap, from *priceEntry, n int, rows *[]*Entry) {
	desc, backward := q.Sort == ByPriceDesc, q.Backward
	key := func(l *Listing) string {
		if desc {
			return l.DescKey
		}
		return l.AscKey
	}
	// The price bounds as keys of this order: lo <= key <= hi ("" for none).
	lo, hi := q.MinKey, q.MaxKey
	if desc {
		lo, hi = q.DescLo, q.DescHi
	}
	past := func(e priceEntry) bool {
		if from == nil {
			return true
		}
		if backward {
			return e.less(*from)
		}
		return from.less(e)
	}
	inBounds := func(k string) bool { return (lo == "" || k >= lo) && (hi == "" || k <= hi) }

	size := set.GetCardinality()
	sortUnder := q.SortUnder
	sortIt := uint64(sortUnder) >= size // a threshold a test set
	if sortUnder == SortByCost {
		// Sorting costs about |set|·log|set|; walking about n·|listed|/|set| entries.
		sortIt = size*size <= uint64(n)*c.listed.GetCardinality()
	}
	if sortUnder >= 0 && sortIt {
		var found []priceEntry
		for iter := set.Iterator(); iter.HasNext(); {
			serial := iter.Next()
			e := priceEntry{key(c.items[serial].Listing), serial}
			if inBounds(e.key) && past(e) {
				found = append(found, e)
			}
		}
		slices.SortFunc(found, func(a, b priceEntry) int {
			if a.less(b) {
				return -1
			}
			if b.less(a) {
				return 1
			}
			return 0
		})
		if backward {
			slices.Reverse(found)
		}
		for _, e := range found[:min(n, len(found))] {
			*rows = append(*rows, c.items[e.serial])
		}
		return
	}
	tree := c.byAsc
	if desc {
		tree = c.byDesc
	}
	took := 0
	visit := func(e priceEntry) bool {
		if !inBounds(e.key) {
			// Past the far bound, nothing more can match.
			return backward && hi != "" && e.key > hi || !backward && lo != "" && e.key < lo
		}
		if !past(e) || !set.Contains(e.serial) {
			return true
		}
		*rows = append(*rows, c.items[e.serial])
		took++
		return took < n
	}
	if !backward {
		pivot := priceEntry{lo, 0}
		if from != nil && cmp.Compare(from.key, lo) >= 0 {
			pivot = *from
		}
		tree.AscendGreaterOrEqual(pivot, visit)
		return
	}
	if hi == "" && from == nil {
		tree.Descend(visit)
		return
	}
	pivot := priceEntry{hi, ^uint32(0)}
	if from != nil && (hi == "" || from.less(pivot)) {
		pivot = *from
	}
	tree.DescendLessOrEqual(pivot, visit)
}
