package store

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"maps"
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
}

// DemoSummary is what the demo seed created.
type DemoSummary struct {
	Parties     []string `json:"parties"`
	Collections []string `json:"collections"`
	NFTs        int      `json:"nfts"`
	Listings    int      `json:"listings"`
	Sales       int      `json:"sales"`
	Pools       []string `json:"pools"`
	LPQuotes    int      `json:"lpQuotes"`
	Swaps       int      `json:"swaps"`
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
// preapprovals, several collections with traits, NFTs, open listings and past sales. The
// operator creates the collections, their phases, the oracle price and the pool as marketd's
// operator commands do; every other write is a transaction prepared by the store's prepare
// operations, signed by the demo party it acts as with that party's own key and applied by
// Execute, exactly as a wallet's. It refuses a store that has a market.
func (s *Store) SeedDemo(ctx context.Context, o DemoOptions) (*DemoSummary, error) {
	n, err := s.db.NewSelect().Model((*Collection)(nil)).Count(ctx)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		return nil, Errorf(CodeConflict, "the store has a market already (%d collection(s)); the demo seed only fills an empty store", n)
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

	minted := 0
	tell := func(n int) {
		minted += n
		if o.Progress != nil {
			o.Progress(minted, o.NFTs)
		}
	}
	left := o.NFTs
	for i, dc := range demoCollections {
		count := int(math.Round(float64(o.NFTs) * dc.share))
		if i == len(demoCollections)-1 {
			count = left
		}
		count = max(min(count, left), 1)
		left -= count
		creator := parties[i%len(parties)]
		if err := s.seedCollection(ctx, rng, dc, creator, parties, count, sum, tell); err != nil {
			return nil, fmt.Errorf("seed %s: %w", dc.slug, err)
		}
		sum.Collections = append(sum.Collections, dc.slug)
	}
	if err := s.seedSwapDemo(ctx, rng, parties, sum); err != nil {
		return nil, fmt.Errorf("seed swaps: %w", err)
	}
	// A bulk load leaves the planner without statistics (and PostgreSQL's visibility map
	// empty) until autovacuum, where it runs, catches up: refresh them now.
	tables := "nft_items, nft_traits, nft_activity, nfts, listings, collections, holdings"
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
}

// execute signs the prepared transaction's hash with the party's key, as a wallet does, and
// executes it as the endpoint of kind would.
func (p *demoParty) execute(ctx context.Context, s *Store, kind string, prep *Prepared) (Receipt, error) {
	return s.Execute(ctx, Execution{Kinds: []string{kind}, Hash: prep.Hash, Signature: ed25519.Sign(p.key, prep.Hash), Caller: p.id})
}

// run prepares a transaction with prepare and executes it signed by the party.
func (p *demoParty) run(ctx context.Context, s *Store, kind string, prepare func() (*Prepared, error)) (Receipt, error) {
	prep, err := prepare()
	if err != nil {
		return nil, fmt.Errorf("%s by %s: %w", kind, p.id, err)
	}
	receipt, err := p.execute(ctx, s, kind, prep)
	if err != nil {
		return nil, fmt.Errorf("%s by %s: %w", kind, p.id, err)
	}
	return receipt, nil
}

// inParallel runs fn(0) to fn(n-1) at once and returns the first of their errors. The seed
// runs the writes of different parties so: a party's own writes run one after the other,
// each spending the holdings the one before it left.
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

// seedParty onboards a fresh key as a party, taps it a million of each instrument and
// gives it both preapprovals, as a wallet would.
func (s *Store) seedParty(ctx context.Context, hint string) (*demoParty, error) {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	prep, err := s.PrepareOnboarding(ctx, pub, hint)
	if err != nil {
		return nil, err
	}
	p := &demoParty{id: prep.PartyID, key: key}
	if _, err := p.execute(ctx, s, KindOnboard, prep); err != nil {
		return nil, fmt.Errorf("onboard %s: %w", hint, err)
	}
	for _, inst := range []Instrument{CC, USDCx} {
		if _, err := p.run(ctx, s, KindTap, func() (*Prepared, error) { return s.PrepareTap(ctx, p.id, inst, MustAmount("1000000")) }); err != nil {
			return nil, err
		}
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

// seedCollection creates one demo collection with count NFTs minted by the parties, in
// runs of demoMintRun serials each minted by one party, from its public phase, which stays
// open for the rest of the supply; then it lists about one in six and sells a few of those.
// It tells minted how many NFTs each mint made.
func (s *Store) seedCollection(ctx context.Context, rng *mrand.Rand, dc demoCollection, creator *demoParty, parties []*demoParty, count int, sum *DemoSummary, minted func(n int)) error {
	supply := count + max(count/10, 10)
	items := make([]ItemSpec, supply)
	for i := range items {
		it := ItemSpec{Name: fmt.Sprintf("%s #%d", dc.name, i+1), Image: fmt.Sprintf("https://img.marketd.example/%s/%d.png", dc.slug, i+1)}
		for _, tr := range dc.traits {
			it.Traits = append(it.Traits, Trait{Type: tr.typ, Value: tr.values[skewed(rng, len(tr.values))]})
		}
		items[i] = it
	}
	var runs []*demoParty // the minter of each run
	perParty := map[string]int{}
	for done := 0; done < count; done += demoMintRun {
		owner := parties[rng.IntN(len(parties))]
		runs = append(runs, owner)
		perParty[owner.id] += min(demoMintRun, count-done)
	}
	c, err := s.CreateCollection(ctx, CollectionSpec{Slug: dc.slug, Name: dc.name, Description: dc.description,
		Image: fmt.Sprintf("https://img.marketd.example/%s/cover.png", dc.slug), Creator: creator.id, Currency: dc.currency,
		RoyaltyBps: dc.royaltyBps, Supply: supply, Items: items})
	if err != nil {
		return err
	}
	now := s.now()
	// The phase allows 20 per party, and as many as the seed mints to one party.
	price := fmt.Sprintf("%.2f", dc.floor/2)
	limit := max(20, slices.Max(slices.Collect(maps.Values(perParty))))
	if _, err := s.AddPhase(ctx, PhaseSpec{Collection: c.ID, Name: "public", Price: price, Start: now.Add(-time.Hour), End: now.AddDate(1, 0, 0), PerPartyLimit: limit}); err != nil {
		return err
	}
	owners := make(map[int]*demoParty, count) // by serial
	for k, owner := range runs {
		done := k * demoMintRun
		n := min(demoMintRun, count-done)
		if err := s.seedMints(ctx, owner, c.ID, n, minted); err != nil {
			return err
		}
		for serial := done + 1; serial <= done+n; serial++ {
			owners[serial] = owner
		}
	}
	sum.NFTs += count
	listed, err := s.seedListings(ctx, rng, dc, c.ID, owners, count, now)
	if err != nil {
		return err
	}
	sold, err := s.seedSales(ctx, rng, parties, listed)
	if err != nil {
		return err
	}
	sum.Sales += sold
	sum.Listings += len(listed) - sold
	return nil
}

// seedMints mints the collection's next n NFTs to owner, at most MaxBatch a mint, as a
// party minting from the public phase does, paying its price.
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

// seedListing is a listing the seed made.
type seedListing struct {
	cid    string
	seller *demoParty
}

// seedListings lists about one in six of the collection's NFTs, priced around the floor, a
// few with an expiry, each by its owner, at most MaxBatch a transaction. It returns the
// listings in the order of their sellers' ids, each seller's in serial order.
func (s *Store) seedListings(ctx context.Context, rng *mrand.Rand, dc demoCollection, collectionID string, owners map[int]*demoParty, count int, now time.Time) ([]seedListing, error) {
	var live []NFT
	if err := s.db.NewSelect().Model(&live).Column("cid", "serial").Where("collection_id = ?", collectionID).Where("consumed_update IS NULL").Scan(ctx); err != nil {
		return nil, err
	}
	cids := make(map[int]string, len(live))
	for _, n := range live {
		cids[n.Serial] = n.CID
	}
	bySeller := map[string][]ListingTerms{}
	sellers := map[string]*demoParty{}
	for serial := 1; serial <= count; serial++ {
		if rng.IntN(6) != 0 {
			continue
		}
		p := dc.floor * math.Exp(rng.NormFloat64()*0.5)
		lt := ListingTerms{ContractID: cids[serial], Price: fmt.Sprintf("%.2f", max(p, 0.01))}
		if rng.IntN(4) == 0 {
			x := now.AddDate(0, 0, 30)
			lt.ExpiresAt = &x
		}
		seller := owners[serial]
		bySeller[seller.id] = append(bySeller[seller.id], lt)
		sellers[seller.id] = seller
	}
	ids := sortedKeys(bySeller)
	made := make([][]seedListing, len(ids))
	err := inParallel(len(ids), func(i int) error {
		seller, terms := sellers[ids[i]], bySeller[ids[i]]
		for start := 0; start < len(terms); start += MaxBatch {
			chunk := terms[start:min(start+MaxBatch, len(terms))]
			receipt, err := seller.run(ctx, s, KindNFTList, func() (*Prepared, error) { return s.PrepareList(ctx, seller.id, chunk) })
			if err != nil {
				return err
			}
			var res ListResult
			if err := json.Unmarshal(receipt, &res); err != nil {
				return fmt.Errorf("list receipt: %w", err)
			}
			for _, cid := range res.CIDs {
				made[i] = append(made[i], seedListing{cid: cid, seller: seller})
			}
		}
		return nil
	})
	return slices.Concat(made...), err
}

// seedSales has other parties buy up to a quarter of the listings, at most 60, so volume and
// history are real. A listing drawn for its own seller stays listed. It returns how many
// were sold.
func (s *Store) seedSales(ctx context.Context, rng *mrand.Rand, parties []*demoParty, listed []seedListing) (int, error) {
	sales := min(len(listed)/4, 60)
	rng.Shuffle(len(listed), func(i, j int) { listed[i], listed[j] = listed[j], listed[i] })
	buys := make([][]string, len(parties)) // per buyer, the listings it buys in order
	sold := 0
	for _, l := range listed[:sales] {
		b := rng.IntN(len(parties))
		if parties[b] == l.seller {
			continue
		}
		buys[b] = append(buys[b], l.cid)
		sold++
	}
	err := inParallel(len(parties), func(b int) error {
		buyer := parties[b]
		for _, cid := range buys[b] {
			if _, err := buyer.run(ctx, s, KindNFTBuy, func() (*Prepared, error) { return s.PrepareBuy(ctx, buyer.id, cid) }); err != nil {
				return err
			}
		}
		return nil
	})
	return sold, err
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
