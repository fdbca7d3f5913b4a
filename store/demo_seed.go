package store

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"maps"
	"marketd/store/nftmeta"
	"math"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"time"
)

// DemoOptions shape the demo market.
type DemoOptions struct {
	NFTs     int      // how many NFTs to mint in all; 0 means 3,000
	Seed     uint64   // the random seed of names, traits and prices; 0 means a random one
	Progress Progress // when not nil, told the NFTs minted so far after each batch of them
	// OfferProgress, when not nil, is told the offers made so far after each batch of them:
	// the offers are made once every collection is minted, listed and bought from.
	OfferProgress Progress
	// Offers has the seed make offers too (marketd seed --demo does unless --offers=false);
	// without, the same market without its buy side, which tests written against a one-sided
	// demo market seed.
	Offers bool
}

// DemoSummary is what the demo seed created.
type DemoSummary struct {
	Parties      []string `json:"parties"`
	Collections  []string `json:"collections"`
	NFTs         int      `json:"nfts"`
	Listings     int      `json:"listings"`
	Sales        int      `json:"sales"`
	Pools        []string `json:"pools"`
	LPQuotes     int      `json:"lpQuotes"`
	Swaps        int      `json:"swaps"`
	Offers       int      `json:"offers"`       // offers made
	OffersOpen   int      `json:"offersOpen"`   // of them, open after the accepts
	OfferAccepts int      `json:"offerAccepts"` // accepts into them, one NFT each
}

// demoCollection is one collection of the demo market and how its traits are drawn.
type demoCollection struct {
	slug, name, description string
	currency                Instrument
	royaltyBps              int
	share                   float64 // of the NFTs
	floor                   float64 // typical listing price
	traits                  []demoTrait
}

type demoTrait struct {
	typ    string
	values []string // rarer towards the end
}

var demoCollections = []demoCollection{
	{"ledger-apes", "Ledger Apes", "Ten thousand apes who never lose their keys.", CC, 500, 0.4, 40, []demoTrait{
		{"Background", []string{"Blue", "Teal", "Purple", "Orange", "Gray", "Gold"}},
		{"Fur", []string{"Brown", "Black", "Cream", "Golden", "Zombie", "Robot"}},
		{"Eyes", []string{"Bored", "Sleepy", "Angry", "Laser", "Hypnotized"}},
		{"Hat", []string{"None", "Beanie", "Cap", "Crown", "Halo"}},
		{"Mouth", []string{"Grin", "Frown", "Pipe", "Bubblegum", "Gold Grill"}},
	}},
	{"pixel-pets", "Pixel Pets", "Hand-drawn 32x32 companions.", USDCx, 250, 0.3, 25, []demoTrait{
		{"Species", []string{"Cat", "Dog", "Frog", "Fox", "Dragon"}},
		{"Color", []string{"Red", "Green", "Blue", "Pink", "Rainbow"}},
		{"Accessory", []string{"None", "Scarf", "Bowtie", "Glasses", "Jetpack"}},
	}},
	{"orbit-badges", "Orbit Badges", "Proof that you were there: one badge per mission.", CC, 0, 0.2, 5, []demoTrait{
		{"Mission", []string{"Lunar", "Mars", "Europa", "Titan"}},
		{"Tier", []string{"Bronze", "Silver", "Gold", "Platinum"}},
	}},
	{"night-owls", "Night Owls", "Owls that trade while you sleep.", USDCx, 750, 0.1, 120, []demoTrait{
		{"Feathers", []string{"Barn", "Snowy", "Eagle", "Spectral"}},
		{"Perch", []string{"Branch", "Moon", "Lamp", "Chimney"}},
		{"Eyes", []string{"Amber", "Emerald", "Ruby", "Void"}},
	}},
}

// demoParties are the hints of the demo market's traders.
var demoParties = []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"}

// SeedDemo fills an empty store with a demo market: parties with balances and
// preapprovals, several collections with traits, NFTs, open listings and past sales, and
// (with Offers) offers of every kind under each collection's floor, a few accepted
// (demo_seed_offers.go). The operator creates the collections, their phases, the oracle price
// and the pool as marketd's operator commands do; every other write is a transaction prepared
// by the store's prepare operations, signed by the demo party it acts as with that party's own
// key and applied by Execute, exactly as a wallet's. It refuses a store that has a market.
//
// The random draws decide the whole market before the first write (planCollection, then
// planOffers from a stream of their own), in one order, so a seed yields the same market every
// time; the collections are then written at once, each party signing one transaction at a time.
func (s *Store) SeedDemo(ctx context.Context, o DemoOptions) (*DemoSummary, error) {
	n, err := s.db.NewSelect().Model((*Collection)(nil)).Count(ctx)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		return nil, Errorf(CodeConflict, "the store has a market already (%d collection(s)), perhaps part of one a failed seed left; the demo seed only fills an empty store: to start again, stop the service and remove the store (./data with SQLite, or drop and recreate the PostgreSQL database)", n)
	}
	if o.NFTs == 0 {
		o.NFTs = 3000
	}
	if o.NFTs < len(demoCollections) || o.NFTs > MaxSupply {
		return nil, Errorf(CodeInvalidRequest, "the demo market holds %d to %d NFTs", len(demoCollections), MaxSupply)
	}
	if o.Seed == 0 {
		o.Seed = mrand.Uint64()
	}
	// A bulk load that waits for its connections rather than be refused as a crowd would.
	ctx = patient(ctx)
	restore, err := s.bulkLoad(ctx)
	if err != nil {
		return nil, err
	}
	defer restore()
	rng := mrand.New(mrand.NewPCG(o.Seed, 0x6d61726b6574))
	sum := &DemoSummary{}

	parties := make([]*demoParty, len(demoParties))
	err = inParallel(len(demoParties), func(i int) error {
		var err error
		parties[i], err = s.seedParty(ctx, demoParties[i])
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, p := range parties {
		sum.Parties = append(sum.Parties, p.id)
	}

	plans := make([]*collectionPlan, len(demoCollections))
	left := o.NFTs
	for i, dc := range demoCollections {
		count := int(math.Round(float64(o.NFTs) * dc.share))
		if i == len(demoCollections)-1 {
			count = left
		}
		count = max(min(count, left), 1)
		left -= count
		plans[i] = planCollection(rng, dc, parties[i%len(parties)], parties, count)
		sum.Collections = append(sum.Collections, dc.slug)
		sum.NFTs += count
		sum.Sales += plans[i].sold
		sum.Listings += len(plans[i].listings) - plans[i].sold
	}
	if o.Offers {
		orng := mrand.New(mrand.NewPCG(o.Seed, demoOfferStream))
		for _, pl := range plans {
			planOffers(orng, pl, parties)
			sum.Offers += len(pl.offers)
			sum.OffersOpen += pl.openOffers()
			sum.OfferAccepts += len(pl.accepts)
		}
	}
	if err := s.seedFunds(ctx, plans, parties); err != nil {
		return nil, err
	}
	err = eachPlan(plans, o.NFTs, o.Progress, "seed %s", func(pl *collectionPlan, tell func(n int)) error {
		return s.seedCollection(ctx, pl, parties, tell)
	})
	if err != nil {
		return nil, err
	}
	err = eachPlan(plans, sum.Offers, o.OfferProgress, "seed the offers of %s", func(pl *collectionPlan, tell func(n int)) error {
		return s.seedOffers(ctx, pl, parties, tell)
	})
	if err != nil {
		return nil, err
	}
	if err := s.seedSwapDemo(ctx, rng, parties, sum); err != nil {
		return nil, fmt.Errorf("seed swaps: %w", err)
	}
	// A bulk load leaves the planner without statistics (and PostgreSQL's visibility map
	// empty) until autovacuum, where it runs, catches up: refresh them now.
	tables := "nft_items, nft_traits, nft_activity, nfts, listings, nft_offers, collections, holdings"
	stmt := "VACUUM (ANALYZE) " + tables
	if s.dialect == SQLite {
		stmt = "ANALYZE"
	}
	if _, err := s.wdb.ExecContext(ctx, stmt); err != nil {
		return nil, fmt.Errorf("refresh the planner's statistics after the seed: %w", err)
	}
	return sum, nil
}

// demoParty is a trader of the demo market and its key, which only the seed holds.
type demoParty struct {
	id  string
	key ed25519.PrivateKey
	// mu lets the party sign one transaction at a time: each spends the holdings the one
	// before it left, so two prepared at once could pick the same.
	mu sync.Mutex
}

// run prepares a transaction with prepare and executes it as the endpoint of kind would,
// signed with the party's key over the prepared hash, as a wallet signs.
func (p *demoParty) run(ctx context.Context, s *Store, kind string, prepare func() (*Prepared, error)) (Receipt, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	prep, err := prepare()
	if err != nil {
		return nil, fmt.Errorf("%s by %s: %w", kind, p.id, err)
	}
	receipt, err := s.Execute(ctx, Execution{Kinds: []string{kind}, Hash: prep.Hash, Signature: ed25519.Sign(p.key, prep.Hash), Caller: p.id})
	if err != nil {
		return nil, fmt.Errorf("%s by %s: %w", kind, p.id, err)
	}
	return receipt, nil
}

// inParallel runs fn(0) to fn(n-1) at once and returns the first of their errors.
func inParallel(n int, fn func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = fn(i) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// seedParty onboards a fresh key as a party and gives it both preapprovals, as a wallet
// would; seedFunds taps it what the plan makes it spend.
func (s *Store) seedParty(ctx context.Context, hint string) (*demoParty, error) {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	prep, err := s.PrepareOnboarding(ctx, pub, hint)
	if err != nil {
		return nil, fmt.Errorf("onboard %s: %w", hint, err)
	}
	p := &demoParty{id: prep.PartyID, key: key}
	if _, err := p.run(ctx, s, KindOnboard, func() (*Prepared, error) { return prep, nil }); err != nil {
		return nil, err
	}
	for _, kind := range []PreapprovalKind{PreapprovalNFT, PreapprovalUSDCx} {
		if _, err := p.run(ctx, s, kindOfPreapproval(kind), func() (*Prepared, error) { return s.PreparePreapproval(ctx, p.id, kind) }); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// demoMintRun is how many NFTs in a row, by serial, one party mints.
const demoMintRun = 500

// collectionPlan is what the random draws decide of one demo collection.
type collectionPlan struct {
	dc       demoCollection
	creator  *demoParty
	count    int           // NFTs to mint
	items    []ItemSpec    // one per serial of the supply
	runs     []*demoParty  // the minter of each run of demoMintRun serials
	listings []planListing // by seller id, each seller's by serial
	buys     [][]int       // per party, the listings (indexes) it buys, in order
	sold     int
	offers   []planOffer  // made after the buys (planOffers)
	accepts  []planAccept // then these accepts into them
	// collectionID and start are the collection's id and when the seed created it, once it
	// has (seedCollection).
	collectionID string
	start        time.Time
}

// planListing is one NFT the seed lists.
type planListing struct {
	serial  int
	seller  *demoParty
	price   string
	expires bool // in 30 days
}

// planCollection draws one collection of count NFTs: its items' traits, the minter of each
// run of serials, about one in six listed around the floor (a few with an expiry), and up to
// a quarter of the listings, at most 60, bought by other parties, so volume and history are
// real; a listing drawn for its own seller stays listed.
func planCollection(rng *mrand.Rand, dc demoCollection, creator *demoParty, parties []*demoParty, count int) *collectionPlan {
	pl := &collectionPlan{dc: dc, creator: creator, count: count, items: make([]ItemSpec, count+max(count/10, 10))}
	for i := range pl.items {
		it := ItemSpec{Fields: nftmeta.Fields{Name: fmt.Sprintf("%s #%d", dc.name, i+1), Image: fmt.Sprintf("https://img.marketd.example/%s/%d.png", dc.slug, i+1)}}
		for _, tr := range dc.traits {
			it.Traits = append(it.Traits, Trait{Type: tr.typ, Value: tr.values[skewed(rng, len(tr.values))]})
		}
		pl.items[i] = it
	}
	for done := 0; done < count; done += demoMintRun {
		pl.runs = append(pl.runs, parties[rng.IntN(len(parties))])
	}
	bySeller := map[string][]planListing{}
	for serial := 1; serial <= count; serial++ {
		if rng.IntN(6) != 0 {
			continue
		}
		p := dc.floor * math.Exp(rng.NormFloat64()*0.5)
		l := planListing{serial: serial, seller: pl.minter(serial), price: fmt.Sprintf("%.2f", max(p, 0.01)), expires: rng.IntN(4) == 0}
		bySeller[l.seller.id] = append(bySeller[l.seller.id], l)
	}
	for _, seller := range sortedKeys(bySeller) {
		pl.listings = append(pl.listings, bySeller[seller]...)
	}
	order := make([]int, len(pl.listings))
	for i := range order {
		order[i] = i
	}
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	pl.buys = make([][]int, len(parties))
	for _, l := range order[:min(len(order)/4, 60)] {
		b := rng.IntN(len(parties))
		if parties[b] == pl.listings[l].seller {
			continue
		}
		pl.buys[b] = append(pl.buys[b], l)
		pl.sold++
	}
	return pl
}

// demoMintPrice is the price of the collection's public phase: half its floor.
func demoMintPrice(dc demoCollection) string { return fmt.Sprintf("%.2f", dc.floor/2) }

// minter is the party that mints serial.
func (pl *collectionPlan) minter(serial int) *demoParty {
	return pl.runs[(serial-1)/demoMintRun]
}

// eachPlan runs phase on every plan at once, phase telling how many of total it did after
// each batch, and progress (when not nil) told the sum so far; an error names the plan's
// collection by its slug in failed (a format of one %s).
func eachPlan(plans []*collectionPlan, total int, progress Progress, failed string, phase func(pl *collectionPlan, tell func(n int)) error) error {
	var mu sync.Mutex
	done := 0
	tell := func(n int) {
		mu.Lock()
		defer mu.Unlock()
		done += n
		if progress != nil {
			progress(done, total)
		}
	}
	return inParallel(len(plans), func(i int) error {
		if err := phase(plans[i], tell); err != nil {
			return fmt.Errorf(failed+": %w", plans[i].dc.slug, err)
		}
		return nil
	})
}

// seedCollection writes the planned collection: the operator creates it with a public phase
// open for a year, which allows 20 per party and as many as the plan mints to one; its
// parties mint their runs from it in serial order, paying its price, list and buy. Its offers
// come later (seedOffers).
func (s *Store) seedCollection(ctx context.Context, pl *collectionPlan, parties []*demoParty, minted func(n int)) error {
	dc := pl.dc
	c, err := s.CreateCollection(ctx, CollectionSpec{Slug: dc.slug, Name: dc.name, Description: dc.description,
		Image: fmt.Sprintf("https://img.marketd.example/%s/cover.png", dc.slug), Creator: pl.creator.id, Currency: dc.currency,
		RoyaltyBps: dc.royaltyBps, Supply: len(pl.items), Items: pl.items})
	if err != nil {
		return err
	}
	now := s.now()
	pl.collectionID, pl.start = c.ID, now
	perParty := map[*demoParty]int{}
	for k, owner := range pl.runs {
		perParty[owner] += min(demoMintRun, pl.count-k*demoMintRun)
	}
	limit := max(20, slices.Max(slices.Collect(maps.Values(perParty))))
	price := demoMintPrice(dc)
	if _, err := s.AddPhase(ctx, PhaseSpec{Collection: c.ID, Name: "public", Price: price, Start: now.Add(-time.Hour), End: now.AddDate(1, 0, 0), PerPartyLimit: limit}); err != nil {
		return err
	}
	for k, owner := range pl.runs {
		if err := s.seedMints(ctx, owner, c.ID, min(demoMintRun, pl.count-k*demoMintRun), minted); err != nil {
			return err
		}
	}
	cids, err := s.seedListings(ctx, pl, c.ID, now.AddDate(0, 0, 30))
	if err != nil {
		return err
	}
	err = inParallel(len(parties), func(b int) error {
		buyer := parties[b]
		for _, l := range pl.buys[b] {
			if _, err := buyer.run(ctx, s, KindNFTBuy, func() (*Prepared, error) { return s.PrepareBuy(ctx, buyer.id, cids[l]) }); err != nil {
				return err
			}
		}
		return nil
	})
	return err
}

// seedMints mints the collection's next n NFTs to owner, at most MaxBatch a mint, as a
// party minting from the public phase does.
func (s *Store) seedMints(ctx context.Context, owner *demoParty, collectionID string, n int, minted func(n int)) error {
	for done := 0; done < n; done += MaxBatch {
		q := min(MaxBatch, n-done)
		if _, err := owner.run(ctx, s, KindNFTMint, func() (*Prepared, error) { return s.PrepareMint(ctx, owner.id, collectionID, q) }); err != nil {
			return err
		}
		minted(q)
	}
	return nil
}

// seedListings makes the plan's listings, each seller listing at most MaxBatch a
// transaction, the sellers at once; expiring ones expire at expires. It returns the
// listings' contract ids in the plan's order.
func (s *Store) seedListings(ctx context.Context, pl *collectionPlan, collectionID string, expires time.Time) ([]string, error) {
	var live []NFT
	if err := s.db.NewSelect().Model(&live).Column("cid", "serial").Where("collection_id = ?", collectionID).Where("consumed_update IS NULL").Scan(ctx); err != nil {
		return nil, err
	}
	nfts := make(map[int]string, len(live)) // contract by serial
	for _, n := range live {
		nfts[n.Serial] = n.CID
	}
	var sellers [][]int // runs of the plan's listings of one seller: their start and end
	for i, l := range pl.listings {
		if i == 0 || l.seller != pl.listings[i-1].seller {
			sellers = append(sellers, []int{i, i})
		}
		sellers[len(sellers)-1][1] = i + 1
	}
	cids := make([]string, len(pl.listings))
	err := inParallel(len(sellers), func(k int) error {
		seller := pl.listings[sellers[k][0]].seller
		for start := sellers[k][0]; start < sellers[k][1]; start += MaxBatch {
			end := min(start+MaxBatch, sellers[k][1])
			var terms []ListingTerms
			for _, l := range pl.listings[start:end] {
				lt := ListingTerms{ContractID: nfts[l.serial], Price: l.price}
				if l.expires {
					lt.ExpiresAt = &expires
				}
				terms = append(terms, lt)
			}
			receipt, err := seller.run(ctx, s, KindNFTList, func() (*Prepared, error) { return s.PrepareList(ctx, seller.id, terms) })
			if err != nil {
				return err
			}
			var res ListResult
			if err := json.Unmarshal(receipt, &res); err != nil {
				return fmt.Errorf("list receipt: %w", err)
			}
			if len(res.CIDs) != end-start {
				return fmt.Errorf("a list of %d NFTs answered %d listings", end-start, len(res.CIDs))
			}
			copy(cids[start:end], res.CIDs)
		}
		return nil
	})
	return cids, err
}

// skewed picks an index of n, the later ones rarer.
func skewed(rng *mrand.Rand, n int) int {
	for i := range n - 1 {
		if rng.IntN(3) != 0 {
			return i
		}
	}
	return n - 1
}
