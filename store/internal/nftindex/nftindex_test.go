package nftindex

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// world is a collection and the same NFTs as plain values, to compute each page the slow way.
type world struct {
	c    *Collection
	nfts map[uint32]NFT
	now  time.Time
}

var worldTraits = map[string][]string{"Hat": {"cap", "crown", "none"}, "Eyes": {"blue", "red"}}

// ascKey and descKey are a price's sort keys: fixed-width digits, complemented for descending.
func ascKey(price int) string { return fmt.Sprintf("%06d", price) }

func descKey(price int) string {
	b := []byte(ascKey(price))
	for i, c := range b {
		b[i] = '9' - (c - '0')
	}
	return string(b)
}

// newWorld puts n NFTs with random traits and owners; about half are listed at one of a few
// prices (so prices tie), some of those with an expiry before now, some after.
func newWorld(rng *rand.Rand, n int) *world {
	w := &world{c: NewCollection("col"), nfts: map[uint32]NFT{}, now: time.Unix(1_700_000_000, 0).UTC()}
	for serial := uint32(1); serial <= uint32(n); serial++ {
		nft := NFT{Serial: serial, ContractID: fmt.Sprintf("c%d", serial), Owner: fmt.Sprintf("owner%d", rng.IntN(4))}
		for _, typ := range []string{"Hat", "Eyes"} {
			if rng.IntN(5) > 0 {
				vs := worldTraits[typ]
				nft.Traits = append(nft.Traits, Trait{Type: typ, Value: vs[rng.IntN(len(vs))]})
			}
		}
		if rng.IntN(2) == 0 {
			price := 10 * (1 + rng.IntN(20))
			l := &Listing{CID: fmt.Sprintf("l%d", serial), Currency: "CC", AscKey: ascKey(price), DescKey: descKey(price)}
			if rng.IntN(4) == 0 {
				at := w.now.Add(time.Duration(rng.IntN(121)-60) * time.Second)
				l.ExpiresAt = &at
			}
			nft.Listing = l
		}
		w.c.Put(nft)
		w.nfts[serial] = nft
	}
	return w
}

// listedAt tells whether nft's listing holds at now.
func listedAt(nft NFT, now time.Time) bool {
	return nft.Listing != nil && (nft.Listing.ExpiresAt == nil || now.Before(*nft.Listing.ExpiresAt))
}

// want is every NFT q matches in q's order, forward, computed from the plain values.
func (w *world) want(q *Query) []uint32 {
	var listed, rest []uint32
	for serial, nft := range w.nfts {
		if !matches(nft, q) {
			continue
		}
		if l := nft.Listing; listedAt(nft, w.now) && (q.MinKey == "" || l.AscKey >= q.MinKey) && (q.MaxKey == "" || l.AscKey <= q.MaxKey) {
			listed = append(listed, serial)
		} else {
			rest = append(rest, serial) // not listed now: no price bound is set without Listed
		}
	}
	if q.Sort == BySerial {
		if !q.Listed {
			listed = append(listed, rest...)
		}
		slices.Sort(listed)
		return listed
	}
	key := func(s uint32) string {
		if q.Sort == ByPriceDesc {
			return w.nfts[s].Listing.DescKey
		}
		return w.nfts[s].Listing.AscKey
	}
	slices.SortFunc(listed, func(a, b uint32) int {
		if ka, kb := key(a), key(b); ka != kb {
			if ka < kb {
				return -1
			}
			return 1
		}
		return int(a) - int(b)
	})
	if q.Listed {
		return listed
	}
	slices.Sort(rest)
	return append(listed, rest...)
}

// matches tells whether nft has one of the query's values of each trait type, and its owner.
func matches(nft NFT, q *Query) bool {
	for typ, values := range q.Traits {
		if !slices.ContainsFunc(nft.Traits, func(t Trait) bool { return t.Type == typ && slices.Contains(values, t.Value) }) {
			return false
		}
	}
	return q.Owner == "" || nft.Owner == q.Owner
}

// cursorAt is the place of the NFT of serial in q's order.
func (w *world) cursorAt(q *Query, serial uint32) *Cursor {
	nft := w.nfts[serial]
	switch {
	case q.Sort == BySerial:
		return &Cursor{Serial: serial}
	case !listedAt(nft, w.now):
		return &Cursor{Serial: serial, Unlisted: true}
	case q.Sort == ByPriceAsc:
		return &Cursor{Key: nft.Listing.AscKey, Serial: serial}
	}
	return &Cursor{Key: nft.Listing.DescKey, Serial: serial}
}

// walk reads every page of q from the start (or the end, backward), each page's cursor its
// last NFT, and returns the NFTs in forward order.
func (w *world) walk(t *testing.T, q Query) []uint32 {
	var out []uint32
	for range 1000 {
		page := w.c.Page(&q, w.now)
		for _, n := range page {
			out = append(out, n.Serial)
		}
		if len(page) < q.Limit {
			if q.Backward {
				slices.Reverse(out)
			}
			return out
		}
		q.From = w.cursorAt(&q, page[len(page)-1].Serial)
	}
	t.Fatalf("the walk of %+v does not end", q)
	return nil
}

// randomQuery draws a filter, a sort, price bounds and a page size.
func randomQuery(rng *rand.Rand) Query {
	q := Query{Traits: map[string][]string{}, Sort: Sort(rng.IntN(3)), Limit: 1 + rng.IntN(25), SortUnder: []int{-1, SortByCost, 3, 1000}[rng.IntN(4)]}
	for typ, vs := range worldTraits {
		if rng.IntN(3) == 0 {
			q.Traits[typ] = []string{vs[rng.IntN(len(vs))]}
			if rng.IntN(3) == 0 {
				q.Traits[typ] = append(q.Traits[typ], "nobody's")
			}
		}
	}
	if rng.IntN(4) == 0 {
		q.Owner = fmt.Sprintf("owner%d", rng.IntN(5))
	}
	q.Listed = rng.IntN(3) == 0
	if rng.IntN(3) == 0 {
		lo, hi := 10*rng.IntN(12), 10*(8+rng.IntN(14))
		q.MinKey, q.MaxKey, q.DescLo, q.DescHi = ascKey(lo), ascKey(hi), descKey(hi), descKey(lo)
		q.Listed = true
	}
	return q
}

// Every page walk, forward and backward, in every sort and filter, reads exactly the NFTs the
// plain values say, in order, with listings that expired by now taken as not listed.
func TestPage_WalksAnswerAsTheNFTsComputedTheSlowWay(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	w := newWorld(rng, 300)
	for i := range 400 {
		q := randomQuery(rng)
		want := w.want(&q)
		if got := w.walk(t, q); !slices.Equal(got, want) {
			t.Fatalf("query %d %+v forward:\n got %v\nwant %v", i, q, got, want)
		}
		q.Backward = true
		if got := w.walk(t, q); !slices.Equal(got, want) {
			t.Fatalf("query %d %+v backward:\n got %v\nwant %v", i, q, got, want)
		}
	}
}

// A serial the collection saw go, or holds, is not put by PutFresh; Set tells whether it
// changed anything and Gone whether the collection had the NFT.
func TestCollection_PutFreshSetAndGone(t *testing.T) {
	c := NewCollection("col")
	c.Put(NFT{Serial: 2, ContractID: "c2", Owner: "newer"})
	if c.Gone(1) {
		t.Errorf("Gone(1) of a serial never held said it was held")
	}
	c.PutFresh([]NFT{{Serial: 1, ContractID: "c1", Owner: "a"}, {Serial: 2, ContractID: "c2", Owner: "a"}, {Serial: 3, ContractID: "c3", Owner: "a"}})
	owners := func() map[uint32]string {
		out := map[uint32]string{}
		for _, n := range c.Page(&Query{Limit: 10}, time.Now()) {
			out[n.Serial] = n.Owner
		}
		return out
	}
	if got, want := owners(), map[uint32]string{2: "newer", 3: "a"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after PutFresh: %v, want %v", got, want)
	}
	if c.Set(NFT{Serial: 3, ContractID: "c3", Owner: "a"}) {
		t.Errorf("Set of the NFT as held said it changed")
	}
	if !c.Set(NFT{Serial: 3, ContractID: "c3b", Owner: "b"}) {
		t.Errorf("Set of a new contract said nothing changed")
	}
	if !c.Gone(2) {
		t.Errorf("Gone(2) of a held serial said it was not held")
	}
	if got, want := owners(), map[uint32]string{3: "b"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after Set and Gone: %v, want %v", got, want)
	}
}
