package store

import (
	"time"

	"github.com/shopspring/decimal"
	"github.com/uptrace/bun"

	"marketd/store/ledger"
	"marketd/store/wallet"
)

// Kinds of swap update. Each prepared kind is an entry of actions (registerKind).
const (
	KindLPQuote       = wallet.KindLPQuote
	KindLPQuoteCancel = wallet.KindLPQuoteCancel
	KindLPClaimFees   = wallet.KindLPClaimFees
	KindSwapIntent    = wallet.KindSwapIntent
	KindIntentCancel  = wallet.KindIntentCancel
	KindSwapFill      = "swap.fill"   // a waiting intent filled; committed by the operator, not prepared
	KindSwapExpired   = "swap.expire" // an LP quote or intent past its expiry; committed by the operator
)

const (
	templateLPQuote = "lp_quotes"
	templateLPFee   = "lp_fees"
	templateIntent  = "swap_intents"

	SideAsk = wallet.SideAsk // sells base for quote: locks size base
	SideBid = wallet.SideBid // buys base with quote: locks price*size quote

	IntentPending   = "pending"
	IntentFilled    = "filled"
	IntentCancelled = "cancelled"
	IntentExpired   = "expired"

	maxSwapLifetime = 30 * 24 * time.Hour // the furthest expiresAt or deadline accepted
	maxBookWalk     = 100                 // LP quotes one intent may fill from
)

var bpsDivisor = decimal.NewFromInt(10000)

// Swaps' prepared kinds.
func init() {
	registerKind(KindLPQuote, applyLPQuote)
	registerKind(KindLPQuoteCancel, applyLPQuoteCancel)
	registerKind(KindLPClaimFees, applyClaimFees)
	registerBatchedKind(KindSwapIntent, applySwapIntent, intentBatchKey)
	registerKind(KindIntentCancel, applyIntentCancel)
}

// The swap contracts' templates, as the ledger checks them. An LP quote and an intent are
// offers; an LP fee folds (each fill of the LP's quote consumes it and creates it again with
// the fill's fee added); LP quotes and fees give their observers their pool and, for a quote,
// its price and remaining size (the pool figures, swap_pool_figures.go).
func init() {
	ledger.RegisterTemplate(templateLPQuote, ledger.TemplateSpec{Owner: "lp", Valued: true, Offer: true, Payload: [3]string{"pool_id", "price", "remaining"}})
	ledger.RegisterTemplate(templateLPFee, ledger.TemplateSpec{Owner: "lp", Valued: true, Folds: true, Payload: [3]string{"pool_id", "", ""}})
	ledger.RegisterTemplate(templateIntent, ledger.TemplateSpec{Owner: "taker", Valued: true, Offer: true})
}

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

func (*LPQuote) Template() string              { return templateLPQuote }
func (q *LPQuote) Controller() string          { return q.LP }
func (q *LPQuote) Holds() (Instrument, Amount) { return q.Instrument, q.Amount }

// Payload is what the pool figures read of a quote: its pool, price and remaining size.
func (q *LPQuote) Payload() ledger.Payload {
	return ledger.Payload{Key: q.PoolID, Figures: [2]Amount{q.Price, q.Remaining}}
}

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

func (*LPFee) Template() string              { return templateLPFee }
func (f *LPFee) Controller() string          { return f.LP }
func (f *LPFee) Holds() (Instrument, Amount) { return f.Instrument, f.Amount }

// Payload is what the pool figures read of a fee: its pool.
func (f *LPFee) Payload() ledger.Payload { return ledger.Payload{Key: f.PoolID} }

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

func (*SwapIntent) Template() string              { return templateIntent }
func (i *SwapIntent) Controller() string          { return i.Taker }
func (i *SwapIntent) Holds() (Instrument, Amount) { return i.Instrument, i.Amount }

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
