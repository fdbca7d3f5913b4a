package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/shopspring/decimal"
	"github.com/uptrace/bun"

	"marketd/store/ledger"
	"marketd/store/wallet"
)

// SwapTerms is what a taker asks for.
type SwapTerms struct {
	PoolID     string
	Sell       string
	Amount     string
	MinReceive string
	Deadline   int64
}

type intentEffects = wallet.SwapIntentEffects

// PrepareSwap prepares an intent: sell amount of one of the pool's instruments for at
// least minReceive of the other, by deadline. It fills whole at submit or waits, locked.
func (s *Store) PrepareSwap(ctx context.Context, taker string, st SwapTerms) (*Prepared, error) {
	if st.PoolID == "" {
		return nil, Errorf(CodeInvalidRequest, "poolId is required")
	}
	sell, err := ParseInstrument(st.Sell)
	if err != nil {
		return nil, err
	}
	pool, err := s.PoolByID(ctx, st.PoolID)
	if err != nil {
		return nil, err
	}
	recv, err := pool.other(sell)
	if err != nil {
		return nil, err
	}
	amount, err := ParseAmount(st.Amount, sell)
	if err != nil {
		return nil, fieldError("amount", err)
	}
	minReceive, err := parseDecimal(st.MinReceive, recv.Decimals())
	if err != nil {
		return nil, fieldError("minReceive", err)
	}
	if err := s.deadline("deadline", st.Deadline, maxSwapLifetime); err != nil {
		return nil, err
	}
	funds, claims, err := s.prepareLock(ctx, taker, sell, amount)
	if err != nil {
		return nil, err
	}
	e := intentEffects{Taker: taker, PoolID: pool.PoolID, Sell: sell, Receive: recv, Amount: amount, MinReceive: minReceive, Deadline: st.Deadline, Lock: *funds}
	summary := map[string]any{
		"action": fmt.Sprintf("swap %s %s for at least %s %s on %s by %s", amount, sell, minReceive, recv, pool.PoolID, time.Unix(st.Deadline, 0).UTC().Format(time.RFC3339)),
		"taker":  taker, "poolId": pool.PoolID, "sell": sell, "amount": amount, "receive": recv, "minReceive": minReceive,
		"deadline": st.Deadline, "feeBps": pool.FeeBps, "change": funds.Change,
	}
	return s.prepareAs(ctx, KindSwapIntent, taker, e, summary, claims)
}

// other is the pool's instrument that is not inst.
func (p *Pool) other(inst Instrument) (Instrument, error) {
	switch inst {
	case p.Base:
		return p.Quote, nil
	case p.Quote:
		return p.Base, nil
	}
	return "", Errorf(CodeInvalidRequest, "pool %s trades %s and %s, not %s", p.PoolID, p.Base, p.Quote, inst)
}

// IntentResult is what a submit adds to the receipt.
type IntentResult struct {
	IntentCID    string `json:"intentCid"`
	IntentStatus string `json:"intentStatus"`
}

func applySwapIntent(ctx context.Context, tx *Tx, u *Update, e *intentEffects) (any, error) {
	st, err := tx.stageIntent(ctx, u, e)
	if err != nil {
		return nil, err
	}
	if err := tx.s.ledger.Commit(ctx, tx.Tx, u, st.t); err != nil {
		return nil, err
	}
	v, fills := st.rows(tx, u)
	return st.result, tx.recordIntents(ctx, []*IntentView{v}, fills)
}

// stagedIntent is a submitted intent matched against the book, its ledger transaction not
// yet committed.
type stagedIntent struct {
	t      *Transaction
	view   *IntentView
	plan   *fillPlan // nil when the intent waits
	result IntentResult
}

// stageIntent matches the intent against the locked pool's book and builds its ledger
// transaction, whose contracts it names already; the transaction's book takes the fills as
// done, so the transaction must commit or roll back whole.
func (tx *Tx) stageIntent(ctx context.Context, u *Update, e *intentEffects) (*stagedIntent, error) {
	pool, err := tx.lockPool(ctx, e.PoolID)
	if err != nil {
		return nil, err
	}
	deadline := At(time.Unix(e.Deadline, 0))
	if !tx.Now().Before(deadline.Time) {
		return nil, Errorf(CodeStale, "the intent's deadline passed before it was submitted; prepare it again")
	}
	view := &IntentView{Taker: e.Taker, PoolID: e.PoolID, Sell: e.Sell, Amount: e.Amount, MinReceive: e.MinReceive,
		Deadline: deadline, Status: IntentPending, Receive: e.Receive, CreatedAt: At(tx.Now())}
	plan, err := tx.planFill(ctx, pool, e.Taker, e.Sell, e.Amount, e.MinReceive)
	if err != nil {
		return nil, err
	}
	st := &stagedIntent{t: &Transaction{}, view: view, plan: plan}
	if plan == nil {
		in := &SwapIntent{Taker: e.Taker, PoolID: e.PoolID, Instrument: e.Sell, Amount: e.Amount, MinReceive: e.MinReceive, Deadline: deadline}
		st.t.Create = append(st.t.Create, in)
		addLock(st.t, &e.Lock, e.Taker)
		ledger.Identify(tx.Tx, u, st.t)
		view.IntentCID = in.CID
		st.result = IntentResult{IntentCID: in.CID, IntentStatus: IntentPending}
		return st, nil
	}
	addLock(st.t, &e.Lock, e.Taker)
	if err := tx.addFills(ctx, st.t, plan, e.Taker, e.Sell); err != nil {
		return nil, err
	}
	// It never waited, so no intent contract exists: its id is the one the ledger would
	// give the update's next contract, which no other contract can have.
	view.IntentCID = contractID(u.UpdateID, len(st.t.Create))
	ledger.Identify(tx.Tx, u, st.t) // the quotes' next versions get their ids, for the next fill to consume
	tx.settled(pool, e.Sell, plan)
	st.result = IntentResult{IntentCID: view.IntentCID, IntentStatus: IntentFilled}
	return st, nil
}

// rows returns the committed intent's row and the rows of its fills.
func (st *stagedIntent) rows(tx *Tx, u *Update) (*IntentView, []Fill) {
	if st.plan == nil {
		return st.view, nil
	}
	return st.view, tx.fillRows(u, st.view, st.plan)
}

// fillPlan is how an intent fills from the pool's LP quotes, best price first.
type fillPlan struct {
	receive  Instrument
	fills    []plannedFill
	next     []*LPQuote // the quotes' next versions, once add has run
	received Amount     // what the taker gets: the fills' amountOut less their fees
	fee      Amount
}

type plannedFill struct {
	q                   *LPQuote
	in, out, fee, taken Amount // taken: base the quote's remaining size loses
}

// walkBook fills amount of sell from quotes, best price first. It returns the fills and
// whether they take the whole amount.
func walkBook(pool *Pool, quotes []LPQuote, sell Instrument, amount Amount) ([]plannedFill, bool) {
	sellBase := sell == pool.Base
	slices.SortFunc(quotes, func(a, b LPQuote) int {
		c := a.Price.Cmp(b.Price)
		if sellBase { // the taker sells base to bids: highest price first
			c = -c
		}
		if c != 0 {
			return c
		}
		if c := a.PostedAt.Compare(b.PostedAt.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.QuoteID, b.QuoteID)
	})
	fee := decimal.NewFromInt(int64(pool.FeeBps)).Div(bpsDivisor)
	left := amount
	var fills []plannedFill
	for i := range quotes {
		if !left.IsPositive() || len(fills) == maxBookWalk {
			break
		}
		q := &quotes[i]
		var f plannedFill
		if sellBase {
			// The bid buys up to its remaining base and pays price per base, rounded down.
			f.in = minAmount(left, q.Remaining)
			f.taken = f.in
			f.out = f.in.MulFloor(q.Price.Decimal(), pool.Quote.Decimals())
		} else {
			// The ask sells up to its remaining base; the taker pays price per base, the
			// last chunk rounded up so the ask is never short.
			whole := amountOf(q.Remaining.Decimal().Mul(q.Price.Decimal()).RoundCeil(pool.Quote.Decimals()))
			if left.Cmp(whole) >= 0 {
				f.in, f.out = whole, q.Remaining
			} else {
				f.in = left
				f.out = amountOf(left.Decimal().Div(q.Price.Decimal()).Truncate(pool.Base.Decimals()))
				if f.out.Cmp(q.Remaining) > 0 {
					f.out = q.Remaining
				}
			}
			f.taken = f.out
		}
		if !f.out.IsPositive() {
			continue // dust this quote cannot give anything for
		}
		recv, _ := pool.other(sell)
		f.fee = f.out.MulFloor(fee, recv.Decimals())
		f.q = q
		fills = append(fills, f)
		left = left.Sub(f.in)
	}
	return fills, !left.IsPositive()
}

func minAmount(a, b Amount) Amount {
	if a.Cmp(b) <= 0 {
		return a
	}
	return b
}

// bookFor reads the pool's open quotes that a taker selling sell can fill from: the other
// side's, unexpired, not the taker's own.
func bookFor(ctx context.Context, db bun.IDB, pool *Pool, taker string, sell Instrument, now time.Time) ([]LPQuote, error) {
	side := SideAsk
	if sell == pool.Base {
		side = SideBid
	}
	var qs []LPQuote
	q := db.NewSelect().Model(&qs).Where("pool_id = ?", pool.PoolID).Where("side = ?", side).
		Where("consumed_update IS NULL").Where("expires_at > ?", At(now))
	if taker != "" {
		q = q.Where("lp <> ?", taker)
	}
	return qs, q.Scan(ctx)
}

// planFill plans filling the intent whole from the locked pool's book at or above
// minReceive; nil when it cannot yet.
func (tx *Tx) planFill(ctx context.Context, pool *Pool, taker string, sell Instrument, amount, minReceive Amount) (*fillPlan, error) {
	all, err := tx.book(ctx, pool, sell)
	if err != nil {
		return nil, err
	}
	quotes := make([]LPQuote, 0, len(all))
	for _, q := range all {
		if q.LP != taker && q.ExpiresAt.After(tx.Now()) {
			quotes = append(quotes, *q)
		}
	}
	fills, whole := walkBook(pool, quotes, sell, amount)
	if !whole {
		return nil, nil
	}
	recv, _ := pool.other(sell)
	p := &fillPlan{receive: recv, fills: fills, received: Zero, fee: Zero}
	for _, f := range fills {
		p.received = p.received.Add(f.out.Sub(f.fee))
		p.fee = p.fee.Add(f.fee)
	}
	if p.received.Cmp(minReceive) < 0 || !p.received.IsPositive() {
		return nil, nil
	}
	return p, nil
}

// book returns the open quotes of the locked pool that a taker selling sell fills from (the
// other side's), read once per transaction for both sides and kept as the transaction's fills
// change them.
func (tx *Tx) book(ctx context.Context, pool *Pool, sell Instrument) ([]*LPQuote, error) {
	// Versions created earlier in this transaction must be written before a fill consumes them.
	if err := tx.Flush(ctx); err != nil {
		return nil, err
	}
	key := pool.PoolID + "/" + string(sell)
	w := tx.swapPart()
	if b, ok := w.books[key]; ok {
		return b, nil
	}
	var qs []LPQuote
	if err := tx.NewSelect().Model(&qs).Where("pool_id = ?", pool.PoolID).Where("consumed_update IS NULL").
		Where("expires_at > ?", At(tx.Now())).Scan(ctx); err != nil {
		return nil, err
	}
	if w.books == nil {
		w.books = map[string][]*LPQuote{}
	}
	bids, asks := pool.PoolID+"/"+string(pool.Base), pool.PoolID+"/"+string(pool.Quote) // who sells base fills from bids
	w.books[bids], w.books[asks] = []*LPQuote{}, []*LPQuote{}
	for i := range qs {
		k := bids
		if qs[i].Side == SideAsk {
			k = asks
		}
		w.books[k] = append(w.books[k], &qs[i])
	}
	return w.books[key], nil
}

// settled updates the transaction's book after p's ledger transaction committed: the
// versions it consumed go, the next ones come.
func (tx *Tx) settled(pool *Pool, sell Instrument, p *fillPlan) {
	key := pool.PoolID + "/" + string(sell)
	w := tx.swapPart()
	b, ok := w.books[key]
	if !ok {
		return
	}
	gone := make(map[string]bool, len(p.fills))
	for _, f := range p.fills {
		gone[f.q.CID] = true
	}
	out := make([]*LPQuote, 0, len(b)+len(p.next))
	for _, q := range b {
		if !gone[q.CID] {
			out = append(out, q)
		}
	}
	w.books[key] = append(out, p.next...)
}

// feeKey names an LP's running fee in one pool and instrument.
type feeKey struct {
	pool, lp   string
	instrument Instrument
}

// runningFee is an LP's live fee contracts in a pool and instrument as the transaction left
// them: one once a fill has folded them together (several only where fills accrued one each
// before fees were folded), made by the ledger transaction in, until that commits.
type runningFee struct {
	live []*LPFee
	in   *Transaction
}

// addFills puts p's settlement into t: each quote's version consumed and its next one (or
// what it has left) created, the taker's payment to each LP, each fee folded into its LP's
// running fee, and what the taker receives.
func (tx *Tx) addFills(ctx context.Context, t *Transaction, p *fillPlan, taker string, sell Instrument) error {
	if err := tx.loadFees(ctx, p); err != nil {
		return err
	}
	for _, f := range p.fills {
		q := f.q
		t.Consume = append(t.Consume, ContractRef{Template: templateLPQuote, CID: q.CID})
		next := *q
		next.Lifecycle = Lifecycle{}
		next.Remaining = q.Remaining.Sub(f.taken)
		next.Amount = q.Amount.Sub(f.out)
		next.FeesAccrued = q.FeesAccrued.Add(f.fee)
		switch {
		case next.Remaining.IsPositive():
			t.Create = append(t.Create, &next)
			p.next = append(p.next, &next)
		case next.Amount.IsPositive(): // filled out: rounding left over goes back to the LP
			t.Create = append(t.Create, &Holding{Owner: q.LP, Instrument: q.Instrument, Amount: next.Amount})
		}
		t.Create = append(t.Create, &Holding{Owner: q.LP, Instrument: sell, Amount: f.in})
		if f.fee.IsPositive() {
			tx.foldFee(t, feeKey{q.PoolID, q.LP, p.receive}, q.QuoteID, f.fee)
		}
	}
	t.Create = append(t.Create, &Holding{Owner: taker, Instrument: p.receive, Amount: p.received})
	return nil
}

// foldFee adds fee to the LP's running fee in t: it consumes the live one and creates it
// again with the fee added, or adds to the one t creates already.
func (tx *Tx) foldFee(t *Transaction, k feeKey, quoteID string, fee Amount) {
	w := tx.swapPart()
	r := w.fees[k]
	if r.in == t {
		r.live[0].Amount = r.live[0].Amount.Add(fee)
		r.live[0].QuoteID = quoteID
		return
	}
	sum := fee
	for _, old := range r.live {
		t.Consume = append(t.Consume, ContractRef{Template: templateLPFee, CID: old.CID})
		sum = sum.Add(old.Amount)
	}
	next := &LPFee{LP: k.lp, PoolID: k.pool, QuoteID: quoteID, Instrument: k.instrument, Amount: sum}
	t.Create = append(t.Create, next)
	w.fees[k] = &runningFee{live: []*LPFee{next}, in: t}
}

// loadFees reads the live fees of the LPs p fills from that the transaction has not read yet.
func (tx *Tx) loadFees(ctx context.Context, p *fillPlan) error {
	w := tx.swapPart()
	if w.fees == nil {
		w.fees = map[feeKey]*runningFee{}
	}
	var pool string
	var lps []string
	for _, f := range p.fills {
		k := feeKey{f.q.PoolID, f.q.LP, p.receive}
		if _, ok := w.fees[k]; !ok && f.fee.IsPositive() {
			w.fees[k] = &runningFee{}
			pool, lps = k.pool, append(lps, k.lp)
		}
	}
	if len(lps) == 0 {
		return nil
	}
	var fees []LPFee
	if err := tx.NewSelect().Model(&fees).Where("pool_id = ?", pool).Where("instrument = ?", p.receive).
		Where("lp IN (?)", bun.In(lps)).Where("consumed_update IS NULL").Order("cid").Scan(ctx); err != nil {
		return err
	}
	for i := range fees {
		k := feeKey{pool, fees[i].LP, p.receive}
		w.fees[k].live = append(w.fees[k].live, &fees[i])
	}
	return nil
}

// recordFill writes a filled intent's outcome and fills: a new row when it filled at
// submit, else the pending row updated.
func (tx *Tx) recordFill(ctx context.Context, u *Update, v *IntentView, p *fillPlan, fresh bool) error {
	fills := tx.fillRows(u, v, p)
	if fresh {
		return tx.recordIntents(ctx, []*IntentView{v}, fills)
	}
	if err := tx.Later(ctx, tx.NewUpdate().Model(v).Column("status", "received", "fee", "closed_update", "closed_at").WherePK()); err != nil {
		return err
	}
	return tx.Later(ctx, tx.NewInsert().Model(&fills))
}

// fillRows marks v filled by p in update u and returns the rows of its fills.
func (tx *Tx) fillRows(u *Update, v *IntentView, p *fillPlan) []Fill {
	v.Status, v.Received, v.Fee = IntentFilled, &p.received, &p.fee
	v.ClosedUpdate, v.ClosedAt = &u.UpdateID, AtPtr(tx.Now())
	fills := make([]Fill, len(p.fills))
	for i, f := range p.fills {
		fills[i] = Fill{IntentCID: v.IntentCID, Seq: i, UpdateID: u.UpdateID, PoolID: v.PoolID, QuoteID: f.q.QuoteID, LP: f.q.LP,
			Price: f.q.Price, AmountIn: f.in, AmountOut: f.out, Fee: f.fee}
	}
	return fills
}

// recordIntents writes new intents' rows and their fills, one statement each.
func (tx *Tx) recordIntents(ctx context.Context, views []*IntentView, fills []Fill) error {
	if err := tx.Later(ctx, tx.NewInsert().Model(&views)); err != nil {
		return err
	}
	if len(fills) == 0 {
		return nil
	}
	return tx.Later(ctx, tx.NewInsert().Model(&fills))
}

type intentCancelEffects = wallet.IntentCancelEffects

// intentFor returns the view of intentCid, which must be party's.
func (s *Store) intentFor(ctx context.Context, intentCID, party string) (*IntentView, error) {
	if intentCID == "" {
		return nil, Errorf(CodeInvalidRequest, "intentCid is required")
	}
	v := new(IntentView)
	err := s.db.NewSelect().Model(v).Where("intent_cid = ?", intentCID).Scan(ctx)
	if isNoRows(err) {
		return nil, Errorf(CodeNotFound, "no intent %s", truncate(intentCID, 80))
	}
	if err != nil {
		return nil, err
	}
	if v.Taker != party {
		return nil, Errorf(CodePartyMismatch, "intent %s belongs to %s, not to %s", intentCID, v.Taker, party)
	}
	return v, nil
}

// PrepareIntentCancel prepares cancelling the taker's pending intent, releasing its lock.
func (s *Store) PrepareIntentCancel(ctx context.Context, taker, intentCID string) (*Prepared, error) {
	v, err := s.intentFor(ctx, intentCID, taker)
	if err != nil {
		return nil, err
	}
	if v.Status != IntentPending {
		return nil, Errorf(CodeConflict, "intent %s is %s, not pending", intentCID, v.Status)
	}
	e := intentCancelEffects{Taker: taker, IntentCID: intentCID, PoolID: v.PoolID, Instrument: v.Sell, Amount: v.Amount}
	summary := map[string]any{"action": fmt.Sprintf("cancel intent %s and release %s %s", intentCID, v.Amount, v.Sell), "taker": taker, "intentCid": intentCID,
		"releases": map[string]any{"instrument": v.Sell, "amount": v.Amount}}
	return s.prepareAs(ctx, KindIntentCancel, taker, e, summary, []string{intentCID})
}

func applyIntentCancel(ctx context.Context, tx *Tx, u *Update, e *intentCancelEffects) (any, error) {
	if _, err := tx.lockPool(ctx, e.PoolID); err != nil {
		return nil, err
	}
	return nil, tx.closeIntent(ctx, u, &SwapIntent{Lifecycle: Lifecycle{CID: e.IntentCID}, Taker: e.Taker, Instrument: e.Instrument, Amount: e.Amount}, IntentCancelled)
}

// closeIntent archives a pending intent, returns what it locks to the taker and records
// why (cancelled or expired).
func (tx *Tx) closeIntent(ctx context.Context, u *Update, in *SwapIntent, status string) error {
	err := tx.s.ledger.Commit(ctx, tx.Tx, u, &Transaction{
		Consume: []ContractRef{{Template: templateIntent, CID: in.CID}},
		Create:  []Contract{&Holding{Owner: in.Taker, Instrument: in.Instrument, Amount: in.Amount}},
	})
	if err != nil {
		return err
	}
	return tx.Later(ctx, tx.NewUpdate().Model((*IntentView)(nil)).Set("status = ?", status).
		Set("closed_update = ?", u.UpdateID).Set("closed_at = ?", At(tx.Now())).Where("intent_cid = ?", in.CID))
}
