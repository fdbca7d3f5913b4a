package ledger

import (
	"marketd/store/wallet"

	"github.com/shopspring/decimal"
)

// Instrument is a fungible asset the ledger holds (wallet.Instrument).
type Instrument = wallet.Instrument

const (
	CC    = wallet.CC    // the native coin, 10 decimals
	USDCx = wallet.USDCx // the stablecoin, 6 decimals
)

// Instruments lists every instrument in display order.
var Instruments = wallet.Instruments

// ParseInstrument accepts exactly "CC" or "USDCx".
func ParseInstrument(s string) (Instrument, error) { return wallet.ParseInstrument(s) }

// Amount is an exact decimal quantity (wallet.Amount).
type Amount = wallet.Amount

// ParseAmount parses a wire amount of inst: a plain decimal string, positive, with no more
// fractional digits than the instrument has.
func ParseAmount(s string, inst Instrument) (Amount, error) { return wallet.ParseAmount(s, inst) }

// ParseDecimal parses a non-negative decimal string with at most decimals fractional digits.
func ParseDecimal(s string, decimals int32) (Amount, error) { return wallet.ParseDecimal(s, decimals) }

// MustAmount parses s or panics; for constants and tests.
func MustAmount(s string) Amount { return wallet.MustAmount(s) }

// Zero is the zero amount.
var Zero = wallet.Zero

// AmountOf is d as an Amount.
func AmountOf(d decimal.Decimal) Amount { return wallet.AmountOf(d) }

// CheckAmountBounds refuses an amount a contract cannot hold exactly: not positive, or
// beyond what NUMERIC(38,10) holds.
func CheckAmountBounds(a Amount) error { return wallet.CheckAmountBounds(a) }
