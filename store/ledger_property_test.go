package store_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// Amounts in these tests are counted in the instrument's smallest unit (1e-10 CC, 1e-6
// USDCx) as int64, so the test's arithmetic is independent of the store's.

// committed is one execute that answered 200, and what the test expects it did.
type committed struct {
	kind    string
	actAs   *storetest.Party
	prep    *store.Prepared
	receipt store.Receipt
	parsed  receipt

	inst     store.Instrument // tap and transfer
	units    int64
	receiver string // transfer
}

// ledgerWorld is the state of a property run: the parties, what the test knows was
// committed, and a lock per party that lets a test own a wallet's spending for a while.
type ledgerWorld struct {
	t       *testing.T
	s       *store.Store
	raw     *sql.DB
	clock   *storetest.Clock
	parties []*storetest.Party
	spend   []sync.RWMutex // a transfer holds its sender's RLock; a stale pair holds its Lock

	mu      sync.Mutex
	commits []committed
	stats   map[string]int
}

func newLedgerWorld(t *testing.T, b storetest.Backend, n int) *ledgerWorld {
	s, clock, raw := openLedger(t, b)
	w := &ledgerWorld{t: t, s: s, raw: raw, clock: clock, spend: make([]sync.RWMutex, n), stats: map[string]int{}}
	for i := range n {
		w.parties = append(w.parties, storetest.Onboard(t, s, fmt.Sprintf("p%d", i)))
	}
	return w
}

func (w *ledgerWorld) count(what string) {
	w.mu.Lock()
	w.stats[what]++
	w.mu.Unlock()
}

func (w *ledgerWorld) record(c committed) {
	c.parsed = parseReceipt(w.t, c.receipt)
	w.mu.Lock()
	w.commits = append(w.commits, c)
	w.mu.Unlock()
}

func (w *ledgerWorld) other(rng *rand.Rand, i int) int {
	j := rng.IntN(len(w.parties) - 1)
	if j >= i {
		j++
	}
	return j
}

func (w *ledgerWorld) ccUnits(p *storetest.Party) int64 {
	return amountUnits(w.t, balanceOf(w.t, w.s, p, store.CC).Amount, store.CC)
}

// tap mints a random amount to party i and records it.
func (w *ledgerWorld) tap(rng *rand.Rand, i int, inst store.Instrument) {
	p := w.parties[i]
	u := randomUnits(rng, 1000*pow10(decimalsOf(inst)), inst)
	prep, err := w.s.PrepareTap(context.Background(), p.ID, inst, mustParse(w.t, unitsString(u, inst), inst))
	if err != nil {
		w.t.Errorf("tap prepare: %v", err)
		return
	}
	r, err := p.Execute(w.s, store.KindTap, prep)
	if err != nil {
		w.t.Errorf("tap execute: %v", err)
		return
	}
	w.record(committed{kind: store.KindTap, actAs: p, prep: prep, receipt: r, inst: inst, units: u})
	w.count("tap " + string(inst))
}

func pow10(n int) int64 {
	p := int64(1)
	for range n {
		p *= 10
	}
	return p
}

// prepareTransfer prepares u units of CC from party i to party j. It answers nil when the
// wallet cannot pay, which a concurrent spend can cause.
func (w *ledgerWorld) prepareTransfer(i, j int, u int64) *store.Prepared {
	prep, err := w.s.PrepareCCTransfer(context.Background(), w.parties[i].ID, w.parties[j].ID, mustParse(w.t, unitsString(u, store.CC), store.CC))
	switch code := store.ErrorCode(err); {
	case err == nil:
		return prep
	case code == store.CodeInsufficientFunds:
		w.count("transfer insufficient_funds (spent meanwhile)")
	case code == store.CodeConflict:
		w.count("transfer conflict (too many inputs)")
	default:
		w.t.Errorf("transfer prepare %s -> %s of %s: %v", w.parties[i].ID, w.parties[j].ID, unitsString(u, store.CC), err)
	}
	return nil
}

// executeTransfer executes a prepared transfer and records it; stale is an expected outcome
// when other transfers spend the same wallet. It reports whether the transfer committed.
func (w *ledgerWorld) executeTransfer(prep *store.Prepared, i, j int, u int64, staleOK bool) (bool, error) {
	p := w.parties[i]
	r, err := p.Execute(w.s, store.KindCCTransfer, prep)
	switch {
	case err == nil:
		w.record(committed{kind: store.KindCCTransfer, actAs: p, prep: prep, receipt: r, inst: store.CC, units: u, receiver: w.parties[j].ID})
		w.count("transfer committed")
		return true, nil
	case staleOK && store.ErrorCode(err) == store.CodeStale:
		w.count("transfer stale")
	default:
		w.t.Errorf("transfer execute %s -> %s of %s: %v", p.ID, w.parties[j].ID, unitsString(u, store.CC), err)
	}
	return false, err
}

// transfer sends a random affordable-looking amount (sometimes one too small to earn a
// reward, sometimes to the sender itself) from party i.
func (w *ledgerWorld) transfer(rng *rand.Rand, i int) {
	j := w.other(rng, i)
	if rng.IntN(20) == 0 {
		j = i
	}
	w.spend[i].RLock()
	defer w.spend[i].RUnlock()
	bal := w.ccUnits(w.parties[i])
	if bal == 0 {
		w.count("transfer skipped (empty wallet)")
		return
	}
	u := randomUnits(rng, bal, store.CC)
	if rng.IntN(10) == 0 {
		u = randomUnits(rng, min(bal, 999), store.CC) // earns no reward
	}
	if prep := w.prepareTransfer(i, j, u); prep != nil {
		w.executeTransfer(prep, i, j, u, true)
	}
}

// tooLarge asks to send more than has ever been minted: insufficient_funds at prepare.
func (w *ledgerWorld) tooLarge(rng *rand.Rand, i int) {
	_, err := w.s.PrepareCCTransfer(context.Background(), w.parties[i].ID, w.parties[w.other(rng, i)].ID, mustParse(w.t, "1000000000", store.CC))
	if store.ErrorCode(err) != store.CodeInsufficientFunds {
		w.t.Errorf("transfer of more than the supply: %v, want insufficient_funds", err)
	}
	w.count("too large")
}

// stalePair prepares two transfers of party i's whole balance, which name the same holdings,
// and executes them at once while no other transfer spends from i: exactly one commits.
func (w *ledgerWorld) stalePair(rng *rand.Rand, i int) {
	w.spend[i].Lock()
	defer w.spend[i].Unlock()
	bal := w.ccUnits(w.parties[i])
	if bal == 0 {
		w.count("stale pair skipped (empty wallet)")
		return
	}
	j1, j2 := w.other(rng, i), w.other(rng, i)
	p1, p2 := w.prepareTransfer(i, j1, bal), w.prepareTransfer(i, j2, bal)
	if p1 == nil || p2 == nil {
		return
	}
	contested := overlap(preparedInputs(w.t, p1), preparedInputs(w.t, p2))
	var ok1, ok2 bool
	var err1, err2 error
	var wg sync.WaitGroup
	wg.Go(func() { ok1, err1 = w.executeTransfer(p1, i, j1, bal, true) })
	wg.Go(func() { ok2, err2 = w.executeTransfer(p2, i, j2, bal, true) })
	wg.Wait()
	switch {
	case contested && ok1 == ok2:
		w.t.Errorf("two transfers over the same holdings: committed %v and %v (%v, %v), want exactly one", ok1, ok2, err1, err2)
	case !contested && !(ok1 && ok2):
		w.t.Errorf("two transfers over disjoint holdings: committed %v and %v (%v, %v), want both", ok1, ok2, err1, err2)
	case contested:
		w.count("stale pair contested")
	default:
		w.count("stale pair disjoint")
	}
}

// replay executes a committed transaction again: the same receipt, nothing applied twice.
func (w *ledgerWorld) replay(rng *rand.Rand) {
	w.mu.Lock()
	if len(w.commits) == 0 {
		w.mu.Unlock()
		return
	}
	c := w.commits[rng.IntN(len(w.commits))]
	w.mu.Unlock()
	r, err := c.actAs.Execute(w.s, c.kind, c.prep)
	if err != nil || !bytes.Equal(r, c.receipt) {
		w.t.Errorf("replay of %s: %s, %v; want the first receipt %s", c.kind, r, err, c.receipt)
	}
	w.count("replay")
}

// prepareRandom prepares a transfer of a random part of party i's balance to another party;
// the caller holds i's RLock. It answers nil when the wallet is empty or was spent meanwhile.
func (w *ledgerWorld) prepareRandom(rng *rand.Rand, i int) (prep *store.Prepared, j int, u int64) {
	bal := w.ccUnits(w.parties[i])
	if bal == 0 {
		w.count("skipped (empty wallet)")
		return nil, 0, 0
	}
	j = w.other(rng, i)
	u = randomUnits(rng, bal, store.CC)
	return w.prepareTransfer(i, j, u), j, u
}

// badExecutes prepares a transfer from party i, executes it signed by another party's key
// (invalid_signature) and as another caller (party_mismatch), then properly.
func (w *ledgerWorld) badExecutes(rng *rand.Rand, i int) {
	w.spend[i].RLock()
	defer w.spend[i].RUnlock()
	prep, j, u := w.prepareRandom(rng, i)
	if prep == nil {
		return
	}
	p, q := w.parties[i], w.parties[w.other(rng, i)]
	if _, err := executeWith(w.s, store.KindCCTransfer, prep, p.ID, q.Key); store.ErrorCode(err) != store.CodeInvalidSignature {
		w.t.Errorf("execute signed by another party: %v, want invalid_signature", err)
	}
	if _, err := executeWith(w.s, store.KindCCTransfer, prep, q.ID, p.Key); store.ErrorCode(err) != store.CodePartyMismatch {
		w.t.Errorf("execute by another caller: %v, want party_mismatch", err)
	}
	w.count("bad executes")
	w.executeTransfer(prep, i, j, u, true)
}

// doubleExecute executes one prepared transfer from party i twice at once: both answer the
// same (one receipt, or stale when another transfer spent the holdings), and it applies once.
func (w *ledgerWorld) doubleExecute(rng *rand.Rand, i int) {
	w.spend[i].RLock()
	defer w.spend[i].RUnlock()
	prep, j, u := w.prepareRandom(rng, i)
	if prep == nil {
		return
	}
	p := w.parties[i]
	var rs [2]store.Receipt
	var errs [2]error
	var wg sync.WaitGroup
	for k := range 2 {
		wg.Go(func() { rs[k], errs[k] = p.Execute(w.s, store.KindCCTransfer, prep) })
	}
	wg.Wait()
	switch {
	case errs[0] == nil && errs[1] == nil && bytes.Equal(rs[0], rs[1]):
		w.record(committed{kind: store.KindCCTransfer, actAs: p, prep: prep, receipt: rs[0], inst: store.CC, units: u, receiver: w.parties[j].ID})
		w.count("double execute committed once")
	case store.ErrorCode(errs[0]) == store.CodeStale && store.ErrorCode(errs[1]) == store.CodeStale:
		w.count("double execute stale")
	default:
		w.t.Errorf("one transfer executed twice at once: %s, %v and %s, %v; want the same receipt twice", rs[0], errs[0], rs[1], errs[1])
	}
}

// ledgerSnapshot is everything a failed call must leave as it was.
type ledgerSnapshot struct {
	Supply   map[store.Instrument]string
	Balances map[string]string // party/instrument -> amount and holdings
	Rewards  map[string]string
	Tables   map[string]int64
}

func (w *ledgerWorld) snapshot() ledgerSnapshot {
	t, ctx := w.t, context.Background()
	t.Helper()
	snap := ledgerSnapshot{Supply: map[store.Instrument]string{}, Balances: map[string]string{}, Rewards: map[string]string{}, Tables: map[string]int64{}}
	sup, err := w.s.Supply(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for inst, a := range sup {
		snap.Supply[inst] = a.String()
	}
	for _, p := range w.parties {
		bs, err := w.s.Balances(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bs {
			snap.Balances[p.ID+"/"+string(b.Instrument)] = fmt.Sprintf("%s in %d, locked %s", b.Amount, b.Holdings, b.Locked)
		}
		r, err := w.s.RewardBalance(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		snap.Rewards[p.ID] = r.String()
	}
	for name, q := range map[string]string{
		"updates":          "SELECT COUNT(*) FROM updates",
		"last offset":      "SELECT COALESCE(MAX(ledger_offset), 0) FROM updates",
		"update events":    "SELECT COUNT(*) FROM update_events",
		"holdings":         "SELECT COUNT(*) FROM holdings",
		"active holdings":  "SELECT COUNT(*) FROM holdings WHERE consumed_update IS NULL",
		"preapprovals":     "SELECT COUNT(*) FROM preapprovals",
		"executed":         "SELECT COUNT(*) FROM prepared_txs WHERE update_id IS NOT NULL",
		"rewarded updates": "SELECT COUNT(*) FROM updates WHERE reward IS NOT NULL",
	} {
		var n int64
		if err := w.raw.QueryRowContext(ctx, q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		snap.Tables[name] = n
	}
	return snap
}

// changesNothing runs call and checks the ledger is as it was before.
func (w *ledgerWorld) changesNothing(what string, call func()) {
	w.t.Helper()
	before := w.snapshot()
	call()
	if after := w.snapshot(); !reflect.DeepEqual(before, after) {
		w.t.Errorf("%s changed the ledger:\nbefore %+v\nafter  %+v", what, before, after)
	}
}

// unchanged runs a call that must fail, and checks it failed with want and changed nothing.
func (w *ledgerWorld) unchanged(what string, want store.Code, call func() error) {
	w.t.Helper()
	w.changesNothing(what, func() {
		if err := call(); store.ErrorCode(err) != want {
			w.t.Errorf("%s: %v, want %s", what, err, want)
		}
	})
}

func TestLedger_ConservesEveryInstrumentUnderConcurrency(t *testing.T) {
	seed := propertySeed(t)
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		const parties, workers, opsPerWorker = 8, 8, 50
		w := newLedgerWorld(t, b, parties)
		start := time.Now()

		// Every party starts with something to spend.
		for i := range parties {
			w.tap(rand.New(rand.NewPCG(seed, uint64(100+i))), i, store.CC)
		}

		// Phase 1: a random concurrent workload of calls that commit and calls that fail.
		var wg sync.WaitGroup
		for g := range workers {
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			wg.Go(func() {
				for range opsPerWorker {
					i := rng.IntN(parties)
					switch r := rng.IntN(100); {
					case r < 12:
						w.tap(rng, i, store.CC)
					case r < 20:
						w.tap(rng, i, store.USDCx)
					case r < 60:
						w.transfer(rng, i)
					case r < 67:
						w.tooLarge(rng, i)
					case r < 80:
						w.stalePair(rng, i)
					case r < 85:
						w.replay(rng)
					case r < 90:
						w.doubleExecute(rng, i)
					default:
						w.badExecutes(rng, i)
					}
				}
			})
		}
		wg.Wait()
		t.Logf("%s: concurrent phase %v", b.Name, time.Since(start).Round(time.Millisecond))

		// Phase 2: failing calls one at a time, each checked to change nothing.
		w.failuresChangeNothing(rand.New(rand.NewPCG(seed, 1000)))

		if w.stats["stale pair contested"] == 0 || w.stats["transfer committed"] == 0 || w.stats["double execute committed once"] == 0 {
			t.Errorf("the workload exercised too little: %v", w.stats)
		}
		t.Logf("%s: %d commits, %v", b.Name, len(w.commits), w.stats)
		w.verify()
		storetest.CheckLog(t, w.s)
		t.Logf("%s: total %v", b.Name, time.Since(start).Round(time.Millisecond))
	})
}

// failuresChangeNothing runs every kind of failing call against a quiet ledger.
func (w *ledgerWorld) failuresChangeNothing(rng *rand.Rand) {
	t, s, ctx := w.t, w.s, context.Background()
	// The richest party pays, so every transfer here is affordable.
	i := 0
	for k := range w.parties {
		if w.ccUnits(w.parties[k]) > w.ccUnits(w.parties[i]) {
			i = k
		}
	}
	p, q := w.parties[i], w.parties[(i+1)%len(w.parties)]
	bal := w.ccUnits(p)
	if bal < 4 {
		t.Fatalf("party %s has only %d units", p.ID, bal)
	}

	w.unchanged("transfer of more than the balance", store.CodeInsufficientFunds, func() error {
		_, err := s.PrepareCCTransfer(ctx, p.ID, q.ID, mustParse(t, unitsString(bal+1, store.CC), store.CC))
		return err
	})
	w.unchanged("transfer to a party not onboarded", store.CodePartyNotFound, func() error {
		_, err := s.PrepareCCTransfer(ctx, p.ID, "ghost::1220"+strings.Repeat("ab", 32), mustParse(t, "1", store.CC))
		return err
	})
	w.unchanged("transfer to a malformed party id", store.CodeInvalidRequest, func() error {
		_, err := s.PrepareCCTransfer(ctx, p.ID, "nobody", mustParse(t, "1", store.CC))
		return err
	})
	w.unchanged("tap of more than a tap credits", store.CodeInvalidRequest, func() error {
		_, err := s.PrepareTap(ctx, p.ID, store.CC, mustParse(t, "1000000.0000000001", store.CC))
		return err
	})

	// Two transfers of the whole balance name the same holdings; the second is stale.
	first := w.prepareTransfer(i, (i+1)%len(w.parties), bal)
	second := w.prepareTransfer(i, (i+2)%len(w.parties), bal)
	if first == nil || second == nil || !overlap(preparedInputs(t, first), preparedInputs(t, second)) {
		t.Fatal("two transfers of the whole balance do not name the same holdings")
	}
	if ok, err := w.executeTransfer(first, i, (i+1)%len(w.parties), bal, false); !ok {
		t.Fatalf("first of two transfers: %v", err)
	}
	w.unchanged("second transfer over spent holdings", store.CodeStale, func() error {
		_, err := p.Execute(s, store.KindCCTransfer, second)
		return err
	})

	// Bad executes of a pending transfer leave it executable.
	j := (i + 1) % len(w.parties)
	r := w.parties[j]
	u := randomUnits(rng, w.ccUnits(r), store.CC)
	pending := w.prepareTransfer(j, i, u)
	if pending == nil {
		t.Fatal("no pending transfer")
	}
	w.unchanged("execute signed by another party", store.CodeInvalidSignature, func() error {
		_, err := executeWith(s, store.KindCCTransfer, pending, r.ID, p.Key)
		return err
	})
	w.unchanged("execute by a caller other than actAs", store.CodePartyMismatch, func() error {
		_, err := executeWith(s, store.KindCCTransfer, pending, p.ID, r.Key)
		return err
	})
	w.unchanged("execute of a transfer at the tap's endpoint", store.CodePreparedNotFound, func() error {
		_, err := r.Execute(s, store.KindTap, pending)
		return err
	})
	w.unchanged("execute of a hash never prepared", store.CodePreparedNotFound, func() error {
		_, err := r.Execute(s, store.KindCCTransfer, &store.Prepared{Hash: bytes.Repeat([]byte{7}, 32)})
		return err
	})
	w.unchanged("execute of a short hash", store.CodeInvalidRequest, func() error {
		_, err := r.Execute(s, store.KindCCTransfer, &store.Prepared{Hash: []byte{1, 2, 3}})
		return err
	})
	for _, c := range w.commits[len(w.commits)-3:] {
		w.changesNothing("replay of a committed "+c.kind, func() {
			if got, err := c.actAs.Execute(s, c.kind, c.prep); err != nil || !bytes.Equal(got, c.receipt) {
				t.Errorf("replay answered %s, %v; want the first receipt %s", got, err, c.receipt)
			}
		})
	}
	if ok, err := w.executeTransfer(pending, j, i, u, false); !ok {
		t.Fatalf("a transfer refused for a bad signature and a wrong caller no longer executes: %v", err)
	}

	// A prepared transaction past its lifetime.
	late := w.prepareTransfer(i, j, 1)
	w.clock.Advance(s.Config().PreparedTTL)
	w.unchanged("execute after the prepared transaction expired", store.CodePreparedExpired, func() error {
		_, err := p.Execute(s, store.KindCCTransfer, late)
		return err
	})

	// Bad amounts never reach the ledger.
	for _, c := range []struct {
		in   string
		inst store.Instrument
	}{
		{"-1", store.CC}, {"0", store.CC}, {"0.0", store.CC}, {"1e3", store.CC}, {"1.00000000001", store.CC},
		{"0.0000001", store.USDCx}, {"", store.CC}, {" 1", store.CC}, {"1 ", store.CC}, {"1.", store.CC},
		{".5", store.CC}, {"+1", store.CC}, {"0x10", store.CC}, {"1,5", store.CC}, {"NaN", store.CC},
		{"10000000000000000000000000000", store.CC},
	} {
		w.unchanged(fmt.Sprintf("amount %q of %s", c.in, c.inst), store.CodeInvalidRequest, func() error {
			_, err := store.ParseAmount(c.in, c.inst)
			return err
		})
	}
	for _, c := range []struct {
		in   string
		inst store.Instrument
	}{
		{"1", store.CC}, {"0.0000000001", store.CC}, {"12.5", store.CC}, {"007", store.CC}, {"0.000001", store.USDCx},
	} {
		if _, err := store.ParseAmount(c.in, c.inst); err != nil {
			t.Errorf("ParseAmount(%q, %s): %v", c.in, c.inst, err)
		}
	}
}

// verify checks the ledger against everything the test saw commit.
func (w *ledgerWorld) verify() {
	t, s, ctx := w.t, w.s, context.Background()

	minted := map[store.Instrument]int64{}
	rewards := map[string]int64{}
	rewarded := map[string][]string{} // party -> updateIds of its rewarded transfers
	created := map[string]string{}    // cid -> update that created it
	consumed := map[string]string{}   // cid -> update that consumed it
	type key struct {
		owner string
		inst  store.Instrument
	}
	holdings := map[string]*store.Holding{} // every holding the receipts created
	ids := map[string]bool{}

	for _, c := range w.commits {
		id := c.parsed.UpdateID
		if ids[id] {
			t.Errorf("update %s answered twice", id)
		}
		ids[id] = true
		u, events, err := s.UpdateByID(ctx, id)
		if err != nil {
			t.Errorf("a 200 from execute is not in the update log: %s: %v", id, err)
			continue
		}
		if u.Kind != c.kind || u.ActAs != c.actAs.ID {
			t.Errorf("update %s is %s by %s, want %s by %s", id, u.Kind, u.ActAs, c.kind, c.actAs.ID)
		}
		var inputs, outputs []*store.Holding
		var createdCIDs []string
		for _, e := range events {
			if e.Template != "holdings" {
				t.Errorf("update %s %s a %s contract", id, e.Event, e.Template)
				continue
			}
			h, err := s.HoldingByID(ctx, e.CID)
			if err != nil {
				t.Errorf("update %s %s holding %s: %v", id, e.Event, e.CID, err)
				continue
			}
			switch e.Event {
			case "consumed":
				if prev, ok := consumed[e.CID]; ok {
					t.Errorf("holding %s consumed twice: by %s and %s", e.CID, prev, id)
				}
				consumed[e.CID] = id
				if h.ConsumedUpdate == nil || *h.ConsumedUpdate != id {
					t.Errorf("holding %s: consumed by %v, the log says %s", e.CID, h.ConsumedUpdate, id)
				}
				inputs = append(inputs, h)
			case "created":
				created[e.CID] = id
				createdCIDs = append(createdCIDs, e.CID)
				if h.CreatedUpdate != id {
					t.Errorf("holding %s: created by %s, the log says %s", e.CID, h.CreatedUpdate, id)
				}
				if !h.Amount.IsPositive() {
					t.Errorf("holding %s holds %s", e.CID, h.Amount)
				}
				outputs = append(outputs, h)
				holdings[e.CID] = h
			default:
				t.Errorf("update %s has an event %q", id, e.Event)
			}
		}
		if !slices.Equal(createdCIDs, c.parsed.CIDs) {
			t.Errorf("update %s created %v, its receipt lists %v", id, createdCIDs, c.parsed.CIDs)
		}
		sumOf := func(hs []*store.Holding, owner string) int64 {
			var n int64
			for _, h := range hs {
				if h.Instrument != c.inst {
					t.Errorf("update %s moved %s, want only %s", id, h.Instrument, c.inst)
				}
				if owner == "" || h.Owner == owner {
					n += amountUnits(t, h.Amount, h.Instrument)
				}
			}
			return n
		}
		switch c.kind {
		case store.KindTap:
			if len(inputs) != 0 || len(outputs) != 1 || outputs[0].Owner != c.actAs.ID || sumOf(outputs, "") != c.units {
				t.Errorf("tap %s of %s %s: consumed %d, created %+v", id, unitsString(c.units, c.inst), c.inst, len(inputs), outputs)
			}
			minted[c.inst] += c.units
			if u.Reward != nil {
				t.Errorf("tap %s earned a reward %s", id, u.Reward)
			}
		case store.KindCCTransfer:
			in, out := sumOf(inputs, ""), sumOf(outputs, "")
			if in != out || len(inputs) == 0 {
				t.Errorf("transfer %s spends %d units in %d holdings, creates %d", id, in, len(inputs), out)
			}
			for _, h := range inputs {
				if h.Owner != c.actAs.ID {
					t.Errorf("transfer %s by %s spent %s's holding %s", id, c.actAs.ID, h.Owner, h.CID)
				}
			}
			// CC another party's transfer gave the sender within the reward window earns nothing.
			var fresh int64
			for _, h := range inputs {
				cu, _, err := s.UpdateByID(ctx, h.CreatedUpdate)
				if err == nil && cu.Kind == store.KindCCTransfer && cu.ActAs != c.actAs.ID && u.RecordedAt.Sub(h.CreatedAt.Time) < store.RewardWindow {
					fresh += amountUnits(t, h.Amount, h.Instrument)
				}
			}
			want := rewardUnits(max(0, c.units-fresh))
			if c.receiver == c.actAs.ID {
				want = 0
			} else if got := sumOf(outputs, c.receiver); got != c.units {
				t.Errorf("transfer %s credits the receiver %d units, want %d", id, got, c.units)
			}
			switch {
			case want == 0 && u.Reward != nil:
				t.Errorf("transfer %s of %s earned %s, want nothing", id, unitsString(c.units, store.CC), u.Reward)
			case want > 0 && (u.Reward == nil || amountUnits(t, *u.Reward, store.CC) != want):
				t.Errorf("transfer %s of %s earned %v, want %s", id, unitsString(c.units, store.CC), u.Reward, unitsString(want, store.CC))
			case want > 0:
				rewards[c.actAs.ID] += want
				rewarded[c.actAs.ID] = append(rewarded[c.actAs.ID], id)
			}
		}
	}
	for cid, by := range consumed {
		if _, ok := created[cid]; !ok {
			t.Errorf("update %s consumed %s, which no update the test saw created", by, cid)
		}
	}
	active := map[string]*store.Holding{} // what the receipts leave unspent
	for cid, h := range holdings {
		if _, ok := consumed[cid]; !ok {
			active[cid] = h
		}
	}

	// Supply = what was tapped = what the parties hold = what the receipts leave unspent.
	supply, err := s.Supply(ctx)
	if err != nil {
		t.Fatal(err)
	}
	held := map[key][2]int64{}
	for _, h := range active {
		k := key{h.Owner, h.Instrument}
		v := held[k]
		held[k] = [2]int64{v[0] + amountUnits(t, h.Amount, h.Instrument), v[1] + 1}
	}
	for _, inst := range store.Instruments {
		var sum int64
		for _, p := range w.parties {
			b := balanceOf(t, s, p, inst)
			got := [2]int64{amountUnits(t, b.Amount, inst), int64(b.Holdings)}
			if got != held[key{p.ID, inst}] {
				t.Errorf("%s holds %s %s in %d holdings; the receipts leave it %s in %d", p.ID, b.Amount, inst, b.Holdings,
					unitsString(held[key{p.ID, inst}][0], inst), held[key{p.ID, inst}][1])
			}
			if !b.Locked.IsZero() {
				t.Errorf("%s has %s %s locked", p.ID, b.Locked, inst)
			}
			sum += got[0]
		}
		if got := amountUnits(t, supply[inst], inst); got != minted[inst] || sum != minted[inst] {
			t.Errorf("%s: supply %s, parties hold %s, taps minted %s", inst, supply[inst], unitsString(sum, inst), unitsString(minted[inst], inst))
		}
	}

	// The log holds exactly the operator's creation, the onboardings and what the test saw commit.
	snap := w.snapshot()
	for name, want := range map[string]int64{
		"updates":         int64(1 + len(w.parties) + len(w.commits)),
		"holdings":        int64(len(created)),
		"active holdings": int64(len(active)),
	} {
		if snap.Tables[name] != want {
			t.Errorf("%s: the store has %d, the test saw %d", name, snap.Tables[name], want)
		}
	}

	// Rewards: 10 bps of each transfer to another party, and the history lists those updates.
	for _, p := range w.parties {
		got, err := s.RewardBalance(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if amountUnits(t, got, store.CC) != rewards[p.ID] {
			t.Errorf("%s has %s in rewards, want %s", p.ID, got, unitsString(rewards[p.ID], store.CC))
		}
		var history []store.RewardEntry
		req := store.PageRequest{Limit: 7}
		for {
			page, err := s.RewardHistory(ctx, p.ID, req)
			if err != nil {
				t.Fatal(err)
			}
			history = append(history, page.Items...)
			if page.Cursor == "" {
				break
			}
			req.Cursor = page.Cursor
		}
		var listed []string
		for k, e := range history {
			listed = append(listed, e.UpdateID)
			if k > 0 && e.Offset >= history[k-1].Offset {
				t.Errorf("%s reward history is not newest first at %d: offset %d after %d", p.ID, k, e.Offset, history[k-1].Offset)
			}
			if e.Kind != store.KindCCTransfer {
				t.Errorf("%s reward history lists a %s", p.ID, e.Kind)
			}
		}
		want := slices.Clone(rewarded[p.ID])
		slices.Sort(want)
		slices.Sort(listed)
		if !slices.Equal(listed, want) {
			t.Errorf("%s reward history lists %d updates %v, want %d %v", p.ID, len(listed), listed, len(want), want)
		}
	}
}
