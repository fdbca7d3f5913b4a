package store

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// bookMarket draws offer rows of one collection of nfts NFTs as the demo seed makes them: of
// ten, seven item offers, one collection offer, two trait offers of one or two values of
// the traits types; each offer a first version (its id its cid), of one of eight makers,
// priced in hundredths under 40, expiring within 30 days of epoch.
type bookMarket struct {
	rng    *rand.Rand
	nfts   int
	epoch  time.Time
	makers []string
	types  map[string][]string
	n      int
}

func newBookMarket(seed uint64, nfts int) *bookMarket {
	m := &bookMarket{rng: rand.New(rand.NewPCG(seed, 7)), nfts: nfts, epoch: time.Unix(1_800_000_000, 0).UTC(),
		types: map[string][]string{"Hat": {"None", "Cap", "Crown"}, "Eyes": {"Bored", "Laser"}, "Fur": {"Brown", "Gold", "Robot"}}}
	for i := range 8 {
		m.makers = append(m.makers, contractID("party", i))
	}
	return m
}

// traits are the traits of the NFT of serial: one value of each type, drawn from the serial.
func (m *bookMarket) traits(serial int) []Trait {
	var ts []Trait
	for _, typ := range []string{"Eyes", "Fur", "Hat"} {
		vs := m.types[typ]
		ts = append(ts, Trait{Type: typ, Value: vs[(serial*7+len(typ))%len(vs)]})
	}
	return ts
}

// offer draws the next offer row.
func (m *bookMarket) offer() Offer {
	m.n++
	price := MustAmount(fmt.Sprintf("%d.%02d", 20+m.rng.IntN(20), m.rng.IntN(100)))
	cid := contractID(fmt.Sprintf("update-%d", m.n/50), m.n%50)
	o := Offer{Lifecycle: Lifecycle{CID: cid}, OfferID: cid, Maker: m.makers[m.rng.IntN(len(m.makers))], CollectionID: "col",
		Price: price, PriceKey: descKey(price), ExpiresAt: At(m.epoch.Add(time.Duration(1+m.rng.IntN(30*24)) * time.Hour))}
	switch r := m.rng.IntN(10); {
	case r < 7:
		serial := 1 + m.rng.IntN(m.nfts)
		o.Kind, o.Serial, o.NFTID = OfferItem, &serial, strPtr(nftIDOf("col", serial))
	case r < 8:
		o.Kind = OfferCollection
	default:
		typ := []string{"Eyes", "Fur", "Hat"}[m.rng.IntN(3)]
		c := []TraitMatch{{Type: typ, Values: []string{m.types[typ][m.rng.IntN(len(m.types[typ]))]}}}
		if m.rng.IntN(2) == 0 && typ != "Hat" {
			c = append(c, TraitMatch{Type: "Hat", Values: []string{m.types["Hat"][m.rng.IntN(3)]}})
		}
		b, _ := json.Marshal(c)
		o.Kind, o.Traits = OfferTrait, strPtr(string(b))
	}
	return o
}

// The offer book holds a market's offers in under 160 bytes each (its slot and its entry in
// the index by cid; about 130), where rows kept as read took about 450: a server keeps about
// one offer per NFT.
func TestOfferBook_HoldsAnOfferInUnder160Bytes(t *testing.T) {
	const offers = 100_000
	m := newBookMarket(1, offers)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b := newOfferBook()
	for range offers {
		o := m.offer()
		b.put(&o)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / offers
	t.Logf("%.0f bytes an offer (%d offers)", per, len(b.byCID))
	if per > 160 {
		t.Errorf("the book holds %.0f bytes an offer, want at most 160", per)
	}
	runtime.KeepAlive(b)
}

// The book answers every NFT's best offer as a plain scan of the offers it was given does,
// through puts and removes in any order (slots freed and taken again, chains of item offers
// relinked, trait groups moved), for owners that made some of the offers, and at times some
// offers have expired.
func TestOfferBook_AnswersAsAScanThroughPutsAndRemoves(t *testing.T) {
	const nfts = 40
	m := newBookMarket(2, nfts)
	b := newOfferBook()
	held := map[string]*Offer{}
	var cids []string
	for step := range 3000 {
		if len(cids) > 0 && m.rng.IntN(3) == 0 {
			i := m.rng.IntN(len(cids))
			cid := cids[i]
			cids[i] = cids[len(cids)-1]
			cids = cids[:len(cids)-1]
			o := *held[cid]
			delete(held, cid)
			o.ConsumedUpdate = strPtr("u")
			b.apply([]Offer{o})
		} else {
			o := m.offer()
			switch m.rng.IntN(20) {
			case 0, 1, 2, 3: // a later version: its offer id is another cid's
				o.OfferID = contractID("first", step)
			case 4: // ids of another form than the ledger's
				o.CID, o.OfferID = fmt.Sprintf("odd-%d", step), fmt.Sprintf("odd-%d-first", step)
			}
			held[o.CID] = &o
			cids = append(cids, o.CID)
			b.apply([]Offer{o})
		}
		if step%50 != 0 {
			continue
		}
		// Three reads of every NFT, at times that may go back, for owners that change: the
		// later ones may answer from what the first found.
		for range 3 {
			now := m.epoch.Add(time.Duration(m.rng.IntN(40*24)) * time.Hour)
			checkAgainstScan(t, b, m, held, step, nfts, now)
		}
	}
}

// checkAgainstScan checks the book's best offer of every NFT at now against a scan of held.
func checkAgainstScan(t *testing.T, b *offerBook, m *bookMarket, held map[string]*Offer, step, nfts int, now time.Time) {
	t.Helper()
	for serial := 1; serial <= nfts; serial++ {
		owner := m.makers[m.rng.IntN(len(m.makers))]
		v := []NFTView{{CollectionID: "col", Serial: serial, Owner: owner, Traits: m.traits(serial)}}
		b.annotate("col", v, now)
		var want *Offer
		for _, o := range held {
			if o.Maker == owner || !now.Before(o.ExpiresAt.Time) || !o.matches(nftIDOf("col", serial), v[0].Traits) {
				continue
			}
			if want == nil || o.PriceKey < want.PriceKey || o.PriceKey == want.PriceKey && o.OfferID < want.OfferID {
				want = o
			}
		}
		got := v[0].BestOffer
		if (got == nil) != (want == nil) || got != nil && (got.CID != want.OfferID || got.Price.String() != want.Price.String() ||
			got.Kind != want.Kind || !got.ExpiresAt.Equal(want.ExpiresAt.Time)) {
			t.Fatalf("step %d, serial %d, owner %s at %v: the book has %+v, a scan %+v", step, serial, owner, now, got, want)
		}
	}
}
