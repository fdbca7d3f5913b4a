package store

import (
	"time"

	"github.com/shopspring/decimal"

	"marketd/store/ledger"
)

// The ledger's core is its own package, marketd/store/ledger: contracts, transactions,
// updates, the check of a transaction and the embedded ledger's commit. The store names its
// types here, so the front doors keep using the store's names; the store's own parts (the NFT
// market, swaps) register their templates and observers with the core.

// Ledger is where contracts live and how a committed transaction changes them
// (ledger.Ledger); the store commits through s.ledger, the embedded one unless another is set.
type Ledger = ledger.Ledger

type (
	// Transaction is what one committed update does to the ledger.
	Transaction = ledger.Transaction
	// ContractRef names a contract: its template (table) and id.
	ContractRef = ledger.ContractRef
	// Contract is a bun model of one contract template.
	Contract = ledger.Contract
	// ValuedContract holds an amount of an instrument.
	ValuedContract = ledger.ValuedContract
	// AssetContract carries one non-fungible asset.
	AssetContract = ledger.AssetContract
	// EscrowContract is an offer that locks another contract while it is active.
	EscrowContract = ledger.EscrowContract
	// Lifecycle is the part every contract shares: its id and the updates that created and
	// consumed it.
	Lifecycle = ledger.Lifecycle
	// Update is one committed transaction in the ledger's append-only log.
	Update = ledger.Update
	// Holding is a UTXO-style contract: an exact amount of one instrument owned by one party.
	Holding = ledger.Holding
	// Preapproval is a party's consent to be credited NFTs or USDCx by others.
	Preapproval = ledger.Preapproval
	// PreapprovalKind is what a receive-preapproval consents to receive.
	PreapprovalKind = ledger.PreapprovalKind
	// Instrument is a fungible asset the ledger holds.
	Instrument = ledger.Instrument
	// Amount is an exact decimal quantity.
	Amount = ledger.Amount
	// Timestamp is an instant stored as Unix microseconds on both dialects.
	Timestamp = ledger.Timestamp
	// Dialect names the SQL database behind the store.
	Dialect = ledger.Dialect
)

const (
	CC    = ledger.CC    // the native coin, 10 decimals
	USDCx = ledger.USDCx // the stablecoin, 6 decimals

	Postgres = ledger.Postgres
	SQLite   = ledger.SQLite

	PreapprovalNFT   = ledger.PreapprovalNFT
	PreapprovalUSDCx = ledger.PreapprovalUSDCx

	templateHolding     = ledger.TemplateHolding
	templatePreapproval = ledger.TemplatePreapproval
)

// Instruments lists every instrument in display order.
var Instruments = ledger.Instruments

// Zero is the zero amount.
var Zero = ledger.Zero

// ParseInstrument accepts exactly "CC" or "USDCx".
func ParseInstrument(s string) (Instrument, error) { return ledger.ParseInstrument(s) }

// ParseAmount parses a wire amount of inst: a plain decimal string, positive, with no more
// fractional digits than the instrument has.
func ParseAmount(s string, inst Instrument) (Amount, error) { return ledger.ParseAmount(s, inst) }

// MustAmount parses s or panics; for constants and tests.
func MustAmount(s string) Amount { return ledger.MustAmount(s) }

// At wraps t as a Timestamp.
func At(t time.Time) Timestamp { return ledger.At(t) }

// AtPtr wraps t as a *Timestamp.
func AtPtr(t time.Time) *Timestamp { return ledger.AtPtr(t) }

// ParsePreapprovalKind accepts "nft" or "usdcx".
func ParsePreapprovalKind(s string) (PreapprovalKind, error) { return ledger.ParsePreapprovalKind(s) }

// amountOf is d as an Amount.
func amountOf(d decimal.Decimal) Amount { return ledger.AmountOf(d) }

// parseDecimal parses a non-negative decimal string with at most decimals fractional digits.
func parseDecimal(s string, decimals int32) (Amount, error) { return ledger.ParseDecimal(s, decimals) }

// contractID derives the id of the n-th contract an update creates.
func contractID(updateID string, n int) string { return ledger.ContractID(updateID, n) }

// checkAmountBounds refuses an amount a contract cannot hold exactly.
func checkAmountBounds(a Amount) error { return ledger.CheckAmountBounds(a) }
