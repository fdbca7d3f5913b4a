package graph

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"marketd/store"
)

// followBatch is how many events a follower reads at a time.
const followBatch = 100

// followEvery is how often a follower with nothing new looks at the log again.
const followEvery = 200 * time.Millisecond

// positioned is an event with its place in the update log.
type positioned interface{ Position() store.LogPosition }

// follow delivers what read returns after from, in order, until ctx ends. It reads the log
// itself rather than listening to this process's commits, so an event committed through any
// instance of the store reaches every subscriber of every instance.
func follow[E any, P interface {
	*E
	positioned
}](ctx context.Context, every time.Duration, from store.LogPosition, read func(context.Context, store.LogPosition) ([]E, error)) <-chan P {
	ch := make(chan P)
	go func() {
		defer close(ch)
		pos := from
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			events, err := read(ctx, pos)
			if err != nil {
				if ctx.Err() == nil {
					slog.WarnContext(ctx, "graphql subscription: reading the update log", "err", err)
				}
			}
			for i := range events {
				select {
				case ch <- P(&events[i]):
					pos = P(&events[i]).Position()
				case <-ctx.Done():
					return
				}
			}
			if len(events) == followBatch {
				continue // more are waiting
			}
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch
}

// startPosition is where a subscription begins: after the position given, else at the end of
// the log (only what commits from now on).
func (r *Resolver) startPosition(ctx context.Context, after *string) (store.LogPosition, error) {
	if after == nil {
		return r.store.LatestPosition(ctx)
	}
	var p store.LogPosition
	if _, err := fmt.Sscanf(*after, "%d.%d", &p.Offset, &p.Seq); err != nil || formatPosition(p) != *after || p.Offset < 0 || p.Seq < 0 {
		return p, store.Errorf(store.CodeInvalidCursor, "after must be a position an event carried")
	}
	return p, nil
}

func formatPosition(p store.LogPosition) string { return fmt.Sprintf("%d.%d", p.Offset, p.Seq) }
