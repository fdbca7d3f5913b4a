package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/shopspring/decimal"
	"github.com/uptrace/bun"
)

// Kinds of swap update. Each prepared kind is an entry of actions.
const (
	KindLPQuote       = "swap.lp-quote"
	KindLPQuoteCancel = "swap.lp-quote-cancel"
	KindLPClaimFees   = "swap.lp-claim-fees"
	KindSwapIntent    = "swap.intent"
	KindIntentCancel  = "swap.intent-cancel"
	KindSwapFill      = "swap.fill"   // a waiting intent filled; committed by the operator, not prepared
	KindSwapExpired   = "swap.expire" // an LP quote or intent past its expiry; committed by the operator
)

const (
	templateLPQuote = "lp_quotes"
	templateLPFee   = "lp_fees"
	templateIntent  = "swap_intents"

	SideAsk = "ask" // sells base for quote: locks size base
	SideBid = "bid" // buys base with quote: locks price*size quote

	IntentPending   = "pending"
	IntentFilled    = "filled"
	IntentCancelled = "cancelled"
	IntentExpired   = "expired"

	maxSwapLifetime = 30 * 24 * time.Hour // the furthest expiresAt or deadline accepted
	maxBookWalk     = 100                 // LP quotes one intent may fill from
)

var bpsDivisor = decimal.NewFromInt(10000)

// LPQuote is one version of an LP's standing offer on a pool: an ask sells up to Remaining
// base at Price, a bid buys it. It holds what backs it (Instrument, Amount): a fill
// consumes the version and creates the next, so QuoteID names the quote across versions.
type LPQuote struct {
	bun.BaseModel `bun:"table:lp_quotes"`
	Lifecycle

	QuoteID     string     `bun:"quote_id"`
	PoolID      string     `bun:"pool_id"`
	LP          string     `bun:"lp"`
	Side        string     `bun:"side"`
	Price       Amount     `bun:"price"`
	Size        Amount     `bun:"size"`
	Remaining   Amount     `bun:"remaining"`
	FeesAccrued Amount     `bun:"fees_accrued"`
	Instrument  Instrument `bun:"instrument"`
	Amount      Amount     `bun:"amount"`
	PostedAt    Timestamp  `bun:"posted_at"`
	ExpiresAt   Timestamp  `bun:"expires_at"`
}

func (*LPQuote) template() string                   { return templateLPQuote }
func (q *LPQuote) owner() string                    { return q.LP }
func (q *LPQuote) value() (Instrument, Amount)      { return q.Instrument, q.Amount }
func (q *LPQuote) pooled() (string, Amount, Amount) { return q.PoolID, q.Price, q.Remaining }

// LPFee is what the pool's fills retained for the LP in one instrument, until claim-fees
// pays it out. There is one live LPFee per pool, LP and instrument: each fill consumes it and
// creates it again with its fee added, so a claim after any number of fills consumes at most
// one contract per instrument.
type LPFee struct {
	bun.BaseModel `bun:"table:lp_fees"`
	Lifecycle

	LP         string     `bun:"lp"`
	PoolID     string     `bun:"pool_id"`
	QuoteID    string     `bun:"quote_id"`
	Instrument Instrument `bun:"instrument"`
	Amount     Amount     `bun:"amount"`
}

func (*LPFee) template() string                   { return templateLPFee }
func (f *LPFee) owner() string                    { return f.LP }
func (f *LPFee) value() (Instrument, Amount)      { return f.Instrument, f.Amount }
func (f *LPFee) pooled() (string, Amount, Amount) { return f.PoolID, Zero, Zero }

// SwapIntent is a pending intent: it holds what the taker sells until it fills, is
// cancelled or expires.
type SwapIntent struct {
	bun.BaseModel `bun:"table:swap_intents"`
	Lifecycle

	Taker      string     `bun:"taker"`
	PoolID     string     `bun:"pool_id"`
	Instrument Instrument `bun:"instrument"`
	Amount     Amount     `bun:"amount"`
	MinReceive Amount     `bun:"min_receive"`
	Deadline   Timestamp  `bun:"deadline"`
}

func (*SwapIntent) template() string              { return templateIntent }
func (i *SwapIntent) owner() string               { return i.Taker }
func (i *SwapIntent) value() (Instrument, Amount) { return i.Instrument, i.Amount }

// IntentView is an intent's status and outcome, whether it waited or filled at once.
type IntentView struct {
	bun.BaseModel `bun:"table:swap_intent_views"`

	IntentCID    string     `bun:"intent_cid,pk"`
	Taker        string     `bun:"taker"`
	PoolID       string     `bun:"pool_id"`
	Sell         Instrument `bun:"sell"`
	Amount       Amount     `bun:"amount"`
	MinReceive   Amount     `bun:"min_receive"`
	Deadline     Timestamp  `bun:"deadline"`
	Status       string     `bun:"status"`
	Receive      Instrument `bun:"receive"`
	Received     *Amount    `bun:"received"`
	Fee          *Amount    `bun:"fee"`
	CreatedAt    Timestamp  `bun:"created_at"`
	ClosedUpdate *string    `bun:"closed_update"`
	ClosedAt     *Timestamp `bun:"closed_at"`
	ClosedOffset *int64     `bun:"closed_offset,scanonly"` // the closing update's offset, set as it commits
	LedgerOffset int64      `bun:"ledger_offset,scanonly"` // the same, as the feeds read it
	LogIndex     *int64     `bun:"log_index,scanonly"`     // the closing update's index in the transparency log, where a read joins it

	Fills []Fill `bun:"-"`
}

// Fill is what one LP quote gave an intent: amountIn of what the taker sold, amountOut
// (gross) of what it bought, and the fee retained from amountOut for the LP.
type Fill struct {
	bun.BaseModel `bun:"table:swap_fills"`

	IntentCID string `bun:"intent_cid,pk" json:"-"`
	Seq       int    `bun:"seq,pk" json:"-"`
	UpdateID  string `bun:"update_id" json:"-"`
	PoolID    string `bun:"pool_id" json:"-"`
	QuoteID   string `bun:"quote_id" json:"lpQuoteCid"`
	LP        string `bun:"lp" json:"lp"`
	Price     Amount `bun:"price" json:"price"`
	AmountIn  Amount `bun:"amount_in" json:"amountIn"`
	AmountOut Amount `bun:"amount_out" json:"amountOut"`
	Fee       Amount `bun:"fee" json:"fee"`
}

// ---- locking funds

// lockFunds is what a party locks into an offer: the holdings spent and the change.
type lockFunds struct {
	Instrument Instrument     `json:"instrument"`
	Amount     Amount         `json:"amount"`
	Inputs     []spentHolding `json:"inputs"`
	Change     Amount         `json:"change"`
}

// prepareLock selects the party's holdings of inst that cover amount.
func (s *Store) prepareLock(ctx context.Context, party string, inst Instrument, amount Amount) (*lockFunds, []string, error) {
	hs, claimed, err := s.spendableHoldings(ctx, party, inst)
	if err != nil {
		return nil, nil, err
	}
	picked, err := selectHoldings(hs, claimed, amount)
	if err != nil {
		return nil, nil, err
	}
	l := &lockFunds{Instrument: inst, Amount: amount, Change: Zero}
	sum := Zero
	claims := make([]string, len(picked))
	for i, h := range picked {
		l.Inputs = append(l.Inputs, spentHolding{CID: h.CID, Amount: h.Amount})
		sum = sum.Add(h.Amount)
		claims[i] = h.CID
	}
	l.Change = sum.Sub(amount)
	return l, claims, nil
}

// add consumes the locked holdings in t and returns the change to owner.
func (l *lockFunds) add(t *Transaction, owner string) {
	for _, in := range l.Inputs {
		t.Consume = append(t.Consume, ContractRef{templateHolding, in.CID})
	}
	if l.Change.IsPositive() {
		t.Create = append(t.Create, &Holding{Owner: owner, Instrument: l.Instrument, Amount: l.Change})
	}
}

// swapDeadline checks a client's expiry instant: in the future, and not too far.
func (s *Store) swapDeadline(field string, at int64) error {
	now := s.now()
	switch t := time.Unix(at, 0); {
	case !t.After(now):
		return Errorf(CodeInvalidRequest, "%s must be in the future", field)
	case t.After(now.Add(maxSwapLifetime)):
		return Errorf(CodeInvalidRequest, "%s must be at most %s ahead", field, maxSwapLifetime)
	}
	return nil
}

// ---- LP quotes

// LPQuoteTerms is what an LP publishes.
type LPQuoteTerms struct {
	PoolID    string
	Side      string
	Price     string
	Size      string
	ExpiresAt int64
}

type lpQuoteEffects struct {
	LP        string    `json:"lp"`
	PoolID    string    `json:"poolId"`
	Side      string    `json:"side"`
	Price     Amount    `json:"price"`
	Size      Amount    `json:"size"`
	ExpiresAt int64     `json:"expiresAt"`
	Lock      lockFunds `json:"lock"`
}

// PrepareLPQuote prepares publishing an LP quote, which locks what backs it: an ask `size`
// base, a bid `price*size` quote (rounded up to the quote's precision).
func (s *Store) PrepareLPQuote(ctx context.Context, lp string, q LPQuoteTerms) (*Prepared, error) {
	if q.PoolID == "" {
		return nil, Errorf(CodeInvalidRequest, "poolId is required")
	}
	if q.Side != SideAsk && q.Side != SideBid {
		return nil, Errorf(CodeInvalidRequest, "side must be ask or bid")
	}
	pool, err := s.PoolByID(ctx, q.PoolID)
	if err != nil {
		return nil, err
	}
	price, err := ParseAmount(q.Price, pool.Quote)
	if err != nil {
		return nil, fieldError("price", err)
	}
	size, err := ParseAmount(q.Size, pool.Base)
	if err != nil {
		return nil, fieldError("size", err)
	}
	if err := s.swapDeadline("expiresAt", q.ExpiresAt); err != nil {
		return nil, err
	}
	inst, lock := pool.Base, size
	if q.Side == SideBid {
		inst, lock = pool.Quote, Amount{price.d.Mul(size.d).RoundCeil(pool.Quote.Decimals())}
	}
	if err := checkAmountBounds(lock); err != nil {
		return nil, err
	}
	funds, claims, err := s.prepareLock(ctx, lp, inst, lock)
	if err != nil {
		return nil, err
	}
	e := lpQuoteEffects{LP: lp, PoolID: pool.PoolID, Side: q.Side, Price: price, Size: size, ExpiresAt: q.ExpiresAt, Lock: *funds}
	summary := map[string]any{
		"action": fmt.Sprintf("quote to %s %s %s at %s %s each on %s", map[string]string{SideAsk: "sell", SideBid: "buy"}[q.Side], size, pool.Base, price, pool.Quote, pool.PoolID),
		"lp":     lp, "poolId": pool.PoolID, "side": q.Side, "price": price, "size": size, "expiresAt": q.ExpiresAt,
		"locks": map[string]any{"instrument": inst, "amount": lock}, "change": funds.Change,
	}
	return s.prepareAs(ctx, KindLPQuote, lp, e, summary, claims)
}

// fieldError names the field in an amount's error.
func fieldError(field string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return Errorf(e.Code, "%s: %s", field, e.Message)
	}
	return err
}

// QuoteResult is what an LP quote execute adds to the receipt.
type QuoteResult struct {
	CID string `json:"cid"`
}

func applyLPQuote(ctx context.Context, tx *Tx, u *Update, e *lpQuoteEffects) (any, error) {
	expires := At(time.Unix(e.ExpiresAt, 0))
	if !tx.now.Before(expires.Time) {
		return nil, Errorf(CodeStale, "the LP quote expired before it was executed; prepare it again")
	}
	if _, err := poolByID(ctx, tx, e.PoolID); err != nil {
		return nil, err
	}
	q := &LPQuote{
		QuoteID: contractID(u.UpdateID, 0), PoolID: e.PoolID, LP: e.LP, Side: e.Side, Price: e.Price, Size: e.Size,
		Remaining: e.Size, FeesAccrued: Zero, Instrument: e.Lock.Instrument, Amount: e.Lock.Amount,
		PostedAt: At(tx.now), ExpiresAt: expires,
	}
	t := &Transaction{Create: []Contract{q}}
	e.Lock.add(t, e.LP)
	if err := tx.s.ledger.Commit(ctx, tx, u, t); err != nil {
		return nil, err
	}
	if q.CID != q.QuoteID {
		return nil, fmt.Errorf("swap: quote id %s is not its first cid %s", q.QuoteID, q.CID)
	}
	tx.afterCommit(func() { tx.s.retryPool(e.PoolID) })
	return QuoteResult{CID: q.QuoteID}, nil
}

// activeQuote returns the live version of quote quoteID.
func activeQuote(ctx context.Context, db bun.IDB, quoteID string) (*LPQuote, error) {
	var qs []LPQuote
	if err := db.NewSelect().Model(&qs).Where("quote_id = ?", quoteID).Where("consumed_update IS NULL").Scan(ctx); err != nil {
		return nil, err
	}
	if len(qs) == 0 {
		return nil, nil
	}
	return &qs[0], nil
}

type lpCancelEffects struct {
	LP      string `json:"lp"`
	PoolID  string `json:"poolId"`
	QuoteID string `json:"cid"`
}

// PrepareLPQuoteCancel prepares withdrawing the LP's quote cid; execute releases whatever
// the quote still locks then.
func (s *Store) PrepareLPQuoteCancel(ctx context.Context, lp, cid string) (*Prepared, error) {
	if cid == "" {
		return nil, Errorf(CodeInvalidRequest, "cid is required")
	}
	var first []LPQuote
	if err := s.db.NewSelect().Model(&first).Where("quote_id = ?", cid).Limit(1).Scan(ctx); err != nil {
		return nil, err
	}
	if len(first) == 0 {
		return nil, Errorf(CodeNotFound, "no LP quote %s", truncate(cid, 80))
	}
	if first[0].LP != lp {
		return nil, Errorf(CodePartyMismatch, "LP quote %s belongs to %s, not to %s", cid, first[0].LP, lp)
	}
	q, err := activeQuote(ctx, s.db, cid)
	if err != nil {
		return nil, err
	}
	if q == nil {
		return nil, Errorf(CodeConflict, "LP quote %s is no longer open (filled, cancelled or expired)", cid)
	}
	e := lpCancelEffects{LP: lp, PoolID: q.PoolID, QuoteID: cid}
	summary := map[string]any{
		"action": fmt.Sprintf("cancel LP quote %s and release what it still locks", cid), "lp": lp, "poolId": q.PoolID, "cid": cid,
		"releases": map[string]any{"instrument": q.Instrument, "amount": q.Amount},
	}
	return s.prepareAs(ctx, KindLPQuoteCancel, lp, e, summary, []string{q.CID})
}

func applyLPQuoteCancel(ctx context.Context, tx *Tx, u *Update, e *lpCancelEffects) (any, error) {
	if _, err := tx.lockPool(ctx, e.PoolID); err != nil {
		return nil, err
	}
	q, err := activeQuote(ctx, tx, e.QuoteID)
	if err != nil {
		return nil, err
	}
	if q == nil {
		return nil, Errorf(CodeStale, "LP quote %s was filled, cancelled or expired since this was prepared", e.QuoteID)
	}
	return map[string]any{"released": map[string]any{"instrument": q.Instrument, "amount": q.Amount}}, tx.releaseQuote(ctx, u, q)
}

// releaseQuote archives a quote version and returns what it locks to its LP.
func (tx *Tx) releaseQuote(ctx context.Context, u *Update, q *LPQuote) error {
	return tx.s.ledger.Commit(ctx, tx, u, &Transaction{
		Consume: []ContractRef{{templateLPQuote, q.CID}},
		Create:  []Contract{&Holding{Owner: q.LP, Instrument: q.Instrument, Amount: q.Amount}},
	})
}

type claimEffects struct {
	LP     string                `json:"lp"`
	PoolID string                `json:"poolId"`
	Payout map[Instrument]Amount `json:"payout"`
}

// PrepareClaimFees prepares paying out the fees the pool's fills retained for the LP, as they
// stand now. Fills that come after it only add to them: execute pays what was prepared and
// leaves the rest accrued.
func (s *Store) PrepareClaimFees(ctx context.Context, lp, poolID string) (*Prepared, error) {
	if poolID == "" {
		return nil, Errorf(CodeInvalidRequest, "poolId is required")
	}
	if _, err := s.PoolByID(ctx, poolID); err != nil {
		return nil, err
	}
	fees, err := liveFees(ctx, s.db, poolID, lp)
	if err != nil {
		return nil, err
	}
	e := claimEffects{LP: lp, PoolID: poolID, Payout: map[Instrument]Amount{}}
	for _, f := range fees {
		e.Payout[f.Instrument] = e.Payout[f.Instrument].Add(f.Amount)
	}
	if len(e.Payout) == 0 {
		return nil, Errorf(CodeConflict, "no fees accrued to %s in pool %s", lp, poolID)
	}
	summary := map[string]any{"action": fmt.Sprintf("claim the fees accrued in %s", poolID), "lp": lp, "poolId": poolID, "payout": e.Payout}
	return s.prepareAs(ctx, KindLPClaimFees, lp, e, summary, nil)
}

// liveFees reads the LP's unclaimed fees in the pool: one contract per instrument, once fills
// have folded them.
func liveFees(ctx context.Context, db bun.IDB, poolID, lp string) ([]LPFee, error) {
	var fees []LPFee
	err := db.NewSelect().Model(&fees).Where("pool_id = ?", poolID).Where("lp = ?", lp).
		Where("consumed_update IS NULL").Order("cid").Scan(ctx)
	return fees, err
}

func applyClaimFees(ctx context.Context, tx *Tx, u *Update, e *claimEffects) (any, error) {
	// Fills fold fees under the pool's lock: with it, the running fees stay as read here.
	if _, err := tx.lockPool(ctx, e.PoolID); err != nil {
		return nil, err
	}
	fees, err := liveFees(ctx, tx, e.PoolID, e.LP)
	if err != nil {
		return nil, err
	}
	live := map[Instrument]Amount{}
	t := &Transaction{}
	for _, f := range fees {
		if e.Payout[f.Instrument].IsPositive() {
			live[f.Instrument] = live[f.Instrument].Add(f.Amount)
			t.Consume = append(t.Consume, ContractRef{templateLPFee, f.CID})
		}
	}
	claimed := map[Instrument]Amount{CC: Zero, USDCx: Zero}
	for _, inst := range Instruments {
		pay := e.Payout[inst]
		if !pay.IsPositive() {
			continue
		}
		if live[inst].Cmp(pay) < 0 {
			return nil, Errorf(CodeStale, "the %s fees accrued to %s in %s were claimed since this was prepared; prepare it again", inst, e.LP, e.PoolID)
		}
		t.Create = append(t.Create, &Holding{Owner: e.LP, Instrument: inst, Amount: pay})
		if rest := live[inst].Sub(pay); rest.IsPositive() {
			t.Create = append(t.Create, &LPFee{LP: e.LP, PoolID: e.PoolID, Instrument: inst, Amount: rest})
		}
		claimed[inst] = pay
	}
	if err := tx.s.ledger.Commit(ctx, tx, u, t); err != nil {
		return nil, err
	}
	return map[string]any{"claimed": claimed}, nil
}

// ---- intents

// SwapTerms is what a taker asks for.
type SwapTerms struct {
	PoolID     string
	Sell       string
	Amount     string
	MinReceive string
	Deadline   int64
}

type intentEffects struct {
	Taker      string     `json:"taker"`
	PoolID     string     `json:"poolId"`
	Sell       Instrument `json:"sell"`
	Receive    Instrument `json:"receive"`
	Amount     Amount     `json:"amount"`
	MinReceive Amount     `json:"minReceive"`
	Deadline   int64      `json:"deadline"`
	Lock       lockFunds  `json:"lock"`
}

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
	if err := s.swapDeadline("deadline", st.Deadline); err != nil {
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
	if err := tx.s.ledger.Commit(ctx, tx, u, st.t); err != nil {
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
	if !tx.now.Before(deadline.Time) {
		return nil, Errorf(CodeStale, "the intent's deadline passed before it was submitted; prepare it again")
	}
	view := &IntentView{Taker: e.Taker, PoolID: e.PoolID, Sell: e.Sell, Amount: e.Amount, MinReceive: e.MinReceive,
		Deadline: deadline, Status: IntentPending, Receive: e.Receive, CreatedAt: At(tx.now)}
	plan, err := tx.planFill(ctx, pool, e.Taker, e.Sell, e.Amount, e.MinReceive)
	if err != nil {
		return nil, err
	}
	st := &stagedIntent{t: &Transaction{}, view: view, plan: plan}
	if plan == nil {
		in := &SwapIntent{Taker: e.Taker, PoolID: e.PoolID, Instrument: e.Sell, Amount: e.Amount, MinReceive: e.MinReceive, Deadline: deadline}
		st.t.Create = append(st.t.Create, in)
		e.Lock.add(st.t, e.Taker)
		identify(tx, u, st.t)
		view.IntentCID = in.CID
		st.result = IntentResult{IntentCID: in.CID, IntentStatus: IntentPending}
		return st, nil
	}
	e.Lock.add(st.t, e.Taker)
	if err := tx.addFills(ctx, st.t, plan, e.Taker, e.Sell); err != nil {
		return nil, err
	}
	// It never waited, so no intent contract exists: its id is the one the ledger would
	// give the update's next contract, which no other contract can have.
	view.IntentCID = contractID(u.UpdateID, len(st.t.Create))
	identify(tx, u, st.t) // the quotes' next versions get their ids, for the next fill to consume
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
			f.out = f.in.MulFloor(q.Price.d, pool.Quote.Decimals())
		} else {
			// The ask sells up to its remaining base; the taker pays price per base, the
			// last chunk rounded up so the ask is never short.
			whole := Amount{q.Remaining.d.Mul(q.Price.d).RoundCeil(pool.Quote.Decimals())}
			if left.Cmp(whole) >= 0 {
				f.in, f.out = whole, q.Remaining
			} else {
				f.in = left
				f.out = Amount{left.d.Div(q.Price.d).Truncate(pool.Base.Decimals())}
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
		if q.LP != taker && q.ExpiresAt.After(tx.now) {
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
	if err := tx.flush(ctx); err != nil {
		return nil, err
	}
	key := pool.PoolID + "/" + string(sell)
	if b, ok := tx.books[key]; ok {
		return b, nil
	}
	var qs []LPQuote
	if err := tx.NewSelect().Model(&qs).Where("pool_id = ?", pool.PoolID).Where("consumed_update IS NULL").
		Where("expires_at > ?", At(tx.now)).Scan(ctx); err != nil {
		return nil, err
	}
	if tx.books == nil {
		tx.books = map[string][]*LPQuote{}
	}
	bids, asks := pool.PoolID+"/"+string(pool.Base), pool.PoolID+"/"+string(pool.Quote) // who sells base fills from bids
	tx.books[bids], tx.books[asks] = []*LPQuote{}, []*LPQuote{}
	for i := range qs {
		k := bids
		if qs[i].Side == SideAsk {
			k = asks
		}
		tx.books[k] = append(tx.books[k], &qs[i])
	}
	return tx.books[key], nil
}

// settled updates the transaction's book after p's ledger transaction committed: the
// versions it consumed go, the next ones come.
func (tx *Tx) settled(pool *Pool, sell Instrument, p *fillPlan) {
	key := pool.PoolID + "/" + string(sell)
	b, ok := tx.books[key]
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
	tx.books[key] = append(out, p.next...)
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
		t.Consume = append(t.Consume, ContractRef{templateLPQuote, q.CID})
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
	r := tx.fees[k]
	if r.in == t {
		r.live[0].Amount = r.live[0].Amount.Add(fee)
		r.live[0].QuoteID = quoteID
		return
	}
	sum := fee
	for _, old := range r.live {
		t.Consume = append(t.Consume, ContractRef{templateLPFee, old.CID})
		sum = sum.Add(old.Amount)
	}
	next := &LPFee{LP: k.lp, PoolID: k.pool, QuoteID: quoteID, Instrument: k.instrument, Amount: sum}
	t.Create = append(t.Create, next)
	tx.fees[k] = &runningFee{live: []*LPFee{next}, in: t}
}

// loadFees reads the live fees of the LPs p fills from that the transaction has not read yet.
func (tx *Tx) loadFees(ctx context.Context, p *fillPlan) error {
	if tx.fees == nil {
		tx.fees = map[feeKey]*runningFee{}
	}
	var pool string
	var lps []string
	for _, f := range p.fills {
		k := feeKey{f.q.PoolID, f.q.LP, p.receive}
		if _, ok := tx.fees[k]; !ok && f.fee.IsPositive() {
			tx.fees[k] = &runningFee{}
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
		tx.fees[k].live = append(tx.fees[k].live, &fees[i])
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
	if err := tx.later(ctx, tx.NewUpdate().Model(v).Column("status", "received", "fee", "closed_update", "closed_at").WherePK()); err != nil {
		return err
	}
	return tx.later(ctx, tx.NewInsert().Model(&fills))
}

// fillRows marks v filled by p in update u and returns the rows of its fills.
func (tx *Tx) fillRows(u *Update, v *IntentView, p *fillPlan) []Fill {
	v.Status, v.Received, v.Fee = IntentFilled, &p.received, &p.fee
	v.ClosedUpdate, v.ClosedAt = &u.UpdateID, AtPtr(tx.now)
	fills := make([]Fill, len(p.fills))
	for i, f := range p.fills {
		fills[i] = Fill{IntentCID: v.IntentCID, Seq: i, UpdateID: u.UpdateID, PoolID: v.PoolID, QuoteID: f.q.QuoteID, LP: f.q.LP,
			Price: f.q.Price, AmountIn: f.in, AmountOut: f.out, Fee: f.fee}
	}
	return fills
}

// recordIntents writes new intents' rows and their fills, one statement each.
func (tx *Tx) recordIntents(ctx context.Context, views []*IntentView, fills []Fill) error {
	if err := tx.later(ctx, tx.NewInsert().Model(&views)); err != nil {
		return err
	}
	if len(fills) == 0 {
		return nil
	}
	return tx.later(ctx, tx.NewInsert().Model(&fills))
}

type intentCancelEffects struct {
	Taker      string     `json:"taker"`
	IntentCID  string     `json:"intentCid"`
	PoolID     string     `json:"poolId"`
	Instrument Instrument `json:"instrument"`
	Amount     Amount     `json:"amount"`
}

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
	err := tx.s.ledger.Commit(ctx, tx, u, &Transaction{
		Consume: []ContractRef{{templateIntent, in.CID}},
		Create:  []Contract{&Holding{Owner: in.Taker, Instrument: in.Instrument, Amount: in.Amount}},
	})
	if err != nil {
		return err
	}
	return tx.later(ctx, tx.NewUpdate().Model((*IntentView)(nil)).Set("status = ?", status).
		Set("closed_update = ?", u.UpdateID).Set("closed_at = ?", At(tx.now)).Where("intent_cid = ?", in.CID))
}

// ---- waiting intents and expiries

// retryPool fills the pool's waiting intents that its book can fill now. It runs after a
// commit that added liquidity; a failure is logged, and the serve loop retries.
func (s *Store) retryPool(poolID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.FillWaiting(ctx, poolID); err != nil {
		s.log.Warn("filling waiting intents failed", "pool", poolID, "error", err.Error())
	}
}

// errNothingFilled rolls back a matching pass that filled nothing.
var errNothingFilled = errors.New("nothing filled")

// FillWaiting fills, oldest first, the pending intents of the pool that its book can fill
// now, each as its own update signed by the operator, in one database transaction under the
// pool's lock. It returns how many filled.
func (s *Store) FillWaiting(ctx context.Context, poolID string) (int, error) {
	var n int
	var pending []SwapIntent
	if err := s.db.NewSelect().Model(&pending).Where("pool_id = ?", poolID).Where("consumed_update IS NULL").
		Where("deadline > ?", At(s.now())).Limit(1).Scan(ctx); err != nil || len(pending) == 0 {
		return 0, err
	}
	op, err := s.OperatorParty(ctx)
	if err != nil {
		return 0, err
	}
	err = s.inTx(ctx, func(tx *Tx) error {
		n = 0
		pool, err := tx.lockPool(ctx, poolID)
		if err != nil {
			return err
		}
		var intents []SwapIntent
		if err := tx.NewSelect().Model(&intents).Where("pool_id = ?", poolID).Where("consumed_update IS NULL").
			Where("deadline > ?", At(tx.now)).OrderExpr("created_at, cid").Limit(maxBookWalk).Scan(ctx); err != nil {
			return err
		}
		for i := range intents {
			in := &intents[i]
			plan, err := tx.planFill(ctx, pool, in.Taker, in.Instrument, in.Amount, in.MinReceive)
			if err != nil {
				return err
			}
			if plan == nil {
				continue
			}
			err = tx.record(ctx, KindSwapFill, op, func(u *Update) error {
				t := &Transaction{Consume: []ContractRef{{templateIntent, in.CID}}}
				if err := tx.addFills(ctx, t, plan, in.Taker, in.Instrument); err != nil {
					return err
				}
				if err := tx.s.ledger.Commit(ctx, tx, u, t); err != nil {
					return err
				}
				tx.settled(pool, in.Instrument, plan)
				v := &IntentView{IntentCID: in.CID, PoolID: in.PoolID}
				return tx.recordFill(ctx, u, v, plan, false)
			})
			if err != nil {
				return err
			}
			n++
		}
		if n == 0 {
			return errNothingFilled
		}
		return nil
	})
	if errors.Is(err, errNothingFilled) {
		return 0, nil
	}
	return n, err
}

// ExpireSwaps releases up to limit LP quotes and pending intents whose expiry has come,
// each as its own update signed by the operator, and returns how many.
func (s *Store) ExpireSwaps(ctx context.Context, limit int) (int, error) {
	now := At(s.now())
	var quotes []LPQuote
	if err := s.db.NewSelect().Model(&quotes).Where("consumed_update IS NULL").Where("expires_at <= ?", now).
		OrderExpr("expires_at, cid").Limit(int64(limit)).Scan(ctx); err != nil {
		return 0, err
	}
	var intents []SwapIntent
	if err := s.db.NewSelect().Model(&intents).Where("consumed_update IS NULL").Where("deadline <= ?", now).
		OrderExpr("deadline, cid").Limit(int64(limit)).Scan(ctx); err != nil {
		return 0, err
	}
	if len(quotes) == 0 && len(intents) == 0 {
		return 0, nil
	}
	op, err := s.OperatorParty(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	run := func(poolID string, fn func(tx *Tx, u *Update) error) error {
		err := s.commit(ctx, KindSwapExpired, op, func(tx *Tx, u *Update) error {
			if _, err := tx.lockPool(ctx, poolID); err != nil {
				return err
			}
			return fn(tx, u)
		})
		switch {
		case err == nil:
			n++
		case ErrorCode(err) == CodeStale: // filled or cancelled meanwhile
		default:
			return err
		}
		return nil
	}
	for i := range quotes {
		q := &quotes[i]
		if err := run(q.PoolID, func(tx *Tx, u *Update) error { return tx.releaseQuote(ctx, u, q) }); err != nil {
			return n, err
		}
	}
	for i := range intents {
		in := &intents[i]
		if err := run(in.PoolID, func(tx *Tx, u *Update) error { return tx.closeIntent(ctx, u, in, IntentExpired) }); err != nil {
			return n, err
		}
	}
	return n, nil
}
