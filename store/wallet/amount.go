package wallet

import (
	"bytes"
	"database/sql/driver"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"
)

// Instrument is a fungible asset the ledger holds.
type Instrument string

const (
	CC    Instrument = "CC"    // the native coin, 10 decimals
	USDCx Instrument = "USDCx" // the stablecoin, 6 decimals
)

// Instruments lists every instrument in display order.
var Instruments = []Instrument{CC, USDCx}

// Decimals is the number of fractional digits the instrument carries.
func (i Instrument) Decimals() int32 {
	switch i {
	case CC:
		return 10
	case USDCx:
		return 6
	}
	return 0
}

// ParseInstrument accepts exactly "CC" or "USDCx".
func ParseInstrument(s string) (Instrument, error) {
	switch Instrument(s) {
	case CC, USDCx:
		return Instrument(s), nil
	}
	return "", Errorf(CodeInvalidRequest, "unknown instrument %q (want CC or USDCx)", s)
}

// Amount is an exact decimal quantity. It never passes through a float: it is parsed from and
// written as a decimal string, stored as TEXT on SQLite and NUMERIC(38,10) on PostgreSQL.
type Amount struct{ d decimal.Decimal }

var amountPattern = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

// maxAmount bounds amounts to what NUMERIC(38,10) holds: 28 integer digits.
var maxAmount = decimal.New(1, 28)

// ParseAmount parses a wire amount of inst: a plain decimal string, positive, with no more
// fractional digits than the instrument has.
func ParseAmount(s string, inst Instrument) (Amount, error) {
	a, err := ParseDecimal(s, inst.Decimals())
	if err != nil {
		return Amount{}, err
	}
	if !a.d.IsPositive() {
		return Amount{}, Errorf(CodeInvalidRequest, "amount must be positive")
	}
	return a, nil
}

// ParseDecimal parses a non-negative decimal string with at most decimals fractional digits.
func ParseDecimal(s string, decimals int32) (Amount, error) {
	if len(s) > 64 || !amountPattern.MatchString(s) {
		return Amount{}, Errorf(CodeInvalidRequest, "amount %q is not a decimal string like \"12.5\"", Truncate(s, 40))
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return Amount{}, Errorf(CodeInvalidRequest, "amount %q is not a decimal string", Truncate(s, 40))
	}
	if i := strings.IndexByte(s, '.'); i >= 0 && int32(len(s)-i-1) > decimals {
		return Amount{}, Errorf(CodeInvalidRequest, "amount %s has more than %d fractional digits", s, decimals)
	}
	if d.Cmp(maxAmount) >= 0 {
		return Amount{}, Errorf(CodeInvalidRequest, "amount %s is too large", Truncate(s, 40))
	}
	return Amount{d}, nil
}

// MustAmount parses s or panics; for constants and tests.
func MustAmount(s string) Amount {
	d, err := decimal.NewFromString(s)
	if err != nil {
		panic(err)
	}
	return Amount{d}
}

// Zero is the zero amount.
var Zero = Amount{decimal.Zero}

// AmountOf is d as an Amount, for arithmetic beyond Amount's own (prices, rounding); d keeps
// every digit it has.
func AmountOf(d decimal.Decimal) Amount { return Amount{d} }

// CheckAmountBounds refuses an amount a contract cannot hold exactly: not positive, or
// beyond what NUMERIC(38,10) holds.
func CheckAmountBounds(a Amount) error {
	if !a.IsPositive() {
		return Errorf(CodeInvalidRequest, "a holding must hold a positive amount")
	}
	if a.d.Cmp(maxAmount) >= 0 {
		return Errorf(CodeInvalidRequest, "amount %s is too large", a)
	}
	return nil
}

func (a Amount) String() string           { return string(a.AppendText(nil)) }
func (a Amount) Add(b Amount) Amount      { return Amount{a.d.Add(b.d)} }
func (a Amount) Sub(b Amount) Amount      { return Amount{a.d.Sub(b.d)} }
func (a Amount) Cmp(b Amount) int         { return a.d.Cmp(b.d) }
func (a Amount) IsZero() bool             { return a.d.IsZero() }
func (a Amount) IsPositive() bool         { return a.d.IsPositive() }
func (a Amount) IsNegative() bool         { return a.d.IsNegative() }
func (a Amount) Equal(b Amount) bool      { return a.d.Equal(b.d) }
func (a Amount) Decimal() decimal.Decimal { return a.d }

// MulFloor multiplies by m and rounds down to decimals fractional digits.
func (a Amount) MulFloor(m decimal.Decimal, decimals int32) Amount {
	return Amount{a.d.Mul(m).Truncate(decimals)}
}

func (a Amount) MarshalText() ([]byte, error) { return a.AppendText(nil), nil }

// AppendText appends the amount as decimal.Decimal's String writes it (no exponent, trailing
// fractional zeros dropped) to dst. An amount of at most 18 digits, every amount a listing,
// price or balance of this ledger holds, is written without big.Int's allocations; a longer
// one as Decimal writes it. TestAmount_AppendTextIsDecimalsString holds the two equal.
func (a Amount) AppendText(dst []byte) []byte {
	exp := a.d.Exponent()
	if exp > 0 || exp < -18 || a.d.NumDigits() > 18 {
		return append(dst, a.d.String()...)
	}
	c := a.d.CoefficientInt64()
	if c < 0 {
		dst = append(dst, '-')
		c = -c
	}
	var buf [20]byte
	digits := strconv.AppendInt(buf[:0], c, 10)
	point := len(digits) + int(exp) // digits before the point
	var whole, frac []byte
	if point > 0 {
		whole, frac = digits[:point], digits[point:]
	} else {
		whole = []byte{'0'}
		frac = digits
	}
	zeros := max(0, -point)
	frac = bytes.TrimRight(frac, "0")
	if c == 0 || len(frac) == 0 {
		return append(dst, whole...)
	}
	dst = append(append(dst, whole...), '.')
	for range zeros {
		dst = append(dst, '0')
	}
	return append(dst, frac...)
}

func (a *Amount) UnmarshalText(b []byte) error {
	d, err := decimal.NewFromString(string(b))
	if err != nil {
		return err
	}
	a.d = d
	return nil
}

func (a Amount) Value() (driver.Value, error) { return a.String(), nil }

func (a *Amount) Scan(src any) error {
	var s string
	switch v := src.(type) {
	case string:
		s = v
	case []byte:
		s = string(v)
	case int64:
		a.d = decimal.NewFromInt(v)
		return nil
	default:
		return fmt.Errorf("amount: cannot scan %T", src)
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return fmt.Errorf("amount: %w", err)
	}
	a.d = d
	return nil
}
