package nftindex

import (
	"cmp"
	"slices"
	"time"

	"github.com/shopspring/decimal"
)

// TraitFigure is what one trait value of a collection counts: its live NFTs, those listed at
// the instant asked for, and the lowest of their prices (nil for none).
type TraitFigure struct {
	Type, Value string
	Count       int
	Listed      int
	Floor       *decimal.Decimal
}

// TraitFigures returns every trait value's figures at now, by type then value. It walks the
// listed NFTs once, cheapest first, so its cost follows the collection's NFTs, not its history.
func (c *Collection) TraitFigures(now time.Time) []TraitFigure {
	c.mu.RLock()
	defer c.mu.RUnlock()
	at := map[Trait]int{}
	var out []TraitFigure
	for typ, values := range c.traits {
		for value, b := range values {
			at[Trait{typ, value}] = len(out)
			out = append(out, TraitFigure{Type: typ, Value: value, Count: int(b.GetCardinality())})
		}
	}
	c.byAsc.Ascend(func(p priceEntry) bool {
		n := c.items[p.serial]
		if n == nil || !n.ListedAt(now) {
			return true
		}
		for _, t := range n.Traits {
			f := &out[at[*t]]
			f.Listed++
			if f.Floor == nil {
				price := n.Listing.Price
				f.Floor = &price
			}
		}
		return true
	})
	slices.SortFunc(out, func(a, b TraitFigure) int { return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.Value, b.Value)) })
	return out
}
