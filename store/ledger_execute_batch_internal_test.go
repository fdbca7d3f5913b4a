package store

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"
)

// mintDrop is a collection whose paid mint phase is open, and its minters.
type mintDrop struct {
	s       *Store
	col     *Collection
	creator *keyedParty
}

// openMintDrop creates a collection of supply items with a phase that charges 2 CC a mint,
// one per wallet.
func openMintDrop(t *testing.T, s *Store, clock *ledgerClock, supply int) *mintDrop {
	t.Helper()
	ctx := context.Background()
	creator := onboardKeyed(t, s, "creator")
	col, err := s.CreateCollection(ctx, CollectionSpec{Slug: "drop", Name: "Drop", Creator: creator.id, Currency: CC, Supply: supply})
	if err != nil {
		t.Fatal(err)
	}
	now := clock.Now()
	if _, err := s.AddPhase(ctx, PhaseSpec{Collection: col.ID, Name: "public", Price: "2", Start: now.Add(-time.Hour), End: now.Add(time.Hour), PerPartyLimit: 1}); err != nil {
		t.Fatal(err)
	}
	return &mintDrop{s: s, col: col, creator: creator}
}

// minter onboards a wallet holding two 1 CC holdings, which a mint's price spends both of.
func (d *mintDrop) minter(t *testing.T, hint string) (*keyedParty, [2]*Holding) {
	t.Helper()
	p := onboardKeyed(t, d.s, hint)
	return p, [2]*Holding{mint(t, d.s, p.id, CC, "1"), mint(t, d.s, p.id, CC, "1")}
}

func (d *mintDrop) prepare(t *testing.T, p *keyedParty) *executeRequest {
	t.Helper()
	ctx := context.Background()
	prep, err := d.s.PrepareMint(ctx, p.id, d.col.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	row := new(PreparedTx)
	if err := d.s.db.NewSelect().Model(row).Where("hash = ?", prep.Hash).Scan(ctx); err != nil {
		t.Fatal(err)
	}
	x := Execution{Kinds: []string{KindNFTMint}, Hash: prep.Hash, Signature: p.Sign(prep.Hash), Caller: p.id}
	return &executeRequest{x: x, p: row, done: make(chan executeResult, 1)}
}

// apply applies reqs as one batch of the collection and returns their answers.
func (d *mintDrop) apply(t *testing.T, reqs ...*executeRequest) []executeResult {
	t.Helper()
	key, err := reqs[0].p.batchKey()
	if err != nil {
		t.Fatal(err)
	}
	if key != (batchKey{row: "collection/" + d.col.ID, way: mintsInOnePass}) {
		t.Fatalf("a mint's batch key is %+v, want the collection's", key)
	}
	d.s.applyBatch(key, reqs, func() {})
	out := make([]executeResult, len(reqs))
	for i, r := range reqs {
		out[i] = <-r.done
	}
	return out
}

func balanceOf(t *testing.T, s *Store, party string) string {
	t.Helper()
	bs, err := s.Balances(context.Background(), party)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		if b.Instrument == CC {
			return b.Amount.String()
		}
	}
	return "0"
}

func updateIDOf(t *testing.T, r Receipt) string {
	t.Helper()
	var head struct {
		UpdateID string `json:"updateId"`
	}
	if err := json.Unmarshal(r, &head); err != nil || head.UpdateID == "" {
		t.Fatalf("receipt %s: %v", r, err)
	}
	return head.UpdateID
}

// One batch of mints of a collection: b's payment spends a holding b spent after the
// prepare, so the ledger refuses b's mint after it archived b's other holding. The attempt is
// rolled back and the batch applied again without b: a and c mint in the same database
// transaction, b is answered alone, stale, with both its CC left; a replay of a's mint
// answers a's receipt; a second mint of one wallet in a batch is held to the phase's limit by
// the count the first left; and the log's offsets follow the order the batches committed in.
func TestExecuteBatch_ARefusedMintIsAnsweredAloneAndTheOthersCommit(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *Store, clock *ledgerClock) {
		ctx := context.Background()
		d := openMintDrop(t, s, clock, 10)
		a, _ := d.minter(t, "a")
		b, bh := d.minter(t, "b")
		c, _ := d.minter(t, "c")
		ra, rb, rc := d.prepare(t, a), d.prepare(t, b), d.prepare(t, c)
		// b moves one of the holdings its mint pays with to a new holding of its own.
		if err := commitAs(s, b.id, &Transaction{Consume: spend(bh[0]), Create: []Contract{&Holding{Owner: b.id, Instrument: CC, Amount: MustAmount("1")}}}); err != nil {
			t.Fatal(err)
		}
		supply, err := s.Supply(ctx)
		if err != nil {
			t.Fatal(err)
		}

		first := d.apply(t, ra, rb, rc)
		if code := ErrorCode(first[1].err); code != CodeStale {
			t.Fatalf("b's mint: %v, want stale", first[1].err)
		}
		for _, i := range []int{0, 2} {
			if first[i].err != nil {
				t.Fatalf("mint %d: %v", i, first[i].err)
			}
		}
		for p, want := range map[*keyedParty]string{a: "0", b: "2", c: "0", d.creator: "4"} {
			if got := balanceOf(t, s, p.id); got != want {
				t.Fatalf("%s holds %s CC, want %s", p.id, got, want)
			}
		}
		if !isActive(t, s, bh[1]) {
			t.Fatal("b's holding archived by its refused mint stayed archived")
		}
		after, err := s.Supply(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !after[CC].Equal(supply[CC]) {
			t.Fatalf("CC supply %s after the batch, %s before", after[CC], supply[CC])
		}
		col := new(Collection)
		if err := s.db.NewSelect().Model(col).Where("collection_id = ?", d.col.ID).Scan(ctx); err != nil {
			t.Fatal(err)
		}
		if col.Minted != 2 {
			t.Fatalf("collection minted %d, want 2", col.Minted)
		}

		// A replay of a's execute, which was in the batch, answers the batch's receipt.
		replay, err := s.Execute(ctx, ra.x)
		if err != nil || string(replay) != string(first[0].receipt) {
			t.Fatalf("replay of a's mint answered %s (%v), the batch %s", replay, err, first[0].receipt)
		}
		if _, err := s.Execute(ctx, rb.x); ErrorCode(err) != CodeStale {
			t.Fatalf("b's mint again: %v, want stale", err)
		}

		// e prepares two mints before either applies; the phase allows one a wallet, so the
		// second, in the same batch, is answered alone, stale, by the count the first left.
		e, _ := d.minter(t, "e")
		f, _ := d.minter(t, "f")
		second := d.apply(t, d.prepare(t, e), d.prepare(t, e), d.prepare(t, f))
		if ErrorCode(second[1].err) != CodeStale {
			t.Fatalf("e's second mint: %v, want stale", second[1].err)
		}
		if got := balanceOf(t, s, e.id); got != "0" {
			t.Fatalf("e holds %s CC after one mint, want 0", got)
		}
		var phase MintPhase
		if err := s.db.NewSelect().Model(&phase).Where("collection_id = ?", d.col.ID).Scan(ctx); err != nil || phase.Minted != 4 {
			t.Fatalf("the phase counts %d minted (%v), want 4", phase.Minted, err)
		}
		var ids []string
		for _, r := range append(first[0:1], first[2], second[0], second[2]) {
			if r.err != nil {
				t.Fatal(r.err)
			}
			ids = append(ids, updateIDOf(t, r.receipt))
		}
		var us []Update
		if err := s.db.NewSelect().Model(&us).Where("update_id IN (?)", bun.In(ids)).Order("ledger_offset").Scan(ctx); err != nil {
			t.Fatal(err)
		}
		if len(us) != len(ids) {
			t.Fatalf("%d of the %d updates in the log", len(us), len(ids))
		}
		for i, u := range us {
			if u.UpdateID != ids[i] || u.Offset == 0 {
				t.Fatalf("log in offset order: %+v, want the updates %v in the order they applied", us, ids)
			}
		}
	})
}

// Concurrent executes of a drop: sixteen wallets mint at once, one of them with a payment
// spent since it prepared, while a write holds the collection (on SQLite the writer) for
// longer than the admission wait. The first mint waits for it, not refused, the others queue
// and apply together as one batch, in one database transaction: fifteen mint, each its own
// serial, the one is stale, and the CC supply is what it was.
func TestExecute_ConcurrentMintsOfOneCollectionCommitAllButTheRefusedOne(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *Store, clock *ledgerClock) {
		ctx := context.Background()
		d := openMintDrop(t, s, clock, 20)
		const n = 16
		reqs := make([]*executeRequest, n)
		for i := range reqs {
			p, hs := d.minter(t, "m")
			reqs[i] = d.prepare(t, p)
			if i == n/2 {
				if err := commitAs(s, p.id, &Transaction{Consume: spend(hs[0]), Create: []Contract{&Holding{Owner: p.id, Instrument: CC, Amount: MustAmount("1")}}}); err != nil {
					t.Fatal(err)
				}
			}
		}
		supply, err := s.Supply(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var commits atomic.Int32
		s.ObserveCommits(func(kind string, _ time.Duration) {
			if kind == KindNFTMint {
				commits.Add(1)
			}
		})
		locked, release := make(chan struct{}), make(chan struct{})
		go s.inTx(ctx, func(tx *Tx) error {
			if _, err := tx.lockCollection(ctx, d.col.ID); err != nil {
				return err
			}
			close(locked)
			<-release
			return nil
		})
		<-locked
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i, r := range reqs {
			wg.Go(func() { _, errs[i] = s.Execute(ctx, r.x) })
		}
		q := s.executeQueue(batchKey{row: "collection/" + d.col.ID, way: mintsInOnePass})
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			q.mu.Lock()
			queued := len(q.waiting)
			q.mu.Unlock()
			if queued == n-1 {
				break
			}
		}
		time.Sleep(300 * time.Millisecond) // past the admission wait: the batch waits on
		close(release)
		wg.Wait()
		if got := commits.Load(); got < 1 || got > 2 {
			t.Fatalf("%d database transactions committed the mints, want the first alone and one batch", got)
		}
		for i, err := range errs {
			if i == n/2 {
				if ErrorCode(err) != CodeStale {
					t.Fatalf("the mint with a spent payment: %v, want stale", err)
				}
			} else if err != nil {
				t.Fatalf("mint %d: %v", i, err)
			}
		}
		col := new(Collection)
		if err := s.db.NewSelect().Model(col).Where("collection_id = ?", d.col.ID).Scan(ctx); err != nil {
			t.Fatal(err)
		}
		nfts, err := s.db.NewSelect().Model((*NFT)(nil)).Where("collection_id = ?", d.col.ID).Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if col.Minted != n-1 || nfts != n-1 {
			t.Fatalf("collection minted %d with %d NFTs, want %d", col.Minted, nfts, n-1)
		}
		if got := balanceOf(t, s, d.creator.id); got != "30" {
			t.Fatalf("the creator holds %s CC, want 30", got)
		}
		after, err := s.Supply(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !after[CC].Equal(supply[CC]) {
			t.Fatalf("CC supply %s after the drop, %s before", after[CC], supply[CC])
		}
	})
}

// One batch of buys of a collection, applied each under a savepoint: b's payment spends a
// holding b spent after it prepared, so the ledger refuses b's buy after it archived b's
// other holding and the listing. Those writes are rolled back to b's savepoint: a and c buy
// in the same database transaction, b is answered alone, stale, with its CC left and the
// listing open, and the CC supply is what it was.
func TestExecuteBatch_ARefusedBuyIsRolledBackToItsSavepointAndTheOthersCommit(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *Store, clock *ledgerClock) {
		ctx := context.Background()
		d := openMintDrop(t, s, clock, 10)
		buy := func(buyer *keyedParty, listing string) *executeRequest {
			t.Helper()
			prep, err := s.PrepareBuy(ctx, buyer.id, listing)
			if err != nil {
				t.Fatal(err)
			}
			x := Execution{Kinds: []string{KindNFTBuy}, Hash: prep.Hash, Signature: buyer.Sign(prep.Hash), Caller: buyer.id}
			row := new(PreparedTx)
			if err := s.db.NewSelect().Model(row).Where("hash = ?", prep.Hash).Scan(ctx); err != nil {
				t.Fatal(err)
			}
			return &executeRequest{x: x, p: row, done: make(chan executeResult, 1)}
		}
		var reqs []*executeRequest
		var sellers []*keyedParty
		var listings []string
		for range 3 {
			seller, _ := d.minter(t, "seller")
			r := d.apply(t, d.prepare(t, seller))
			var minted MintResult
			if err := json.Unmarshal(r[0].receipt, &minted); err != nil {
				t.Fatalf("mint: %s %v", r[0].receipt, r[0].err)
			}
			prep, err := s.PrepareList(ctx, seller.id, []ListingTerms{{ContractID: minted.ContractIDs[0], Price: "2"}})
			if err != nil {
				t.Fatal(err)
			}
			var listed ListResult
			if err := json.Unmarshal(seller.execute(t, s, KindNFTList, prep), &listed); err != nil {
				t.Fatal(err)
			}
			sellers, listings = append(sellers, seller), append(listings, listed.CIDs[0])
		}
		var buyers []*keyedParty
		var bh [2]*Holding
		for i, hint := range []string{"a", "b", "c"} {
			p, hs := d.minter(t, hint)
			buyers = append(buyers, p)
			reqs = append(reqs, buy(p, listings[i]))
			if hint == "b" {
				bh = hs
				if err := commitAs(s, p.id, &Transaction{Consume: spend(hs[0]), Create: []Contract{&Holding{Owner: p.id, Instrument: CC, Amount: MustAmount("1")}}}); err != nil {
					t.Fatal(err)
				}
			}
		}
		supply, err := s.Supply(ctx)
		if err != nil {
			t.Fatal(err)
		}
		key, err := reqs[0].p.batchKey()
		if err != nil || key != (batchKey{row: "collection/" + d.col.ID}) {
			t.Fatalf("a buy's batch key is %+v (%v), want the collection's", key, err)
		}
		s.applyBatch(key, reqs, func() {})
		results := make([]executeResult, len(reqs))
		for i, r := range reqs {
			results[i] = <-r.done
		}
		if ErrorCode(results[1].err) != CodeStale {
			t.Fatalf("b's buy: %v, want stale", results[1].err)
		}
		for _, i := range []int{0, 2} {
			if results[i].err != nil {
				t.Fatalf("buy %d: %v", i, results[i].err)
			}
		}
		// Each seller paid 2 for its mint; a sale pays it 2 less the 2.5% fee.
		for p, want := range map[*keyedParty]string{buyers[0]: "0", buyers[1]: "2", buyers[2]: "0", sellers[0]: "1.95", sellers[1]: "0", sellers[2]: "1.95"} {
			if got := balanceOf(t, s, p.id); got != want {
				t.Fatalf("%s holds %s CC, want %s", p.id, got, want)
			}
		}
		if !isActive(t, s, bh[1]) {
			t.Fatal("b's holding archived by its refused buy stayed archived")
		}
		open, err := s.db.NewSelect().Model((*Listing)(nil)).Where("cid = ?", listings[1]).Where("consumed_update IS NULL").Count(ctx)
		if err != nil || open != 1 {
			t.Fatalf("b's listing: %d open (%v), want it open", open, err)
		}
		after, err := s.Supply(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !after[CC].Equal(supply[CC]) {
			t.Fatalf("CC supply %s after the batch, %s before", after[CC], supply[CC])
		}
		if replay, err := s.Execute(ctx, reqs[2].x); err != nil || string(replay) != string(results[2].receipt) {
			t.Fatalf("replay of c's buy answered %s (%v), the batch %s", replay, err, results[2].receipt)
		}
	})
}

// A queue of one row's executes admits up to maxQueued: one more is refused at once, 503
// unavailable as a busy database, and nothing of it applies.
func TestExecute_AnExecuteFindingItsRowsQueueFullIsRefusedAsBusy(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *Store, clock *ledgerClock) {
		d := openMintDrop(t, s, clock, 10)
		p, _ := d.minter(t, "m")
		r := d.prepare(t, p)
		q := s.executeQueue(batchKey{row: "collection/" + d.col.ID, way: mintsInOnePass})
		q.mu.Lock()
		q.running = true // no batch runs: the queue stays as the test fills it
		q.waiting = make([]*executeRequest, maxQueued-1)
		q.mu.Unlock()
		sheds := s.DatabaseSheds()
		replies := make(chan error, 1)
		go func() { _, err := s.Execute(context.Background(), r.x); replies <- err }()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			q.mu.Lock()
			n := len(q.waiting)
			q.mu.Unlock()
			if n == maxQueued || time.Now().After(deadline) {
				break
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := s.Execute(ctx, r.x); !Overloaded(err) || ErrorCode(err) != CodeUnavailable {
			t.Fatalf("an execute past a full queue: %v, want unavailable, the database busy", err)
		}
		if s.DatabaseSheds() != sheds+1 {
			t.Fatalf("sheds %d, want %d", s.DatabaseSheds(), sheds+1)
		}
		q.mu.Lock()
		q.waiting = q.waiting[maxQueued-1:] // the queued execute, alone, for the runner started here
		q.mu.Unlock()
		go s.runBatches(batchKey{row: "collection/" + d.col.ID, way: mintsInOnePass}, q)
		if err := <-replies; err != nil {
			t.Fatalf("the execute that queued: %v", err)
		}
	})
}
