package store

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"time"

	"github.com/shopspring/decimal"
)

// The demo market's buy side: about one open offer per NFT, every kind of them, from the demo
// parties, each priced under its collection's floor (the cheapest listing the buys leave), so
// none crosses a listing, and made after the listings, so no listing crosses one. A few are
// accepted: collection offers partly filled, item offers taken, so activity shows accepts.

// demoOfferStream is the random stream the offers are drawn from, apart from the market's, so
// a seed makes the same market with offers or without (DemoOptions.Offers).
const demoOfferStream = 0x6f6666657273

// Demo offer mix: of ten offers, demoItemOffers name one NFT and demoCollectionOffers take
// any, the rest take NFTs with one or two trait values; per collection, up to
// demoCollectionFills collection offers are partly filled and demoItemAccepts item offers taken.
const (
	demoItemOffers       = 7
	demoCollectionOffers = 1
	demoCollectionFills  = 3
	demoItemAccepts      = 5
)

// planOffer is one offer the seed makes.
type planOffer struct {
	maker    *demoParty
	kind     string
	serial   int          // an item offer's NFT
	traits   []TraitMatch // a trait offer's criteria
	cents    int64        // its price, in hundredths
	quantity int
	days     int // it expires this many days after the seed's offers start
}

// price is the offer's price as its terms state it.
func (o *planOffer) price() string { return fmt.Sprintf("%d.%02d", o.cents/100, o.cents%100) }

// lock is what the offer locks: price × quantity.
func (o *planOffer) lock() decimal.Decimal {
	return decimal.New(o.cents*int64(o.quantity), -2)
}

// planAccept is one accept the seed makes: seller sells its NFTs serials into the plan's
// offer offer (an index of collectionPlan.offers).
type planAccept struct {
	offer   int
	seller  *demoParty
	serials []int
}

// cents is a price of two decimals in hundredths.
func cents(price string) int64 {
	return MustAmount(price).Decimal().Shift(2).IntPart()
}

// planOffers draws the collection's offers, one per NFT, and the accepts into a few of them:
// an item offer's maker is never the NFT's owner; an offer bids 50 to 97% of the floor (the
// cheapest listing the buys leave, the collection's typical price when none does); a collection
// offer asks for 2 to 20 NFTs, a trait offer for 1 to 5 with one or two trait values. The
// accepts sell NFTs never listed, each once, by owners other than the maker: up to
// demoCollectionFills collection offers filled short of their quantity, one NFT an accept,
// and up to demoItemAccepts item offers.
func planOffers(rng *mrand.Rand, pl *collectionPlan, parties []*demoParty) {
	owner := make([]*demoParty, pl.count+1) // by serial, once the buys are made
	for serial := 1; serial <= pl.count; serial++ {
		owner[serial] = pl.minter(serial)
	}
	sold := map[int]bool{} // listings bought
	for b, buys := range pl.buys {
		for _, l := range buys {
			sold[l] = true
			owner[pl.listings[l].serial] = parties[b]
		}
	}
	listed := map[int]bool{} // serials ever listed
	floor := int64(math.Round(pl.dc.floor * 100))
	first := true
	for i, l := range pl.listings {
		listed[l.serial] = true
		if c := cents(l.price); !sold[i] && (first || c < floor) {
			floor, first = c, false
		}
	}
	if floor < 2 {
		return // no price of two decimals under it
	}
	other := func(p *demoParty) *demoParty { // a party other than p, at random
		for {
			if q := parties[rng.IntN(len(parties))]; q != p {
				return q
			}
		}
	}
	for range pl.count {
		o := planOffer{maker: parties[rng.IntN(len(parties))], quantity: 1, days: 7 + rng.IntN(24)}
		o.cents = min(max(int64(float64(floor)*(0.5+0.47*rng.Float64())), 1), floor-1)
		switch r := rng.IntN(10); {
		case r < demoItemOffers:
			o.kind, o.serial = OfferItem, 1+rng.IntN(pl.count)
			if owner[o.serial] == o.maker {
				o.maker = other(o.maker)
			}
		case r < demoItemOffers+demoCollectionOffers:
			o.kind, o.quantity = OfferCollection, 2+rng.IntN(19)
		default:
			o.kind, o.quantity, o.traits = OfferTrait, 1+rng.IntN(5), drawCriteria(rng, pl.dc)
		}
		pl.offers = append(pl.offers, o)
	}
	used := map[int]bool{}                 // serials an accept sells
	unlisted := func(not *demoParty) int { // an NFT never listed nor sold, of another owner than not; 0 for none found
		for range 100 {
			if s := 1 + rng.IntN(pl.count); !listed[s] && !used[s] && owner[s] != not {
				used[s] = true
				return s
			}
		}
		return 0
	}
	fills, taken := 0, 0
	for i, o := range pl.offers {
		switch {
		case o.kind == OfferCollection && fills < demoCollectionFills:
			fills++
			for range 1 + rng.IntN(o.quantity-1) {
				if s := unlisted(o.maker); s != 0 {
					pl.accepts = append(pl.accepts, planAccept{offer: i, seller: owner[s], serials: []int{s}})
				}
			}
		case o.kind == OfferItem && taken < demoItemAccepts && !listed[o.serial] && !used[o.serial]:
			taken++
			used[o.serial] = true
			pl.accepts = append(pl.accepts, planAccept{offer: i, seller: owner[o.serial], serials: []int{o.serial}})
		}
	}
}

// drawCriteria draws a trait offer's criteria: one trait value, or two, of one type (either
// taken) or of two (both required).
func drawCriteria(rng *mrand.Rand, dc demoCollection) []TraitMatch {
	t := rng.IntN(len(dc.traits))
	m := []TraitMatch{{Type: dc.traits[t].typ, Values: []string{dc.traits[t].values[skewed(rng, len(dc.traits[t].values))]}}}
	switch rng.IntN(4) {
	case 0:
		if v := dc.traits[t].values[rng.IntN(len(dc.traits[t].values))]; v != m[0].Values[0] {
			m[0].Values = append(m[0].Values, v)
		}
	case 1:
		if u := rng.IntN(len(dc.traits)); u != t {
			m = append(m, TraitMatch{Type: dc.traits[u].typ, Values: []string{dc.traits[u].values[skewed(rng, len(dc.traits[u].values))]}})
		}
	}
	return m
}

// openOffers is how many of the plan's offers its accepts leave open: all but the item
// offers taken.
func (pl *collectionPlan) openOffers() int {
	n := len(pl.offers)
	for _, a := range pl.accepts {
		if pl.offers[a.offer].kind == OfferItem {
			n--
		}
	}
	return n
}

// seedOffers makes the plan's offers, each maker MaxBatch a transaction (PrepareOffers), the
// makers at once, telling made each batch's size, then its accepts one after the other, each
// prepared, signed and executed by the NFT's owner. Offers expire the days they planned after
// the collection's start.
func (s *Store) seedOffers(ctx context.Context, pl *collectionPlan, parties []*demoParty, made func(n int)) error {
	if len(pl.offers) == 0 {
		return nil
	}
	collectionID, start := pl.collectionID, pl.start
	cids := make([]string, len(pl.offers))
	err := inParallel(len(parties), func(m int) error {
		maker := parties[m]
		var mine []int
		for i := range pl.offers {
			if pl.offers[i].maker == maker {
				mine = append(mine, i)
			}
		}
		for k := 0; k < len(mine); k += MaxBatch {
			batch := mine[k:min(k+MaxBatch, len(mine))]
			terms := make([]OfferTerms, len(batch))
			for j, i := range batch {
				o := &pl.offers[i]
				t := OfferTerms{CollectionID: collectionID, Price: o.price(), ExpiresAt: start.Add(time.Duration(o.days) * 24 * time.Hour).Unix()}
				switch o.kind {
				case OfferItem:
					t.Serial = &o.serial
				case OfferTrait:
					t.Traits = o.traits
				}
				if o.kind != OfferItem {
					t.Quantity = &o.quantity
				}
				terms[j] = t
			}
			receipt, err := maker.run(ctx, s, KindNFTOffers, func() (*Prepared, error) { return s.PrepareOffers(ctx, maker.id, terms) })
			if err != nil {
				return err
			}
			var res OffersResult
			if err := json.Unmarshal(receipt, &res); err != nil {
				return fmt.Errorf("offers receipt: %w", err)
			}
			if len(res.CIDs) != len(batch) {
				return fmt.Errorf("a batch of %d offers answered %d", len(batch), len(res.CIDs))
			}
			for j, i := range batch {
				cids[i] = res.CIDs[j]
			}
			made(len(batch))
		}
		return nil
	})
	if err != nil || len(pl.accepts) == 0 {
		return err
	}
	var live []NFT
	if err := s.db.NewSelect().Model(&live).Column("cid", "serial").Where("collection_id = ?", collectionID).Where("consumed_update IS NULL").Scan(ctx); err != nil {
		return err
	}
	nfts := make(map[int]string, len(live)) // contract by serial
	for _, n := range live {
		nfts[n.Serial] = n.CID
	}
	for _, a := range pl.accepts {
		acc := OfferAcceptance{CID: cids[a.offer]}
		for _, serial := range a.serials {
			acc.ContractIDs = append(acc.ContractIDs, nfts[serial])
		}
		if _, err := a.seller.run(ctx, s, KindNFTOfferAccept, func() (*Prepared, error) { return s.PrepareOfferAccept(ctx, a.seller.id, acc) }); err != nil {
			return err
		}
	}
	return nil
}
