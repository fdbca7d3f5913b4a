package ledger_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"marketd/store/internal/testdb"
	"marketd/store/ledger"
)

// Every instrument is conserved: a transaction that spends less or more than it credits, in
// any instrument, is refused and changes nothing; one that creates value without minting too.
func TestLedger_EveryInstrumentIsConserved(t *testing.T) {
	testdb.Each(t, func(t *testing.T, b testdb.Backend) {
		e := newEnv(t, b)
		cc, usd := e.tap(alice, ledger.CC, "10"), e.tap(alice, ledger.USDCx, "10")
		before := e.supply()
		for name, tr := range map[string]*ledger.Transaction{
			"CC short": {Consume: []ledger.ContractRef{ref(cc), ref(usd)}, Create: []ledger.Contract{
				holding(alice, ledger.CC, "9.9999999999"), holding(alice, ledger.USDCx, "10")}},
			"USDCx over": {Consume: []ledger.ContractRef{ref(cc), ref(usd)}, Create: []ledger.Contract{
				holding(alice, ledger.CC, "10"), holding(alice, ledger.USDCx, "10.000001")}},
			"swapped instruments":  {Consume: []ledger.ContractRef{ref(cc)}, Create: []ledger.Contract{holding(alice, ledger.USDCx, "10")}},
			"out of nothing":       {Create: []ledger.Contract{holding(alice, ledger.CC, "1")}},
			"burns what it spends": {Consume: []ledger.ContractRef{ref(cc)}},
		} {
			_, err := e.commit(alice, tr)
			wantRefused(t, name, err)
		}
		// A holding holds a positive amount, even where the sum is conserved.
		for name, extra := range map[string][]ledger.Contract{
			"a zero holding":     {holding(bob, ledger.CC, "10"), holding(alice, ledger.CC, "0")},
			"a negative holding": {holding(bob, ledger.CC, "11"), holding(alice, ledger.CC, "-1")},
		} {
			_, err := e.commit(alice, &ledger.Transaction{Consume: []ledger.ContractRef{ref(cc)}, Create: extra})
			wantCode(t, name, err, ledger.CodeInvalidRequest)
		}
		if !e.active(cc) || !e.active(usd) {
			t.Error("a refused transaction consumed a holding")
		}
		if got := e.supply(); !got[ledger.CC].Equal(before[ledger.CC]) || !got[ledger.USDCx].Equal(before[ledger.USDCx]) {
			t.Errorf("supply %v after refused transactions, want %v", got, before)
		}
		// What conserves commits: split and merge across both instruments.
		e.mustCommit(alice, &ledger.Transaction{Consume: []ledger.ContractRef{ref(cc), ref(usd)}, Create: []ledger.Contract{
			holding(alice, ledger.CC, "4"), holding(alice, ledger.CC, "6"), holding(alice, ledger.USDCx, "10")}})
		if got := e.supply(); !got[ledger.CC].Equal(before[ledger.CC]) || !got[ledger.USDCx].Equal(before[ledger.USDCx]) {
			t.Errorf("supply %v after a split, want %v", got, before)
		}
	})
}

// A holding is spent only by its owner, and a consumed contract is not consumed again.
func TestLedger_OnlyTheOwnerSpendsAHoldingAndOnlyOnce(t *testing.T) {
	testdb.Each(t, func(t *testing.T, b testdb.Backend) {
		e := newEnv(t, b)
		h := e.tap(alice, ledger.CC, "5")
		_, err := e.commit(bob, &ledger.Transaction{Consume: []ledger.ContractRef{ref(h)}, Create: []ledger.Contract{holding(bob, ledger.CC, "5")}})
		wantCode(t, "bob spends alice's holding", err, ledger.CodePartyMismatch)
		own := e.tap(bob, ledger.CC, "1")
		_, err = e.commit(bob, &ledger.Transaction{Consume: []ledger.ContractRef{ref(own), ref(h)}, Create: []ledger.Contract{holding(bob, ledger.CC, "6")}})
		wantCode(t, "bob spends his holding and alice's", err, ledger.CodePartyMismatch)
		_, err = e.commit(alice, &ledger.Transaction{Consume: []ledger.ContractRef{ref(h), ref(h)}, Create: []ledger.Contract{holding(alice, ledger.CC, "10")}})
		wantRefused(t, "spending one holding twice in a transaction", err)
		if !e.active(h) || !e.active(own) {
			t.Fatal("a refused spend consumed a holding")
		}
		e.mustCommit(alice, &ledger.Transaction{Consume: []ledger.ContractRef{ref(h)}, Create: []ledger.Contract{holding(bob, ledger.CC, "5")}})
		_, err = e.commit(alice, &ledger.Transaction{Consume: []ledger.ContractRef{ref(h)}, Create: []ledger.Contract{holding(alice, ledger.CC, "5")}})
		wantCode(t, "spending a consumed holding", err, ledger.CodeStale)
		_, err = e.commit(alice, &ledger.Transaction{Consume: []ledger.ContractRef{{Template: ledger.TemplateHolding, CID: "00never"}}})
		wantCode(t, "spending a holding that never existed", err, ledger.CodeStale)
		if got := e.balance(bob, ledger.CC); !got.Equal(ledger.MustAmount("6")) {
			t.Errorf("bob holds %s, want 6: his own and alice's 5", got)
		}
	})
}

// Two transactions racing to spend the same holding, each in its own database transaction at
// the same time: exactly one commits, the other is stale, and no instrument's supply moves.
func TestLedger_TwoSpendsOfOneHoldingRacingCommitOnce(t *testing.T) {
	testdb.Each(t, func(t *testing.T, b testdb.Backend) {
		e := newEnv(t, b)
		const rounds = 12
		hs := make([]*ledger.Holding, rounds)
		for i := range hs {
			hs[i] = e.tap(alice, ledger.CC, "7")
		}
		before := e.supply()
		for i, h := range hs {
			var wg sync.WaitGroup
			start := make(chan struct{})
			errs := make([]error, 2)
			for j, to := range []string{bob, carol} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					_, errs[j] = e.commit(alice, &ledger.Transaction{Consume: []ledger.ContractRef{ref(h)},
						Create: []ledger.Contract{holding(to, ledger.CC, "3"), holding(alice, ledger.CC, "4")}})
				}()
			}
			close(start)
			wg.Wait()
			committed, stale := 0, 0
			for _, err := range errs {
				switch {
				case err == nil:
					committed++
				case codeOf(err) == ledger.CodeStale:
					stale++
				default:
					t.Errorf("round %d: %v", i, err)
				}
			}
			if committed != 1 || stale != 1 {
				t.Fatalf("round %d: %d committed and %d stale, want 1 and 1 (%v)", i, committed, stale, errs)
			}
		}
		got := e.supply()
		if !got[ledger.CC].Equal(before[ledger.CC]) {
			t.Errorf("CC supply %s after the races, want %s", got[ledger.CC], before[ledger.CC])
		}
		paid := e.balance(bob, ledger.CC).Add(e.balance(carol, ledger.CC))
		if want := ledger.MustAmount(fmt.Sprint(3 * rounds)); !paid.Equal(want) {
			t.Errorf("bob and carol hold %s, want %s: one payment per holding", paid, want)
		}
	})
}

// A batch commits all of its transactions or none: a later transaction may consume what an
// earlier one created, and when one is refused the batch answers its index and the caller's
// rollback leaves nothing of the batch.
func TestLedger_ABatchIsAllOrNone(t *testing.T) {
	testdb.Each(t, func(t *testing.T, b testdb.Backend) {
		e := newEnv(t, b)
		h1, h2 := e.tap(alice, ledger.CC, "10"), e.tap(bob, ledger.CC, "10")
		mid := holding(bob, ledger.CC, "10")
		first := &ledger.Transaction{Consume: []ledger.ContractRef{ref(h1)}, Create: []ledger.Contract{mid}}
		var refused int
		err := e.inTx(func(ctx context.Context, tx *ledger.Tx) ([]*ledger.Update, error) {
			us := []*ledger.Update{e.update(alice), e.update(bob), e.update(bob)}
			// the third spends bob's holding again: stale, with the first two applied in the batch
			batch := []*ledger.Transaction{first,
				{Consume: []ledger.ContractRef{ref(h2)}, Create: []ledger.Contract{holding(carol, ledger.CC, "10")}},
				{Consume: []ledger.ContractRef{ref(h2)}, Create: []ledger.Contract{holding(carol, ledger.CC, "10")}}}
			i, err := e.ledger.CommitBatch(ctx, tx, us, batch)
			refused = i
			return us, err
		})
		wantCode(t, "a batch spending one holding twice", err, ledger.CodeStale)
		if refused != 2 {
			t.Errorf("the batch answered index %d, want 2", refused)
		}
		if !e.active(h1) || !e.active(h2) || e.active(mid) || !e.balance(carol, ledger.CC).IsZero() {
			t.Error("a refused batch left some of its transactions applied")
		}

		// The whole batch commits, the second consuming what the first created.
		err = e.inTx(func(ctx context.Context, tx *ledger.Tx) ([]*ledger.Update, error) {
			us := []*ledger.Update{e.update(alice), e.update(bob)}
			second := &ledger.Transaction{Consume: []ledger.ContractRef{{Template: ledger.TemplateHolding}}, Create: []ledger.Contract{holding(carol, ledger.CC, "10")}}
			first.Create = []ledger.Contract{holding(bob, ledger.CC, "10")}
			ledger.Identify(tx, us[0], first)
			second.Consume[0].CID = first.Create[0].Life().CID
			i, err := e.ledger.CommitBatch(ctx, tx, us, []*ledger.Transaction{first, second})
			if i != -1 || err != nil {
				return nil, fmt.Errorf("batch answered %d, %w", i, err)
			}
			return us, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if e.active(h1) || !e.balance(carol, ledger.CC).Equal(ledger.MustAmount("10")) || !e.balance(bob, ledger.CC).Equal(ledger.MustAmount("10")) {
			t.Error("a committed batch did not apply both transactions")
		}
	})
}

// USDCx credited to a party that does not sign needs that party's active preapproval; CC
// does not; an expired preapproval admits nothing.
func TestLedger_ACreditToANonSignerNeedsItsPreapproval(t *testing.T) {
	testdb.Each(t, func(t *testing.T, b testdb.Backend) {
		e := newEnv(t, b)
		usd, cc := e.tap(alice, ledger.USDCx, "5"), e.tap(alice, ledger.CC, "5")
		pay := func(h *ledger.Holding) (*ledger.Update, error) {
			_, amount := h.Holds()
			return e.commit(alice, &ledger.Transaction{Consume: []ledger.ContractRef{ref(h)}, Create: []ledger.Contract{holding(bob, h.Instrument, amount.String())}})
		}
		_, err := pay(usd)
		wantCode(t, "USDCx to bob without a preapproval", err, ledger.CodePreapprovalRequired)
		if _, err := pay(cc); err != nil {
			t.Fatalf("CC to bob: %v", err)
		}
		// bob consents, for an hour
		p := &ledger.Preapproval{PartyID: bob, Kind: ledger.PreapprovalUSDCx, ExpiresAt: ledger.At(e.clock.Now().Add(time.Hour))}
		e.mustCommit(bob, &ledger.Transaction{Create: []ledger.Contract{p}})
		e.clock.Advance(2 * time.Hour)
		_, err = pay(usd)
		wantCode(t, "USDCx to bob after his preapproval expired", err, ledger.CodePreapprovalRequired)
		e.mustCommit(bob, &ledger.Transaction{Consume: []ledger.ContractRef{ref(p)}, Create: []ledger.Contract{
			&ledger.Preapproval{PartyID: bob, Kind: ledger.PreapprovalUSDCx, ExpiresAt: ledger.At(e.clock.Now().Add(time.Hour))}}})
		if _, err := pay(usd); err != nil {
			t.Fatalf("USDCx to bob with his preapproval: %v", err)
		}
		if got := e.balance(bob, ledger.USDCx); !got.Equal(ledger.MustAmount("5")) {
			t.Errorf("bob holds %s USDCx, want 5", got)
		}
	})
}

// A non-fungible asset has one live contract: only a mint creates one that never existed (and
// never one that did), only a burn retires one, and a transfer consumes and creates it again.
func TestLedger_AssetsAreMintedOnceMovedWholeAndBurnedOnlyByABurn(t *testing.T) {
	testdb.Each(t, func(t *testing.T, b testdb.Backend) {
		e := newEnv(t, b)
		_, err := e.commit(alice, &ledger.Transaction{Create: []ledger.Contract{&token{Owner: alice, TokenID: "t1"}}})
		wantRefused(t, "creating an asset without minting", err)
		t1 := &token{Owner: alice, TokenID: "t1"}
		e.mustCommit(alice, &ledger.Transaction{Create: []ledger.Contract{t1}, MintAssets: true})
		_, err = e.commit(alice, &ledger.Transaction{Create: []ledger.Contract{&token{Owner: alice, TokenID: "t1"}}, MintAssets: true})
		wantCode(t, "minting an asset that exists", err, ledger.CodeStale)
		_, err = e.commit(alice, &ledger.Transaction{Create: []ledger.Contract{&token{Owner: alice, TokenID: "t2"}, &token{Owner: alice, TokenID: "t2"}}, MintAssets: true})
		wantRefused(t, "minting one asset twice", err)
		_, err = e.commit(alice, &ledger.Transaction{Consume: []ledger.ContractRef{ref(t1)}})
		wantRefused(t, "consuming an asset without a burn", err)
		_, err = e.commit(alice, &ledger.Transaction{Consume: []ledger.ContractRef{ref(t1)}, Create: []ledger.Contract{&token{Owner: bob, TokenID: "t9"}}})
		wantRefused(t, "trading an asset for another", err)

		moved := &token{Owner: bob, TokenID: "t1"}
		e.mustCommit(alice, &ledger.Transaction{Consume: []ledger.ContractRef{ref(t1)}, Create: []ledger.Contract{moved}})
		_, err = e.commit(alice, &ledger.Transaction{Consume: []ledger.ContractRef{ref(moved)}, BurnAssets: true})
		wantCode(t, "alice burns bob's asset", err, ledger.CodePartyMismatch)
		e.mustCommit(bob, &ledger.Transaction{Consume: []ledger.ContractRef{ref(moved)}, BurnAssets: true})
		_, err = e.commit(bob, &ledger.Transaction{Create: []ledger.Contract{&token{Owner: bob, TokenID: "t1"}}, MintAssets: true})
		wantCode(t, "minting a burned asset again", err, ledger.CodeStale)
	})
}

// An offer locks the contract it escrows: only an active contract of the offer's owner can be
// locked, a locked contract is not consumed while the offer is active, and a settlement that
// consumes the offer releases it to whoever signs.
func TestLedger_AnOfferLocksWhatItEscrowsUntilSettled(t *testing.T) {
	testdb.Each(t, func(t *testing.T, b testdb.Backend) {
		e := newEnv(t, b)
		tk := &token{Owner: alice, TokenID: "t1"}
		e.mustCommit(alice, &ledger.Transaction{Create: []ledger.Contract{tk}, MintAssets: true})
		_, err := e.commit(bob, &ledger.Transaction{Create: []ledger.Contract{&offer{Seller: bob, TokenCID: tk.CID}}})
		wantCode(t, "an offer on another's token", err, ledger.CodePartyMismatch)
		o := &offer{Seller: alice, TokenCID: tk.CID}
		e.mustCommit(alice, &ledger.Transaction{Create: []ledger.Contract{o}})
		_, err = e.commit(alice, &ledger.Transaction{Consume: []ledger.ContractRef{ref(tk)}, Create: []ledger.Contract{&token{Owner: carol, TokenID: "t1"}}})
		wantCode(t, "moving a locked token", err, ledger.CodeConflict)

		// bob settles the offer: the offer and the token it locks are consumed, the token is his.
		bought := &token{Owner: bob, TokenID: "t1"}
		e.mustCommit(bob, &ledger.Transaction{Consume: []ledger.ContractRef{ref(o), ref(tk)}, Create: []ledger.Contract{bought}})
		if e.active(o) || e.active(tk) || !e.active(bought) {
			t.Error("the settlement did not consume the offer and its token")
		}
		_, err = e.commit(alice, &ledger.Transaction{Create: []ledger.Contract{&offer{Seller: alice, TokenCID: tk.CID}}})
		wantCode(t, "an offer on a consumed token", err, ledger.CodeStale)
	})
}

// In a batch the locks are read once for all of its transactions, and each answers for its
// own: one that settles an offer frees the token it locked, and the first that moves a
// token an active offer still locks is the index the batch refuses.
func TestLedger_ABatchRefusesTheTransactionThatMovesALockedContract(t *testing.T) {
	testdb.Each(t, func(t *testing.T, b testdb.Backend) {
		e := newEnv(t, b)
		t1, t2 := &token{Owner: alice, TokenID: "t1"}, &token{Owner: alice, TokenID: "t2"}
		e.mustCommit(alice, &ledger.Transaction{Create: []ledger.Contract{t1, t2}, MintAssets: true})
		o1, o2 := &offer{Seller: alice, TokenCID: t1.CID}, &offer{Seller: alice, TokenCID: t2.CID}
		e.mustCommit(alice, &ledger.Transaction{Create: []ledger.Contract{o1, o2}})
		var refused int
		err := e.inTx(func(ctx context.Context, tx *ledger.Tx) ([]*ledger.Update, error) {
			us := []*ledger.Update{e.update(bob), e.update(alice)}
			batch := []*ledger.Transaction{
				{Consume: []ledger.ContractRef{ref(o1), ref(t1)}, Create: []ledger.Contract{&token{Owner: bob, TokenID: "t1"}}},
				{Consume: []ledger.ContractRef{ref(t2)}, Create: []ledger.Contract{&token{Owner: carol, TokenID: "t2"}}}}
			i, err := e.ledger.CommitBatch(ctx, tx, us, batch)
			refused = i
			return us, err
		})
		wantCode(t, "a batch moving a locked token", err, ledger.CodeConflict)
		if refused != 1 {
			t.Errorf("the batch answered index %d, want 1", refused)
		}
		if err == nil || !strings.Contains(err.Error(), o2.CID) {
			t.Errorf("the refusal %v does not name the offer that locks the token", err)
		}

		// Without the second, the first settles its offer in a batch with a payment.
		h := e.tap(bob, ledger.CC, "1")
		err = e.inTx(func(ctx context.Context, tx *ledger.Tx) ([]*ledger.Update, error) {
			us := []*ledger.Update{e.update(bob), e.update(bob)}
			batch := []*ledger.Transaction{
				{Consume: []ledger.ContractRef{ref(h)}, Create: []ledger.Contract{holding(carol, ledger.CC, "1")}},
				{Consume: []ledger.ContractRef{ref(o1), ref(t1)}, Create: []ledger.Contract{&token{Owner: bob, TokenID: "t1"}}}}
			if i, err := e.ledger.CommitBatch(ctx, tx, us, batch); i != -1 || err != nil {
				return nil, fmt.Errorf("batch answered %d, %w", i, err)
			}
			return us, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if e.active(o1) || e.active(t1) || !e.active(o2) || !e.active(t2) {
			t.Error("the batch did not settle the first offer alone")
		}
	})
}

// Offsets strictly increase in commit order: an update committed after another has returned
// has the higher offset, however many commit at once.
func TestLedger_OffsetsIncreaseInCommitOrder(t *testing.T) {
	testdb.Each(t, func(t *testing.T, b testdb.Backend) {
		e := newEnv(t, b)
		const workers, each = 4, 6
		var clock atomic.Int64 // orders the begins and ends the workers see
		type span struct {
			id         string
			start, end int64
		}
		spans := make([][]span, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					start := clock.Add(1)
					u, err := e.commit(alice, &ledger.Transaction{Create: []ledger.Contract{holding(alice, ledger.CC, "1")}, Mint: true})
					if err != nil {
						t.Error(err)
						return
					}
					spans[w] = append(spans[w], span{u.UpdateID, start, clock.Add(1)})
				}
			}()
		}
		wg.Wait()
		var rows []ledger.Update
		if err := e.db.NewSelect().Model(&rows).Where("kind = 'test'").Scan(context.Background()); err != nil {
			t.Fatal(err)
		}
		offset := map[string]int64{}
		for _, r := range rows {
			offset[r.UpdateID] = r.Offset
		}
		var all []span
		for _, s := range spans {
			all = append(all, s...)
		}
		if len(all) != workers*each || len(offset) != len(all) {
			t.Fatalf("%d commits and %d updates, want %d", len(all), len(offset), workers*each)
		}
		seen := map[int64]string{}
		for _, s := range all {
			o := offset[s.id]
			if o <= 0 {
				t.Fatalf("update %s has offset %d", s.id, o)
			}
			if other, ok := seen[o]; ok {
				t.Fatalf("updates %s and %s share offset %d", other, s.id, o)
			}
			seen[o] = s.id
		}
		sort.Slice(all, func(i, j int) bool { return all[i].end < all[j].end })
		for i, a := range all {
			for _, b := range all[i+1:] {
				if a.end < b.start && offset[a.id] >= offset[b.id] {
					t.Errorf("update %s committed before %s began, yet has offset %d >= %d", a.id, b.id, offset[a.id], offset[b.id])
				}
			}
		}
	})
}
