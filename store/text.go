package store

import (
	"slices"
	"strconv"
	"strings"

	"marketd/store/ledger"
)

// Text the store reads and writes: numbers in decimal, map keys in a stable order, a
// choice among names, and what a client sends, made safe to store or to quote back.

func itoa(n int) string { return strconv.Itoa(n) }

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

func parseInt64(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }

// sortedKeys is m's keys in order, so what is built from a map comes out the same each time.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
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

// clean makes a client-supplied string safe to store: at most n bytes, valid UTF-8, no NUL.
func clean(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, ""), "\x00", "")
}

// truncate shortens s to n bytes to quote it in an error, marking the cut (ledger.Truncate).
func truncate(s string, n int) string { return ledger.Truncate(s, n) }
