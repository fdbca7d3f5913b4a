package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"marketd/store"
	"marketd/store/nftmeta"
	"marketd/store/storetest"
)

// nftWorld is a property run of the NFT market: traders, two collections (one per currency)
// and what the test knows was committed.
type nftWorld struct {
	t       *testing.T
	s       *store.Store
	raw     *sql.DB
	clock   *storetest.Clock
	creator *storetest.Party
	traders []*storetest.Party
	cols    []*store.Collection
	price   map[string]decimal.Decimal // each collection's mint price
	royalty map[string]int64
	op      string

	mu        sync.Mutex
	delta     map[string]map[store.Instrument]decimal.Decimal // what each party gained or lost
	volume    map[string]decimal.Decimal                      // per collection
	sold      map[string]int                                  // listing cid: committed purchases
	purchases int
	accepted  int             // NFTs sold into offers
	burned    map[string]bool // nft ids
	stats     map[string]int
}

const nftTraderFunds = "1000"

// worldTraits are the trait types and values of the world's NFTs: every NFT has a Hat and
// Eyes, one in five an Aura.
var worldTraits = map[string][]string{"Hat": {"Cap", "Crown", "Beanie", "Halo"}, "Eyes": {"Bored", "Laser", "Sleepy"}, "Aura": {"Glow"}}

func worldItems(slug string, n int) []store.ItemSpec {
	items := make([]store.ItemSpec, n)
	for k := range items {
		traits := []store.Trait{{Type: "Hat", Value: worldTraits["Hat"][k*7%4]}, {Type: "Eyes", Value: worldTraits["Eyes"][k%3]}}
		if k%5 == 0 {
			traits = append(traits, store.Trait{Type: "Aura", Value: "Glow"})
		}
		items[k] = store.ItemSpec{Fields: nftmeta.Fields{Name: fmt.Sprintf("%s #%d", slug, k+1), Image: "https://img.example/" + slug + ".png"}, Traits: traits}
	}
	return items
}

func newNFTWorld(t *testing.T, b storetest.Backend, traders int) *nftWorld {
	ctx := context.Background()
	s, clock, raw := openLedger(t, b)
	w := &nftWorld{t: t, s: s, raw: raw, clock: clock, price: map[string]decimal.Decimal{}, royalty: map[string]int64{},
		delta: map[string]map[store.Instrument]decimal.Decimal{}, volume: map[string]decimal.Decimal{},
		sold: map[string]int{}, burned: map[string]bool{}, stats: map[string]int{}}
	op, err := s.OperatorParty(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w.op = op
	w.creator = storetest.Onboard(t, s, "creator")
	w.preapprove(w.creator, store.PreapprovalUSDCx)
	for i := range traders {
		p := storetest.Onboard(t, s, fmt.Sprintf("trader%d", i))
		p.Tap(t, s, store.CC, nftTraderFunds)
		p.Tap(t, s, store.USDCx, nftTraderFunds)
		w.preapprove(p, store.PreapprovalNFT)
		w.preapprove(p, store.PreapprovalUSDCx)
		w.traders = append(w.traders, p)
	}
	now := clock.Now()
	for _, c := range []struct {
		slug    string
		cur     store.Instrument
		royalty int
		price   string
	}{{"cc-apes", store.CC, 300, "0.5"}, {"usd-owls", store.USDCx, 700, "1.25"}} {
		col, err := s.CreateCollection(ctx, store.CollectionSpec{Slug: c.slug, Name: c.slug, Creator: w.creator.ID, Currency: c.cur, RoyaltyBps: c.royalty, Supply: 60,
			Items: worldItems(c.slug, 60)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AddPhase(ctx, store.PhaseSpec{Collection: col.ID, Name: "open", Price: c.price, Start: now.Add(-time.Hour), End: now.Add(24 * time.Hour), PerPartyLimit: 60}); err != nil {
			t.Fatal(err)
		}
		w.cols = append(w.cols, col)
		w.price[col.ID] = decimal.RequireFromString(c.price)
		w.royalty[col.ID] = int64(c.royalty)
		w.volume[col.ID] = decimal.Zero
	}
	return w
}

func (w *nftWorld) preapprove(p *storetest.Party, kind store.PreapprovalKind) {
	w.t.Helper()
	prep, err := w.s.PreparePreapproval(context.Background(), p.ID, kind)
	if err != nil {
		w.t.Fatal(err)
	}
	k := store.KindNFTPreapproval
	if kind == store.PreapprovalUSDCx {
		k = store.KindUSDCxPreapproval
	}
	if _, err := p.Execute(w.s, k, prep); err != nil {
		w.t.Fatal(err)
	}
}

func (w *nftWorld) gain(party string, inst store.Instrument, d decimal.Decimal) {
	if w.delta[party] == nil {
		w.delta[party] = map[store.Instrument]decimal.Decimal{}
	}
	w.delta[party][inst] = w.delta[party][inst].Add(d)
}

func (w *nftWorld) count(what string) {
	w.mu.Lock()
	w.stats[what]++
	w.mu.Unlock()
}

// refusedOK tells whether a refusal is one a race between traders may cause.
func refusedOK(err error) bool {
	switch store.ErrorCode(err) {
	case store.CodeStale, store.CodeConflict, store.CodeInsufficientFunds,
		store.CodeCrossesListing, store.CodeCrossesOffer, store.CodeOfferExhausted: // the other side moved first
		return true
	}
	return false
}

// run prepares and executes one write; a refusal a race explains is counted, any other fails.
func (w *nftWorld) run(p *storetest.Party, what, kind string, prepare func() (*store.Prepared, error)) (*store.Prepared, store.Receipt) {
	prep, err := prepare()
	if err != nil {
		if !refusedOK(err) {
			w.t.Errorf("%s prepare by %s: %v", what, p.ID, err)
		}
		w.count(what + " refused at prepare: " + string(store.ErrorCode(err)))
		return nil, nil
	}
	r, err := p.Execute(w.s, kind, prep)
	if err != nil {
		if !refusedOK(err) {
			w.t.Errorf("%s execute by %s: %v", what, p.ID, err)
		}
		w.count(what + " refused at execute: " + string(store.ErrorCode(err)))
		return nil, nil
	}
	w.count(what)
	return prep, r
}

// own lists p's NFTs of a collection: unlisted or listed.
func (w *nftWorld) own(p *storetest.Party, col *store.Collection, listed bool) []store.NFTView {
	page, err := w.s.NFTs(context.Background(), col.ID, store.NFTFilter{Owner: p.ID}, store.SortSerial, store.PageRequest{Limit: store.MaxPageSize})
	if err != nil {
		w.t.Errorf("NFTs: %v", err)
		return nil
	}
	var out []store.NFTView
	for _, n := range page.Items {
		if (n.Listing != nil) == listed {
			out = append(out, n)
		}
	}
	return out
}

// forSale lists the collection's listings others than p's.
func (w *nftWorld) forSale(p *storetest.Party, col *store.Collection) []store.NFTView {
	page, err := w.s.NFTs(context.Background(), col.ID, store.NFTFilter{Listed: true}, store.SortPriceAsc, store.PageRequest{Limit: store.MaxPageSize})
	if err != nil {
		w.t.Errorf("NFTs: %v", err)
		return nil
	}
	var out []store.NFTView
	for _, n := range page.Items {
		if n.Owner != p.ID {
			out = append(out, n)
		}
	}
	return out
}

func pick[T any](rng *rand.Rand, xs []T) (T, bool) {
	var zero T
	if len(xs) == 0 {
		return zero, false
	}
	return xs[rng.IntN(len(xs))], true
}

func (w *nftWorld) step(rng *rand.Rand, i int) {
	ctx := context.Background()
	p := w.traders[i]
	col := w.cols[rng.IntN(len(w.cols))]
	switch rng.IntN(15) {
	case 0, 1: // mint
		q := 1 + rng.IntN(2)
		if _, r := w.run(p, "mint", store.KindNFTMint, func() (*store.Prepared, error) { return w.s.PrepareMint(ctx, p.ID, col.ID, q) }); r != nil {
			paid := w.price[col.ID].Mul(decimal.NewFromInt(int64(q)))
			w.mu.Lock()
			w.gain(p.ID, col.Currency, paid.Neg())
			w.gain(w.creator.ID, col.Currency, paid)
			w.mu.Unlock()
		}
	case 2, 3: // list one or two
		mine := w.own(p, col, false)
		rng.Shuffle(len(mine), func(a, b int) { mine[a], mine[b] = mine[b], mine[a] })
		mine = mine[:min(len(mine), 1+rng.IntN(2))]
		if len(mine) == 0 {
			return
		}
		terms := make([]store.ListingTerms, len(mine))
		for k, n := range mine {
			terms[k] = store.ListingTerms{ContractID: n.ContractID, Price: unitsString(randomUnits(rng, 30*pow10(decimalsOf(col.Currency)), col.Currency), col.Currency)}
			if rng.IntN(2) == 0 { // expires while the run goes on
				until := w.clock.Now().Add(time.Duration(5+rng.IntN(55)) * time.Second)
				terms[k].ExpiresAt = &until
			}
		}
		w.run(p, "list", store.KindNFTList, func() (*store.Prepared, error) { return w.s.PrepareList(ctx, p.ID, terms) })
	case 4: // cancel
		if n, ok := pick(rng, w.own(p, col, true)); ok {
			w.run(p, "cancel", store.KindNFTCancel, func() (*store.Prepared, error) { return w.s.PrepareCancel(ctx, p.ID, []string{n.Listing.CID}) })
		}
	case 5, 6: // buy
		if n, ok := pick(rng, w.forSale(p, col)); ok {
			prep, r := w.run(p, "buy", store.KindNFTBuy, func() (*store.Prepared, error) { return w.s.PrepareBuy(ctx, p.ID, n.Listing.CID) })
			w.settled(p, col, prep, r)
		}
	case 7: // sweep, named or the cheapest
		var req store.SweepRequest
		if rng.IntN(2) == 0 {
			req = store.SweepRequest{CollectionID: col.ID, Count: 1 + rng.IntN(2), MaxTotal: "100"}
		} else {
			sale := w.forSale(p, col)
			rng.Shuffle(len(sale), func(a, b int) { sale[a], sale[b] = sale[b], sale[a] })
			sale = sale[:min(len(sale), 1+rng.IntN(3))]
			if len(sale) == 0 {
				return
			}
			req = store.SweepRequest{CollectionID: col.Slug, MaxTotal: "100"}
			for _, n := range sale {
				req.CIDs = append(req.CIDs, n.Listing.CID)
			}
		}
		prep, r := w.run(p, "sweep", store.KindNFTSweep, func() (*store.Prepared, error) { return w.s.PrepareSweep(ctx, p.ID, req) })
		w.settled(p, col, prep, r)
	case 8: // transfer, listed or not
		if n, ok := pick(rng, append(w.own(p, col, false), w.own(p, col, true)...)); ok {
			j := rng.IntN(len(w.traders) - 1)
			if j >= i {
				j++
			}
			w.run(p, "transfer", store.KindNFTTransfer, func() (*store.Prepared, error) {
				return w.s.PrepareTransfer(ctx, p.ID, n.ContractID, w.traders[j].ID)
			})
		}
	case 10, 11: // an offer of any kind, below the floor or not (a crossing one is refused)
		terms := store.OfferTerms{CollectionID: col.ID, ExpiresAt: w.clock.Now().Add(time.Duration(10+rng.IntN(50)) * time.Second).Unix(),
			Price: unitsString(randomUnits(rng, 3*pow10(decimalsOf(col.Currency)), col.Currency), col.Currency)}
		q := 1 + rng.IntN(3)
		page, err := w.s.NFTs(ctx, col.ID, store.NFTFilter{}, store.SortSerial, store.PageRequest{Limit: store.MaxPageSize})
		if err != nil {
			w.t.Errorf("NFTs: %v", err)
			return
		}
		n, ok := pick(rng, page.Items)
		if !ok {
			return // nothing minted yet
		}
		switch rng.IntN(3) {
		case 0:
			terms.Serial = &n.Serial
		case 1:
			terms.Quantity = &q
		default:
			terms.Quantity = &q
			terms.Traits = []store.TraitMatch{{Type: "Hat", Values: []string{worldTraits["Hat"][rng.IntN(4)]}}}
		}
		w.run(p, "offer", store.KindNFTOffer, func() (*store.Prepared, error) {
			prep, err := w.s.PrepareOffer(ctx, p.ID, terms)
			if store.ErrorCode(err) == store.CodeNotFound && terms.Serial != nil { // burned since it was read: a race
				return nil, store.Errorf(store.CodeStale, "%s", store.ErrorMessage(err))
			}
			return prep, err
		})
	case 12, 13: // accept an offer one of its NFTs can be accepted into
		mine := append(w.own(p, col, false), w.own(p, col, true)...)
		n, ok := pick(rng, mine)
		if !ok {
			return
		}
		offers, err := w.s.NFTOffers(ctx, n.ContractID, store.PageRequest{})
		if err != nil || len(offers.Items) == 0 {
			return
		}
		o := offers.Items[rng.IntN(len(offers.Items))]
		prep, r := w.run(p, "accept", store.KindNFTOfferAccept, func() (*store.Prepared, error) {
			return w.s.PrepareOfferAccept(ctx, p.ID, store.OfferAcceptance{CID: o.OfferID, ContractIDs: []string{n.ContractID}})
		})
		w.acceptedInto(p, col, prep, r)
	case 14: // cancel one of its offers
		mine, err := w.s.OffersByMaker(ctx, p.ID, store.PageRequest{})
		if err != nil {
			w.t.Errorf("offers: %v", err)
			return
		}
		if o, ok := pick(rng, mine.Items); ok {
			w.run(p, "offer cancel", store.KindNFTOfferCancel, func() (*store.Prepared, error) { return w.s.PrepareOfferCancel(ctx, p.ID, []string{o.OfferID}) })
		}
	case 9: // burn, listed or not
		if n, ok := pick(rng, append(w.own(p, col, false), w.own(p, col, true)...)); ok {
			if _, r := w.run(p, "burn", store.KindNFTBurn, func() (*store.Prepared, error) { return w.s.PrepareBurn(ctx, p.ID, n.ContractID) }); r != nil {
				w.mu.Lock()
				w.burned[fmt.Sprintf("%s#%d", col.ID, n.Serial)] = true
				w.mu.Unlock()
			}
		}
	}
}

// acceptedInto records a committed accept: the maker pays the price from what its offer
// locked, the shares go as a sale's, and a listing it closed counts as sold.
func (w *nftWorld) acceptedInto(seller *storetest.Party, col *store.Collection, prep *store.Prepared, r store.Receipt) {
	if r == nil {
		return
	}
	d, err := store.DecodePrepared(prep.Transaction)
	if err != nil {
		w.t.Errorf("accept: %v", err)
		return
	}
	e := d.Effects.(*store.OfferAcceptEffects)
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, sale := range e.Sales {
		st := sale.Settlement
		w.gain(e.Maker, col.Currency, st.Price.Decimal().Neg())
		w.gain(seller.ID, col.Currency, st.Seller.Amount.Decimal())
		w.gain(w.op, col.Currency, st.Fee.Amount.Decimal())
		w.gain(w.creator.ID, col.Currency, st.Royalty.Amount.Decimal())
		w.volume[col.ID] = w.volume[col.ID].Add(st.Price.Decimal())
		if sale.Listing != "" {
			w.sold[sale.Listing]++
		}
		w.accepted++
	}
}

// settled records a committed buy or sweep: each purchase's shares, checked against the
// settlement rule, and the listings it consumed.
func (w *nftWorld) settled(buyer *storetest.Party, col *store.Collection, prep *store.Prepared, r store.Receipt) {
	if r == nil {
		return
	}
	var env struct {
		Effects struct {
			Purchases []struct {
				Listing string `json:"listing"`
			} `json:"purchases"`
		} `json:"effects"`
	}
	var res struct {
		Settlement store.Settlement   `json:"settlement"`
		Items      []store.Settlement `json:"items"`
	}
	if err := json.Unmarshal(prep.Transaction, &env); err != nil {
		w.t.Errorf("prepared transaction: %v", err)
		return
	}
	if err := json.Unmarshal(r, &res); err != nil {
		w.t.Errorf("receipt %s: %v", r, err)
		return
	}
	items := res.Items
	if items == nil {
		items = []store.Settlement{res.Settlement}
	}
	if len(items) != len(env.Effects.Purchases) {
		w.t.Errorf("receipt %s settles %d items for %d purchases", r, len(items), len(env.Effects.Purchases))
		return
	}
	decimals := col.Currency.Decimals()
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, it := range items {
		price := it.Price.Decimal()
		fee := price.Mul(decimal.New(int64(w.s.Config().MarketFeeBps), -4)).Truncate(decimals)
		royalty := price.Mul(decimal.New(w.royalty[col.ID], -4)).Truncate(decimals)
		if !it.Fee.Amount.Decimal().Equal(fee) || !it.Royalty.Amount.Decimal().Equal(royalty) || !it.Seller.Amount.Decimal().Equal(price.Sub(fee).Sub(royalty)) ||
			*it.Fee.Party != w.op || *it.Royalty.Party != w.creator.ID {
			w.t.Errorf("settlement %+v of %s: want fee %s and royalty %s", it, price, fee, royalty)
		}
		w.gain(buyer.ID, col.Currency, price.Neg())
		w.gain(*it.Seller.Party, col.Currency, it.Seller.Amount.Decimal())
		w.gain(w.op, col.Currency, fee)
		w.gain(w.creator.ID, col.Currency, royalty)
		w.volume[col.ID] = w.volume[col.ID].Add(price)
		w.sold[env.Effects.Purchases[k].Listing]++
		w.purchases++
	}
}

func TestNFTMarket_ConservesValueAndKeepsOneLiveContractPerNFTUnderConcurrency(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		seed := propertySeed(t)
		const traders, steps = 5, 45 // as many buys as before the offers joined the mix
		w := newNFTWorld(t, b, traders)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range traders {
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			wg.Go(func() {
				<-start
				for range steps {
					w.step(rng, i)
				}
			})
		}
		// Time passes while they trade, and the sweeper archives listings as they expire.
		done := make(chan struct{})
		var sweeper sync.WaitGroup
		sweeper.Go(func() {
			for {
				select {
				case <-done:
					return
				case <-time.After(5 * time.Millisecond):
				}
				w.clock.Advance(time.Second)
				if n, err := w.s.ExpireListings(context.Background(), 100); err != nil {
					t.Errorf("sweeper: %v", err)
				} else {
					for range n {
						w.count("expired by the sweeper")
					}
				}
				if n, err := w.s.ExpireOffers(context.Background(), 100); err != nil {
					t.Errorf("sweeper: %v", err)
				} else {
					for range n {
						w.count("offer released by the sweeper")
					}
				}
			}
		})
		close(start)
		wg.Wait()
		close(done)
		sweeper.Wait()
		// Expired listings are unlisted for every read already; archive the rest so the stored
		// statistics can be compared with the ledger's active listings.
		w.clock.Advance(5 * time.Minute)
		for {
			n, err := w.s.ExpireListings(context.Background(), 100)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
		}
		t.Logf("%v", w.stats)
		for _, what := range []string{"mint", "list", "buy", "offer", "accept"} {
			if w.stats[what] == 0 {
				t.Errorf("no %s committed: the run did not exercise the market (%v)", what, w.stats)
			}
		}
		w.verify()
		storetest.CheckLog(t, w.s) // mints, listings, buys, sweeps and the service's expiries
	})
}

// verify checks the ledger and the read models against each other and against what the
// test recorded.
func (w *nftWorld) verify() {
	t, ctx := w.t, context.Background()
	// Every instrument conserved: the supply is what was tapped, and each party holds what
	// it started with plus what the committed mints and sales moved.
	supply, err := w.s.Supply(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// What open offers lock is not spendable, and still part of the supply.
	locked := map[string]map[store.Instrument]decimal.Decimal{}
	rows, err := w.raw.Query("SELECT maker, instrument, amount FROM nft_offers WHERE consumed_update IS NULL")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var maker, inst, amount string
		if err := rows.Scan(&maker, &inst, &amount); err != nil {
			t.Fatal(err)
		}
		if locked[maker] == nil {
			locked[maker] = map[store.Instrument]decimal.Decimal{}
		}
		a := decimal.RequireFromString(amount)
		locked[maker][store.Instrument(inst)] = locked[maker][store.Instrument(inst)].Add(a)
		supply[store.Instrument(inst)] = supply[store.Instrument(inst)].Add(store.MustAmount(a.String()))
	}
	rows.Close()
	tapped := decimal.RequireFromString(nftTraderFunds).Mul(decimal.NewFromInt(int64(len(w.traders))))
	for _, inst := range store.Instruments {
		if !supply[inst].Decimal().Equal(tapped) {
			t.Errorf("%s supply %s (holdings and open offers), tapped %s", inst, supply[inst], tapped)
		}
	}
	parties := []string{w.creator.ID, w.op}
	for _, p := range w.traders {
		parties = append(parties, p.ID)
	}
	for _, p := range parties {
		bs, err := w.s.Balances(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, bal := range bs {
			want := w.delta[p][bal.Instrument]
			if p != w.creator.ID && p != w.op {
				want = want.Add(decimal.RequireFromString(nftTraderFunds))
			}
			if held := bal.Amount.Decimal().Add(bal.Locked.Decimal()); !held.Equal(want) {
				t.Errorf("%s holds %s %s (%s locked), the committed writes say %s", p, held, bal.Instrument, bal.Locked, want)
			}
			if !bal.Locked.Decimal().Equal(locked[p][bal.Instrument]) {
				t.Errorf("%s has %s %s locked, its open offers hold %s", p, bal.Locked, bal.Instrument, locked[p][bal.Instrument])
			}
		}
	}

	// One live contract per NFT, none for a burned one.
	type contract struct{ cid, owner, col string }
	live := map[string]contract{}
	minted := map[string]string{} // nft id: collection
	rows, err = w.raw.Query("SELECT nft_id, collection_id, cid, owner, consumed_update IS NULL FROM nfts")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, col, cid, owner string
		var active bool
		if err := rows.Scan(&id, &col, &cid, &owner, &active); err != nil {
			t.Fatal(err)
		}
		minted[id] = col
		if active {
			if prev, dup := live[id]; dup {
				t.Errorf("NFT %s has two live contracts, %s and %s", id, prev.cid, cid)
			}
			live[id] = contract{cid, owner, col}
		}
	}
	rows.Close()
	for id := range minted {
		if _, ok := live[id]; ok == w.burned[id] {
			t.Errorf("NFT %s: live %v, burned by the test %v", id, ok, w.burned[id])
		}
	}

	// Active listings lock a live NFT of their seller; no listing was sold twice.
	type listing struct {
		cid, seller, nftCID, nftID, col string
		price                           decimal.Decimal
	}
	listings := map[string]listing{} // by nft id
	rows, err = w.raw.Query("SELECT cid, seller, nft_cid, nft_id, collection_id, price FROM listings WHERE consumed_update IS NULL")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var l listing
		var price string
		if err := rows.Scan(&l.cid, &l.seller, &l.nftCID, &l.nftID, &l.col, &price); err != nil {
			t.Fatal(err)
		}
		l.price = decimal.RequireFromString(price)
		if c, ok := live[l.nftID]; !ok || c.cid != l.nftCID || c.owner != l.seller {
			t.Errorf("active listing %s sells %s of %s, whose live contract is %+v", l.cid, l.nftCID, l.seller, c)
		}
		if w.sold[l.cid] > 0 {
			t.Errorf("listing %s was sold and is still active", l.cid)
		}
		listings[l.nftID] = l
	}
	rows.Close()
	for cid, n := range w.sold {
		if n > 1 {
			t.Errorf("listing %s was sold %d times", cid, n)
		}
	}
	var soldEvents int
	if err := w.raw.QueryRow("SELECT COUNT(*) FROM nft_activity WHERE kind = 'sold'").Scan(&soldEvents); err != nil {
		t.Fatal(err)
	}
	if soldEvents != w.purchases {
		t.Errorf("%d sold events, %d committed purchases", soldEvents, w.purchases)
	}
	if err := w.raw.QueryRow("SELECT COUNT(*) FROM nft_activity WHERE kind = 'offer-accepted'").Scan(&soldEvents); err != nil {
		t.Fatal(err)
	}
	if soldEvents != w.accepted {
		t.Errorf("%d offer-accepted events, %d NFTs sold into offers", soldEvents, w.accepted)
	}

	// The NFT read model is the ledger's contracts.
	items := map[string]bool{}
	rows, err = w.raw.Query("SELECT nft_id, owner, contract_id, listing_cid, list_price FROM nft_items")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, owner, contractID string
		var listingCID, listPrice sql.NullString
		if err := rows.Scan(&id, &owner, &contractID, &listingCID, &listPrice); err != nil {
			t.Fatal(err)
		}
		items[id] = true
		c := live[id]
		if c.cid != contractID || c.owner != owner {
			t.Errorf("item %s: owner %s contract %s; the ledger's live contract %+v", id, owner, contractID, c)
		}
		l, listed := listings[id]
		if listed != listingCID.Valid || (listed && (l.cid != listingCID.String || !l.price.Equal(decimal.RequireFromString(listPrice.String)))) {
			t.Errorf("item %s: listing %v at %v; the ledger's %+v", id, listingCID, listPrice, l)
		}
	}
	rows.Close()
	if len(items) != len(live) {
		t.Errorf("%d items for %d live NFTs", len(items), len(live))
	}

	// Collection statistics are a recomputation from the contracts.
	for _, col := range w.cols {
		c, err := w.s.CollectionByID(ctx, col.ID)
		if err != nil {
			t.Fatal(err)
		}
		var mintedN, liveN, listed int
		owners := map[string]int{}
		var floor *decimal.Decimal
		for id, cid := range minted {
			if cid == col.ID {
				mintedN++
			}
			if lc, ok := live[id]; ok && lc.col == col.ID {
				liveN++
				owners[lc.owner]++
			}
			if l, ok := listings[id]; ok && l.col == col.ID {
				listed++
				if floor == nil || l.price.LessThan(*floor) {
					p := l.price
					floor = &p
				}
			}
		}
		floorOK := (floor == nil) == (c.FloorPrice == nil) && (floor == nil || floor.Equal(c.FloorPrice.Decimal()))
		if c.Minted != mintedN || c.Minted-c.Burned != liveN || c.ListedCount != listed || c.Owners != len(owners) || !floorOK || !c.Volume.Decimal().Equal(w.volume[col.ID]) {
			t.Errorf("%s: minted %d burned %d listed %d owners %d floor %v volume %s; recomputed minted %d live %d listed %d owners %d floor %v volume %s",
				col.Slug, c.Minted, c.Burned, c.ListedCount, c.Owners, c.FloorPrice, c.Volume, mintedN, liveN, listed, len(owners), floor, w.volume[col.ID])
		}
		var phaseMinted int
		for _, ph := range c.Phases {
			phaseMinted += ph.Minted
		}
		if phaseMinted != c.Minted {
			t.Errorf("%s: phases minted %d, the collection %d", col.Slug, phaseMinted, c.Minted)
		}
		rows, err := w.raw.Query("SELECT owner, nfts FROM collection_owners WHERE collection_id = '" + col.ID + "'") // an id is col_ and hex
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for rows.Next() {
			var owner string
			var n int
			if err := rows.Scan(&owner, &n); err != nil {
				t.Fatal(err)
			}
			got[owner] = n
		}
		rows.Close()
		if fmt.Sprint(got) != fmt.Sprint(owners) {
			t.Errorf("%s: collection_owners %v, live contracts %v", col.Slug, got, owners)
		}
	}
}
