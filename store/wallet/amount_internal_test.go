package wallet

import (
	"math/rand/v2"
	"testing"

	"github.com/shopspring/decimal"
)

// TestAmount_AppendTextIsDecimalsString holds Amount's own writer equal to Decimal's String
// over random coefficients (signs, 1 to 30 digits) and exponents (-25 to 3), zeros and the
// parsed forms amounts arrive in.
func TestAmount_AppendTextIsDecimalsString(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	check := func(d decimal.Decimal) {
		t.Helper()
		a := Amount{d}
		if got, want := string(a.AppendText([]byte("x"))), "x"+d.String(); got != want {
			t.Fatalf("AppendText of %s (exp %d) = %q, want %q", d.String(), d.Exponent(), got, want)
		}
	}
	for range 20000 {
		digits := make([]byte, 1+rnd.IntN(30))
		for i := range digits {
			digits[i] = byte('0' + rnd.IntN(10))
		}
		if rnd.IntN(3) == 0 {
			for i := len(digits) - 1 - rnd.IntN(len(digits)); i < len(digits); i++ {
				digits[i] = '0' // trailing zeros to drop
			}
		}
		s := string(digits)
		if rnd.IntN(4) == 0 {
			s = "-" + s
		}
		d, err := decimal.NewFromString(s)
		if err != nil {
			t.Fatal(err)
		}
		check(decimal.NewFromBigInt(d.BigInt(), int32(rnd.IntN(29)-25)))
	}
	for _, s := range []string{"0", "0.0000000000", "-0", "1", "12.5", "0.000001", "1000000", "99999999999999999.9", "0.1000000000", "123456789012345678", "1234567890123456789", "-0.5", "7e3"} {
		d, err := decimal.NewFromString(s)
		if err != nil {
			t.Fatal(err)
		}
		check(d)
	}
}
