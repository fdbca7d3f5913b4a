package graph

import (
	"encoding/json"
	"io"
	"strconv"
	"time"

	"github.com/99designs/gqlgen/graphql"

	"marketd/store"
)

// MarshalDecimal writes an amount as its exact decimal string, as REST does.
func MarshalDecimal(a store.Amount) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) { io.WriteString(w, strconv.Quote(a.String())) })
}

// UnmarshalDecimal reads a decimal string. Its precision is checked where the instrument is
// known (a price filter is read in its collection's currency).
func UnmarshalDecimal(v any) (store.Amount, error) {
	s, ok := v.(string)
	if !ok {
		return store.Amount{}, store.Errorf(store.CodeInvalidRequest, "a Decimal is a string, like \"12.5\"")
	}
	var a store.Amount
	if err := a.UnmarshalText([]byte(s)); err != nil {
		return store.Amount{}, store.Errorf(store.CodeInvalidRequest, "%q is not a decimal amount", s)
	}
	return a, nil
}

// MarshalUnixTime writes an instant as whole Unix seconds, as REST does.
func MarshalUnixTime(t store.Timestamp) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) { io.WriteString(w, strconv.FormatInt(t.Unix(), 10)) })
}

// UnmarshalUnixTime reads whole Unix seconds.
func UnmarshalUnixTime(v any) (store.Timestamp, error) {
	var sec int64
	switch n := v.(type) {
	case int64:
		sec = n
	case int:
		sec = int64(n)
	case json.Number:
		i, err := n.Int64()
		if err != nil {
			return store.Timestamp{}, store.Errorf(store.CodeInvalidRequest, "a UnixTime is whole seconds")
		}
		sec = i
	default:
		return store.Timestamp{}, store.Errorf(store.CodeInvalidRequest, "a UnixTime is whole seconds")
	}
	return store.At(time.Unix(sec, 0)), nil
}
