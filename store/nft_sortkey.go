package store

import (
	"strings"
)

// Sort keys order decimals as text: fixed-width, zero-padded, so one index orders them by
// value on both dialects (SQLite keeps decimals as text and would compare "9" above "10").
// A descending key complements every digit. noKey, after every digit, sorts "none" last.
const (
	keyIntDigits  = 28 // what NUMERIC(38,10) holds
	keyFracDigits = 10
	noKey         = "~"
)

// ascKey is a's position in ascending order.
func ascKey(a Amount) string {
	s := a.Decimal().StringFixed(keyFracDigits)
	whole, frac, _ := strings.Cut(s, ".")
	return strings.Repeat("0", max(keyIntDigits-len(whole), 0)) + whole + "." + frac
}

// descKey is a's position in descending order.
func descKey(a Amount) string {
	b := []byte(ascKey(a))
	for i, c := range b {
		if c >= '0' && c <= '9' {
			b[i] = '9' - (c - '0')
		}
	}
	return string(b)
}
