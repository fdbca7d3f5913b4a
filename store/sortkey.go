package store

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
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
	s := a.d.StringFixed(keyFracDigits)
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

func itoa(n int) string     { return strconv.Itoa(n) }
func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

func parseInt64(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// hashText is a short, stable digest of s.
func hashText(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// parseChoice reads v as one of choices; "" is the first, the default. Anything else is
// invalid_request naming them all.
func parseChoice[T ~string](field, v string, choices ...T) (T, error) {
	if v == "" {
		return choices[0], nil
	}
	names := make([]string, len(choices))
	for i, c := range choices {
		if T(v) == c {
			return c, nil
		}
		names[i] = string(c)
	}
	list := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	return "", Errorf(CodeInvalidRequest, "%s must be %s, not %q", field, list, truncate(v, 40))
}
