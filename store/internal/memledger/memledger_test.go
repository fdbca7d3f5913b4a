package memledger_test

import (
	"context"
	"testing"

	"marketd/store"
	"marketd/store/internal/memledger"
)

const alice, bob = "alice::1220aa", "bob::1220bb"

func cc(t *testing.T, s string) store.Amount {
	t.Helper()
	a, err := store.ParseAmount(s, store.CC)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func holding(t *testing.T, owner, amount string) *store.Holding {
	return &store.Holding{Owner: owner, Instrument: store.CC, Amount: cc(t, amount)}
}

func ref(c store.Contract) store.ContractRef {
	return store.ContractRef{Template: c.Template(), CID: c.Life().CID}
}

// A transfer committed through a ledger outside the store: the tap mints, the transfer spends
// the sender's holding into the receiver's and the change, offsets follow commit order, and
// each update has its receipt.
func TestLedger_CommitsATransferThroughTheStoreLedgerInterface(t *testing.T) {
	ctx := context.Background()
	var l store.Ledger = memledger.New()
	tap := holding(t, alice, "100")
	tapU := &store.Update{UpdateID: "u-tap", ActAs: alice}
	if err := l.Commit(ctx, nil, tapU, &store.Transaction{Create: []store.Contract{tap}, Mint: true}); err != nil {
		t.Fatal(err)
	}
	paid, change := holding(t, bob, "30"), holding(t, alice, "70")
	transfer := &store.Transaction{Consume: []store.ContractRef{ref(tap)}, Create: []store.Contract{paid, change}}
	u := &store.Update{UpdateID: "u-transfer", ActAs: alice}
	if err := l.Commit(ctx, nil, u, transfer); err != nil {
		t.Fatal(err)
	}
	m := l.(*memledger.Ledger)
	if got := m.Balance(bob, store.CC); !got.Equal(cc(t, "30")) {
		t.Errorf("bob holds %s, want 30", got)
	}
	if got := m.Balance(alice, store.CC); !got.Equal(cc(t, "70")) {
		t.Errorf("alice holds %s, want 70", got)
	}
	if tapU.Offset != 1 || u.Offset != 2 {
		t.Errorf("offsets %d, %d; want 1, 2", tapU.Offset, u.Offset)
	}
	r, ok := m.Receipt(u.UpdateID)
	if !ok || r.Offset != 2 || len(r.Consumed) != 1 || r.Consumed[0] != tap.CID ||
		len(r.Created) != 2 || r.Created[0] != paid.CID || r.Created[1] != change.CID {
		t.Errorf("receipt %+v, %v", r, ok)
	}

	// The same holding again is stale; another party's holding is not the signer's.
	again := &store.Transaction{Consume: []store.ContractRef{ref(tap)}, Create: []store.Contract{holding(t, bob, "100")}}
	if err := l.Commit(ctx, nil, &store.Update{UpdateID: "u-again", ActAs: alice}, again); store.ErrorCode(err) != store.CodeStale {
		t.Errorf("spending a consumed holding: %v, want stale", err)
	}
	steal := &store.Transaction{Consume: []store.ContractRef{ref(change)}, Create: []store.Contract{holding(t, bob, "70")}}
	if err := l.Commit(ctx, nil, &store.Update{UpdateID: "u-steal", ActAs: bob}, steal); store.ErrorCode(err) != store.CodePartyMismatch {
		t.Errorf("spending another's holding: %v, want party_mismatch", err)
	}
}

// A batch commits all of its transactions or none: one that would create value out of
// nothing is answered by its index and the earlier one is not applied either.
func TestLedger_ABatchWithARefusedTransactionAppliesNothing(t *testing.T) {
	ctx := context.Background()
	l := memledger.New()
	tap := holding(t, alice, "10")
	if err := l.Commit(ctx, nil, &store.Update{UpdateID: "u-tap", ActAs: alice}, &store.Transaction{Create: []store.Contract{tap}, Mint: true}); err != nil {
		t.Fatal(err)
	}
	pay := &store.Transaction{Consume: []store.ContractRef{ref(tap)}, Create: []store.Contract{holding(t, bob, "10")}}
	inflate := &store.Transaction{Create: []store.Contract{holding(t, bob, "5")}}
	us := []*store.Update{{UpdateID: "u-pay", ActAs: alice}, {UpdateID: "u-inflate", ActAs: bob}}
	i, err := l.CommitBatch(ctx, nil, us, []*store.Transaction{pay, inflate})
	if i != 1 || err == nil {
		t.Fatalf("batch answered %d, %v; want 1 and an error", i, err)
	}
	if got := l.Balance(alice, store.CC); !got.Equal(cc(t, "10")) {
		t.Errorf("alice holds %s after the refused batch, want 10", got)
	}
	if got := l.Balance(bob, store.CC); !got.IsZero() {
		t.Errorf("bob holds %s after the refused batch, want 0", got)
	}
	if _, ok := l.Receipt("u-pay"); ok {
		t.Error("a receipt for an update of the refused batch")
	}
}
