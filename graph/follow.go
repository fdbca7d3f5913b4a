package graph

import (
	"strconv"
	"strings"
	"time"

	"marketd/store"
)

// followBatch is how many events a follower reads at a time.
const followBatch = 100

// followEvery is how often a follower with nothing new looks at the log again.
const followEvery = 200 * time.Millisecond

// positioned is an event with its place in the update log.
type positioned interface{ Position() store.LogPosition }

// startPosition is where a subscription begins: after the position given, else nil: at the
// end of the log (only what commits from now on).
func startPosition(after *string) (*store.LogPosition, error) {
	if after == nil {
		return nil, nil
	}
	bad := store.Errorf(store.CodeInvalidCursor, "after must be a position an event carried")
	off, key, ok := strings.Cut(*after, ".")
	n, err := strconv.ParseInt(off, 10, 64)
	if !ok || err != nil || n < 0 || key == "" || len(key) > 200 {
		return nil, bad
	}
	return &store.LogPosition{Offset: n, After: key}, nil
}

func formatPosition(p store.LogPosition) string {
	return strconv.FormatInt(p.Offset, 10) + "." + p.After
}
