package store

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"time"

	"marketd/store/signing"
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
// preapprovals, several collections with traits, NFTs, open listings and past sales, all
// through the same ledger transactions as the API's. It refuses a store that has a market.
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
	rng := mrand.New(mrand.NewPCG(o.Seed, 0x6d61726b6574))
	sum := &DemoSummary{}

	var parties []string
	for _, hint := range demoParties {
		p, err := s.seedParty(ctx, hint)
		if err != nil {
			return nil, err
		}
		parties = append(parties, p)
	}
	sum.Parties = parties

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
	if err := s.SeedSwapDemo(ctx, rng, parties, sum); err != nil {
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

// seedParty onboards a party with a key nobody keeps, funds it and gives it both
// preapprovals, as the wallet endpoints would.
func (s *Store) seedParty(ctx context.Context, hint string) (string, error) {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", err
	}
	id := signing.PartyIDFor(hint, pub)
	err = s.commit(ctx, KindOnboard, id, func(tx *Tx, u *Update) error {
		_, err := applyOnboard(ctx, tx, u, &onboardEffects{PartyID: id, Hint: hint, PublicKey: pub})
		return err
	})
	if err != nil {
		return "", err
	}
	for _, tap := range []tapEffects{{Owner: id, Instrument: CC, Amount: MustAmount("1000000")}, {Owner: id, Instrument: USDCx, Amount: MustAmount("1000000")}} {
		if err := s.commit(ctx, KindTap, id, func(tx *Tx, u *Update) error {
			_, err := applyTap(ctx, tx, u, &tap)
			return err
		}); err != nil {
			return "", err
		}
	}
	expires := s.now().Truncate(time.Second).Add(s.cfg.PreapprovalTTL).Unix()
	for _, kind := range []PreapprovalKind{PreapprovalNFT, PreapprovalUSDCx} {
		if err := s.commit(ctx, kindOfPreapproval(kind), id, func(tx *Tx, u *Update) error {
			_, err := applyPreapproval(ctx, tx, u, &preapprovalEffects{PartyID: id, Kind: kind, ExpiresAt: expires})
			return err
		}); err != nil {
			return "", err
		}
	}
	return id, nil
}

// seedCollection creates one demo collection with count NFTs minted among the parties, an
// open public phase for the rest of its supply, listings and a few sales. It tells minted
// how many NFTs each batch of mints made.
func (s *Store) seedCollection(ctx context.Context, rng *mrand.Rand, dc demoCollection, creator string, parties []string, count int, sum *DemoSummary, minted func(n int)) error {
	supply := count + max(count/10, 10)
	items := make([]ItemSpec, supply)
	for i := range items {
		it := ItemSpec{Name: fmt.Sprintf("%s #%d", dc.name, i+1), Image: fmt.Sprintf("https://img.marketd.example/%s/%d.png", dc.slug, i+1)}
		for _, tr := range dc.traits {
			it.Traits = append(it.Traits, Trait{Type: tr.typ, Value: tr.values[skewed(rng, len(tr.values))]})
		}
		items[i] = it
	}
	c, err := s.CreateCollection(ctx, CollectionSpec{Slug: dc.slug, Name: dc.name, Description: dc.description,
		Image: fmt.Sprintf("https://img.marketd.example/%s/cover.png", dc.slug), Creator: creator, Currency: dc.currency,
		RoyaltyBps: dc.royaltyBps, Supply: supply, Items: items})
	if err != nil {
		return err
	}
	now := s.now()
	price := fmt.Sprintf("%.2f", dc.floor/2)
	if _, err := s.AddPhase(ctx, PhaseSpec{Collection: c.ID, Name: "public", Price: price, Start: now.Add(-time.Hour), End: now.AddDate(1, 0, 0), PerPartyLimit: 20}); err != nil {
		return err
	}

	// Mint in batches, each owned by one party, as batch mints would.
	const batch = 500
	owners := map[int]string{}
	for done := 0; done < count; done += batch {
		n := min(batch, count-done)
		owner := parties[rng.IntN(len(parties))]
		err := s.commit(ctx, KindNFTMint, owner, func(tx *Tx, u *Update) error {
			ct, err := tx.lockCollection(ctx, c.ID)
			if err != nil {
				return err
			}
			if _, err := tx.mintNext(ctx, u, ct, owner, n, Zero, nil); err != nil {
				return err
			}
			return ct.close(ctx)
		})
		if err != nil {
			return err
		}
		for serial := done + 1; serial <= done+n; serial++ {
			owners[serial] = owner
		}
		minted(n)
	}
	sum.NFTs += count

	// List about one in six, priced around the floor, a few with an expiry.
	var live []NFT
	if err := s.db.NewSelect().Model(&live).Column("cid", "nft_id", "serial").Where("collection_id = ?", c.ID).Where("consumed_update IS NULL").Scan(ctx); err != nil {
		return err
	}
	bySerial := make(map[int]NFT, len(live))
	for _, n := range live {
		bySerial[n.Serial] = n
	}
	var listed []Listing
	bySeller := map[string][]listingEffect{}
	for serial := 1; serial <= count; serial++ {
		if rng.IntN(6) != 0 {
			continue
		}
		p := dc.floor * math.Exp(rng.NormFloat64()*0.5)
		amount, err := parseDecimal(fmt.Sprintf("%.2f", max(p, 0.01)), dc.currency.Decimals())
		if err != nil {
			return err
		}
		n := bySerial[serial]
		le := listingEffect{NFTCID: n.CID, NFTID: n.NFTID, CollectionID: c.ID, Price: amount, Currency: dc.currency}
		if rng.IntN(4) == 0 {
			x := now.AddDate(0, 0, 30).Unix()
			le.ExpiresAt = &x
		}
		bySeller[owners[serial]] = append(bySeller[owners[serial]], le)
	}
	for _, seller := range sortedKeys(bySeller) {
		les := bySeller[seller]
		for start := 0; start < len(les); start += 200 {
			e := &listEffects{Seller: seller, Listings: les[start:min(start+200, len(les))]}
			var res any
			err := s.commit(ctx, KindNFTList, seller, func(tx *Tx, u *Update) error {
				var err error
				res, err = applyList(ctx, tx, u, e)
				return err
			})
			if err != nil {
				return err
			}
			for i, cid := range res.(ListResult).CIDs {
				le := e.Listings[i]
				listed = append(listed, Listing{Lifecycle: Lifecycle{CID: cid}, Seller: seller, NFTCID: le.NFTCID, NFTID: le.NFTID, CollectionID: c.ID, Price: le.Price, Currency: le.Currency})
			}
		}
	}

	// Past sales: some listings bought by other parties, so volume and history are real.
	sales, sold := min(len(listed)/4, 60), 0
	rng.Shuffle(len(listed), func(i, j int) { listed[i], listed[j] = listed[j], listed[i] })
	for _, l := range listed[:sales] {
		buyer := parties[rng.IntN(len(parties))]
		if buyer == l.Seller {
			continue
		}
		e, _, _, err := s.buildBuy(ctx, buyer, c.ID, []Listing{l}, nil)
		if err != nil {
			return err
		}
		if err := s.commit(ctx, KindNFTBuy, buyer, func(tx *Tx, u *Update) error {
			_, err := applyBuy(ctx, tx, u, e)
			return err
		}); err != nil {
			return err
		}
		sold++
	}
	sum.Sales += sold
	sum.Listings += len(listed) - sold
	return nil
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
