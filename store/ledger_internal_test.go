package store

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"marketd/store/internal/testdb"
	"marketd/store/storetest/partykey"
)

// These tests drive the ledger below the prepare/execute API, with hand-built transactions.
// They cannot use storetest (it imports this package); testdb gives them their databases.

// ledgerClock is a clock the test moves.
type ledgerClock = testdb.Clock

// eachLedgerStore runs fn as a parallel subtest on a fresh, migrated store of every backend.
func eachLedgerStore(t *testing.T, fn func(t *testing.T, s *Store, clock *ledgerClock)) {
	t.Helper()
	testdb.Each(t, func(t *testing.T, b testdb.Backend) {
		clock := testdb.NewClock(testdb.Epoch)
		cfg := DefaultConfig()
		cfg.DB, cfg.Clock, cfg.Logger, cfg.MaxConns = b.DSN(t), clock, slog.New(slog.DiscardHandler), 4
		s, err := Open(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if _, err := s.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		fn(t, s, clock)
	})
}

// keyedParty is an onboarded party and its key. The key is storetest's (its partykey
// package, which these tests can import); the onboarding is spelled out here because storetest
// itself imports this package.
type keyedParty struct {
	id string
	partykey.Key
}

func onboardKeyed(t *testing.T, s *Store, hint string) *keyedParty {
	t.Helper()
	k := partykey.New()
	prep, err := s.PrepareOnboarding(context.Background(), k.Public(), hint)
	if err != nil {
		t.Fatal(err)
	}
	p := &keyedParty{id: prep.PartyID, Key: k}
	p.execute(t, s, KindOnboard, prep)
	return p
}

func (p *keyedParty) execute(t *testing.T, s *Store, kind string, prep *Prepared) Receipt {
	t.Helper()
	r, err := s.Execute(context.Background(), Execution{Kinds: []string{kind}, Hash: prep.Hash, Signature: p.Sign(prep.Hash), Caller: p.id})
	if err != nil {
		t.Fatalf("execute %s: %v", kind, err)
	}
	return r
}

// commitAs commits t as one update signed by actAs, the way every execute does.
func commitAs(s *Store, actAs string, t *Transaction) error {
	ctx := context.Background()
	return s.commit(ctx, "test.commit", actAs, func(tx *Tx, u *Update) error {
		return s.ledger.Commit(ctx, tx.Tx, u, t)
	})
}

// mint creates a holding out of nothing, as the tap does.
func mint(t *testing.T, s *Store, owner string, inst Instrument, amount string) *Holding {
	t.Helper()
	h := &Holding{Owner: owner, Instrument: inst, Amount: MustAmount(amount)}
	if err := commitAs(s, owner, &Transaction{Create: []Contract{h}, Mint: true}); err != nil {
		t.Fatal(err)
	}
	return h
}

func spend(hs ...*Holding) []ContractRef {
	refs := make([]ContractRef, len(hs))
	for i, h := range hs {
		refs[i] = ContractRef{Template: templateHolding, CID: h.CID}
	}
	return refs
}

// ledgerRows renders every row of the ledger's tables, so a test can tell that nothing changed.
func ledgerRows(t *testing.T, s *Store) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	var hs []Holding
	if err := s.db.NewSelect().Model(&hs).Order("cid").Scan(ctx); err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		fmt.Fprintf(&b, "holding %s %s %s %s consumed by %s\n", h.CID, h.Owner, h.Instrument, h.Amount, consumedBy(h.Lifecycle))
	}
	var ps []Preapproval
	if err := s.db.NewSelect().Model(&ps).Order("cid").Scan(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		fmt.Fprintf(&b, "preapproval %s %s %s %d consumed by %s\n", p.CID, p.PartyID, p.Kind, p.ExpiresAt.Unix(), consumedBy(p.Lifecycle))
	}
	for _, table := range []string{"updates", "update_events", "reward_balances"} {
		n, err := s.db.NewSelect().Table(table).Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s: %d rows\n", table, n)
	}
	return b.String()
}

func consumedBy(l Lifecycle) string {
	if l.ConsumedUpdate == nil {
		return "none"
	}
	return *l.ConsumedUpdate
}

// refused commits tx as actAs, expects it refused by check, and expects nothing changed.
func refused(t *testing.T, s *Store, actAs string, tx *Transaction, check func(err error) bool) {
	t.Helper()
	before := ledgerRows(t, s)
	err := commitAs(s, actAs, tx)
	if !check(err) {
		t.Errorf("commit: %v", err)
	}
	if after := ledgerRows(t, s); after != before {
		t.Errorf("a refused transaction changed the ledger:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

func hasCode(code Code) func(err error) bool {
	return func(err error) bool { return ErrorCode(err) == code }
}

func isActive(t *testing.T, s *Store, h *Holding) bool {
	t.Helper()
	got, err := s.HoldingByID(context.Background(), h.CID)
	if err != nil {
		t.Fatal(err)
	}
	return got.Active()
}

func TestLedger_RefusesSpendingAnotherPartysHolding(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *Store, clock *ledgerClock) {
		alice, bob := onboardKeyed(t, s, "alice"), onboardKeyed(t, s, "bob")
		hers, his := mint(t, s, alice.id, CC, "10"), mint(t, s, bob.id, CC, "3")
		refused(t, s, bob.id, &Transaction{
			Consume: spend(hers),
			Create:  []Contract{&Holding{Owner: bob.id, Instrument: CC, Amount: MustAmount("10")}},
		}, hasCode(CodePartyMismatch))
		// Mixed with the signer's own holding: all or none.
		refused(t, s, bob.id, &Transaction{
			Consume: spend(his, hers),
			Create:  []Contract{&Holding{Owner: bob.id, Instrument: CC, Amount: MustAmount("13")}},
		}, hasCode(CodePartyMismatch))
		if !isActive(t, s, hers) || !isActive(t, s, his) {
			t.Error("a refused spend consumed a holding")
		}
		// The owner can spend it.
		if err := commitAs(s, alice.id, &Transaction{
			Consume: spend(hers),
			Create:  []Contract{&Holding{Owner: bob.id, Instrument: CC, Amount: MustAmount("10")}},
		}); err != nil {
			t.Fatalf("the owner's own spend: %v", err)
		}
	})
}

func TestLedger_RefusesATransactionThatIsNotConserved(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *Store, clock *ledgerClock) {
		alice, bob := onboardKeyed(t, s, "alice"), onboardKeyed(t, s, "bob")
		h := mint(t, s, alice.id, CC, "10")
		mint(t, s, alice.id, USDCx, "10")
		out := func(owner string, inst Instrument, amount string) Contract {
			return &Holding{Owner: owner, Instrument: inst, Amount: MustAmount(amount)}
		}
		for _, c := range []struct {
			name    string
			consume []ContractRef
			create  []Contract
		}{
			{"creates more than it spends", spend(h), []Contract{out(bob.id, CC, "10"), out(alice.id, CC, "0.0000000001")}},
			{"creates less than it spends", spend(h), []Contract{out(bob.id, CC, "9.9999999999")}},
			{"creates another instrument", spend(h), []Contract{out(alice.id, USDCx, "10")}},
			{"creates out of nothing without minting", nil, []Contract{out(alice.id, CC, "1")}},
			{"burns what it spends", spend(h), nil},
			{"creates a zero holding", spend(h), []Contract{out(bob.id, CC, "10"), out(alice.id, CC, "0")}},
			{"creates a negative holding", spend(h), []Contract{out(bob.id, CC, "11"), out(alice.id, CC, "-1")}},
		} {
			t.Run(c.name, func(t *testing.T) {
				refused(t, s, alice.id, &Transaction{Consume: c.consume, Create: c.create}, func(err error) bool { return err != nil })
			})
		}
		if !isActive(t, s, h) {
			t.Error("a refused transaction consumed its input")
		}
	})
}

func TestLedger_ConsumingAConsumedContractIsStaleAllOrNone(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *Store, clock *ledgerClock) {
		alice := onboardKeyed(t, s, "alice")
		h1, h2 := mint(t, s, alice.id, CC, "5"), mint(t, s, alice.id, CC, "5")
		change := &Holding{Owner: alice.id, Instrument: CC, Amount: MustAmount("5")}
		if err := commitAs(s, alice.id, &Transaction{Consume: spend(h1), Create: []Contract{change}}); err != nil {
			t.Fatal(err)
		}
		both := func() []Contract {
			return []Contract{&Holding{Owner: alice.id, Instrument: CC, Amount: MustAmount("10")}}
		}
		refused(t, s, alice.id, &Transaction{Consume: spend(h1, h2), Create: both()}, hasCode(CodeStale))
		refused(t, s, alice.id, &Transaction{Consume: spend(h2, h1), Create: both()}, hasCode(CodeStale))
		never := &Holding{Lifecycle: Lifecycle{CID: "00" + strings.Repeat("0", 64)}}
		refused(t, s, alice.id, &Transaction{Consume: spend(h2, never), Create: both()}, hasCode(CodeStale))
		refused(t, s, alice.id, &Transaction{Consume: spend(h2, h2), Create: both()}, func(err error) bool { return err != nil })
		if !isActive(t, s, h2) {
			t.Fatal("the input that was still active was consumed by a stale transaction")
		}
		if err := commitAs(s, alice.id, &Transaction{Consume: spend(h2, change), Create: both()}); err != nil {
			t.Fatalf("spending the active holdings: %v", err)
		}
	})
}

func TestLedger_USDCxCreditToAnotherPartyNeedsItsActivePreapproval(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *Store, clock *ledgerClock) {
		ctx := context.Background()
		alice := onboardKeyed(t, s, "alice")
		ttl := s.Config().PreapprovalTTL
		preapprove := func(t *testing.T, p *keyedParty, kind PreapprovalKind) {
			prep, err := s.PreparePreapproval(ctx, p.id, kind)
			if err != nil {
				t.Fatal(err)
			}
			p.execute(t, s, kindOfPreapproval(kind), prep)
		}
		for i, c := range []struct {
			name   string
			inst   Instrument
			toSelf bool
			setup  func(t *testing.T, receiver *keyedParty)
			want   Code // "" means committed
		}{
			{name: "without a preapproval", inst: USDCx, want: CodePreapprovalRequired},
			{name: "with an NFT preapproval only", inst: USDCx, setup: func(t *testing.T, r *keyedParty) { preapprove(t, r, PreapprovalNFT) }, want: CodePreapprovalRequired},
			{name: "with an active preapproval", inst: USDCx, setup: func(t *testing.T, r *keyedParty) { preapprove(t, r, PreapprovalUSDCx) }},
			{name: "with a preapproval about to expire", inst: USDCx, setup: func(t *testing.T, r *keyedParty) {
				preapprove(t, r, PreapprovalUSDCx)
				clock.Advance(ttl - time.Microsecond)
			}},
			{name: "with a preapproval that expired", inst: USDCx, setup: func(t *testing.T, r *keyedParty) {
				preapprove(t, r, PreapprovalUSDCx)
				clock.Advance(ttl + time.Second)
			}, want: CodePreapprovalRequired},
			{name: "with a preapproval renewed before it expired", inst: USDCx, setup: func(t *testing.T, r *keyedParty) {
				preapprove(t, r, PreapprovalUSDCx)
				clock.Advance(ttl / 2)
				if _, err := s.RenewPreapproval(ctx, r.id, PreapprovalUSDCx); err != nil {
					t.Fatal(err)
				}
				clock.Advance(ttl/2 + time.Hour)
			}},
			{name: "to the signer itself", inst: USDCx, toSelf: true},
			{name: "of CC, without a preapproval", inst: CC},
		} {
			t.Run(c.name, func(t *testing.T) {
				receiver := onboardKeyed(t, s, fmt.Sprintf("r%d", i))
				if c.setup != nil {
					c.setup(t, receiver)
				}
				in := mint(t, s, alice.id, c.inst, "100")
				to := receiver.id
				if c.toSelf {
					to = alice.id
				}
				credit := &Holding{Owner: to, Instrument: c.inst, Amount: MustAmount("40")}
				tx := &Transaction{Consume: spend(in), Create: []Contract{credit, &Holding{Owner: alice.id, Instrument: c.inst, Amount: MustAmount("60")}}}
				if c.want != "" {
					refused(t, s, alice.id, tx, hasCode(c.want))
					return
				}
				if err := commitAs(s, alice.id, tx); err != nil {
					t.Fatalf("commit: %v", err)
				}
				if got, err := s.HoldingByID(ctx, credit.CID); err != nil || got.Owner != to || !got.Amount.Equal(MustAmount("40")) {
					t.Fatalf("the credit: %+v, %v", got, err)
				}
			})
		}
	})
}

func TestPreapproval_RenewMovesExpiryLaterWithANewContract(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *Store, clock *ledgerClock) {
		ctx := context.Background()
		bob, carol := onboardKeyed(t, s, "bob"), onboardKeyed(t, s, "carol")
		prep, err := s.PreparePreapproval(ctx, bob.id, PreapprovalUSDCx)
		if err != nil {
			t.Fatal(err)
		}
		var first PreapprovalResult
		if err := json.Unmarshal(bob.execute(t, s, KindUSDCxPreapproval, prep), &first); err != nil || first.CID == "" {
			t.Fatalf("preapproval receipt: %+v, %v", first, err)
		}
		if want := clock.Now().Add(s.Config().PreapprovalTTL).Unix(); first.ExpiresAt != want {
			t.Errorf("expiresAt %d, want %d", first.ExpiresAt, want)
		}

		clock.Advance(time.Hour)
		prev := first
		for i := range 2 { // the second renewal at the same instant must move it later too
			got, err := s.RenewPreapproval(ctx, bob.id, PreapprovalUSDCx)
			if err != nil {
				t.Fatal(err)
			}
			if got.CID == prev.CID || got.ExpiresAt <= prev.ExpiresAt {
				t.Fatalf("renewal %d: %+v after %+v; want a new cid expiring later", i, got, prev)
			}
			ps, err := s.Preapprovals(ctx, bob.id)
			if err != nil {
				t.Fatal(err)
			}
			if len(ps) != 1 || ps[0].CID != got.CID || ps[0].ExpiresAt.Unix() != got.ExpiresAt || ps[0].Kind != PreapprovalUSDCx {
				t.Fatalf("renewal %d: bob's preapprovals are %+v, want only %+v", i, ps, got)
			}
			old := new(Preapproval)
			if err := s.db.NewSelect().Model(old).Where("cid = ?", prev.CID).Scan(ctx); err != nil || old.Active() {
				t.Fatalf("renewal %d: the preapproval it replaces is %+v, %v; want it consumed", i, old, err)
			}
			u, events, err := s.UpdateByID(ctx, *old.ConsumedUpdate)
			if err != nil || u.Kind != KindPreapprovalRenew || u.ActAs != bob.id || len(events) != 2 ||
				events[0] != (UpdateEvent{0, "consumed", templatePreapproval, prev.CID}) || events[1] != (UpdateEvent{1, "created", templatePreapproval, got.CID}) {
				t.Fatalf("renewal %d: update %+v %+v, %v", i, u, events, err)
			}
			prev = *got
		}

		before := ledgerRows(t, s)
		for _, c := range []struct {
			party string
			kind  PreapprovalKind
		}{{carol.id, PreapprovalUSDCx}, {carol.id, PreapprovalNFT}, {bob.id, PreapprovalNFT}} {
			if _, err := s.RenewPreapproval(ctx, c.party, c.kind); ErrorCode(err) != CodeNotFound {
				t.Errorf("renewing a %s preapproval %s does not have: %v, want not_found", c.kind, c.party, err)
			}
		}
		if after := ledgerRows(t, s); after != before {
			t.Errorf("a refused renewal changed the ledger:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})
}
