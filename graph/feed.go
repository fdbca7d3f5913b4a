package graph

import (
	"cmp"
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"marketd/store"
)

// A public feed (a collection's activity, a pool's fills) is read from the update log by one
// follower per feed in this process, however many subscriptions follow it: the follower reads
// the feed every followEvery while anything new arrives and fans each event out to the
// subscriptions. So a standing subscription costs the store nothing of its own, and 60
// subscriptions of one feed read what one does.
//
// A subscription that starts after a position behind the follower's (after:) reads the log
// itself until it reaches the follower, then joins it; one that falls behind the follower
// (its client reads slower than events arrive, more than feedBuffer of them) is let go and
// reads itself again from its own position until it has caught up. Either way it misses no
// event and sees none twice.

// feedBuffer is how many events a subscription of a shared feed may fall behind its
// follower before it reads the log itself.
const feedBuffer = 2 * followBatch

// feeds runs the followers of one kind of feed, keyed by what the feed follows.
type feeds[E any, P interface {
	*E
	positioned
}] struct {
	every time.Duration
	// read lists up to followBatch events of the feed key after pos.
	read func(ctx context.Context, key string, pos store.LogPosition) ([]E, error)
	// start is the end of the update log now, where a new follower begins.
	start func(ctx context.Context) (store.LogPosition, error)

	mu      sync.Mutex
	running map[string]*feed[P]
}

// feed is one feed's follower and the subscriptions it fans out to.
type feed[P positioned] struct {
	refs int                 // subscriptions following the feed, joined or catching up
	pos  store.LogPosition   // the position of the last event the follower fanned out
	subs map[chan P]struct{} // joined subscriptions
	stop context.CancelFunc  // ends the follower
}

// subscribe delivers the feed key's events after from (nil: from the end of the log now) on
// the returned channel until ctx ends.
func (fs *feeds[E, P]) subscribe(ctx context.Context, key string, from *store.LogPosition) (<-chan P, error) {
	f, err := fs.acquire(ctx, key)
	if err != nil {
		return nil, err
	}
	out := make(chan P)
	go func() {
		defer close(out)
		defer fs.release(key, f)
		var pos store.LogPosition
		if from != nil {
			pos = *from
		} else {
			fs.mu.Lock()
			pos = f.pos
			fs.mu.Unlock()
		}
		send := func(p P) bool {
			select {
			case out <- p:
				pos = p.Position()
				return true
			case <-ctx.Done():
				return false
			}
		}
		for {
			// Catch up with the follower, reading the log itself.
			in := fs.join(f, pos)
			for in == nil {
				events, err := fs.read(ctx, key, pos)
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					slog.WarnContext(ctx, "graphql subscription: reading the update log", "err", err)
				}
				for i := range events {
					if !send(P(&events[i])) {
						return
					}
				}
				if len(events) == followBatch {
					continue
				}
				if in = fs.join(f, pos); in == nil && err != nil {
					select {
					case <-time.After(fs.every):
					case <-ctx.Done():
						return
					}
				}
			}
			// Joined: what the follower fans out, but what this subscription has delivered.
			for joined := true; joined; {
				select {
				case p, ok := <-in:
					switch {
					case !ok:
						joined = false // let go: it fell behind
					case before(pos, p.Position()):
						if !send(p) {
							fs.leave(f, in)
							return
						}
					}
				case <-ctx.Done():
					fs.leave(f, in)
					return
				}
			}
		}
	}()
	return out, nil
}

// acquire counts a subscription in the feed key's follower, starting the follower when it is
// the first.
func (fs *feeds[E, P]) acquire(ctx context.Context, key string) (*feed[P], error) {
	fs.mu.Lock()
	if f := fs.running[key]; f != nil {
		f.refs++
		fs.mu.Unlock()
		return f, nil
	}
	fs.mu.Unlock()
	pos, err := fs.start(ctx)
	if err != nil {
		return nil, err
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f := fs.running[key]; f != nil {
		f.refs++
		return f, nil
	}
	if fs.running == nil {
		fs.running = map[string]*feed[P]{}
	}
	fctx, stop := context.WithCancel(context.Background())
	f := &feed[P]{refs: 1, pos: pos, subs: map[chan P]struct{}{}, stop: stop}
	fs.running[key] = f
	go fs.follow(fctx, key, f)
	return f, nil
}

// release counts a subscription out, ending the follower with the last.
func (fs *feeds[E, P]) release(key string, f *feed[P]) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f.refs--; f.refs == 0 {
		f.stop()
		delete(fs.running, key)
	}
}

// join adds a subscription at pos to the follower's fan-out when pos is not behind the
// follower; nil when it is.
func (fs *feeds[E, P]) join(f *feed[P], pos store.LogPosition) chan P {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if before(pos, f.pos) {
		return nil
	}
	in := make(chan P, feedBuffer)
	f.subs[in] = struct{}{}
	return in
}

// leave takes a joined subscription out of the fan-out.
func (fs *feeds[E, P]) leave(f *feed[P], in chan P) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if _, ok := f.subs[in]; ok {
		delete(f.subs, in)
		close(in)
	}
}

// follow is a feed's follower: it reads the feed while it has subscriptions and fans each
// event out, letting go of a subscription whose buffer is full.
func (fs *feeds[E, P]) follow(ctx context.Context, key string, f *feed[P]) {
	tick := time.NewTicker(fs.every)
	defer tick.Stop()
	fs.mu.Lock()
	pos := f.pos
	fs.mu.Unlock()
	for {
		events, err := fs.read(ctx, key, pos)
		if err != nil && ctx.Err() == nil {
			slog.WarnContext(ctx, "graphql subscription: reading the update log", "err", err)
		}
		if len(events) > 0 {
			fs.mu.Lock()
			for i := range events {
				p := P(&events[i])
				for in := range f.subs {
					select {
					case in <- p:
					default:
						delete(f.subs, in)
						close(in)
					}
				}
				pos = p.Position()
				f.pos = pos
			}
			fs.mu.Unlock()
		}
		if len(events) == followBatch {
			continue
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
}

// before tells whether position a comes before b in the update log: by offset, then by the
// order within the update (a number, or a contract id), where none (After "") is past every
// event of the offset.
func before(a, b store.LogPosition) bool {
	if a.Offset != b.Offset {
		return a.Offset < b.Offset
	}
	switch {
	case a.After == b.After:
		return false
	case a.After == "":
		return false
	case b.After == "":
		return true
	}
	an, aerr := strconv.ParseInt(a.After, 10, 64)
	bn, berr := strconv.ParseInt(b.After, 10, 64)
	if aerr == nil && berr == nil {
		return an < bn
	}
	return cmp.Less(a.After, b.After)
}

// relay delivers on its channel what as makes of each event in, skipping those it refuses,
// until in closes or ctx ends.
func relay[P, Q any](ctx context.Context, in <-chan P, as func(P) (Q, bool)) <-chan Q {
	out := make(chan Q)
	go func() {
		defer close(out)
		for p := range in {
			q, ok := as(p)
			if !ok {
				continue
			}
			select {
			case out <- q:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// activityKinds are the kinds of event a collectionActivity subscription delivers: those
// named, or without any its NFTs' events.
func activityKinds(kinds []string) (map[string]bool, error) {
	if len(kinds) > len(store.ActivityKinds) {
		return nil, store.Errorf(store.CodeInvalidRequest, "kinds names %d kinds; there are %d", len(kinds), len(store.ActivityKinds))
	}
	keep := map[string]bool{}
	for _, k := range kinds {
		keep[k] = true
	}
	if len(kinds) == 0 {
		for _, k := range store.ActivityKinds {
			keep[k] = k != store.EventOffer && k != store.EventOfferCancelled
		}
	}
	return keep, nil
}
