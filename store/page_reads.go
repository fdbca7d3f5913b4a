package store

import (
	"context"

	"github.com/uptrace/bun"

	"marketd/store/internal/pagecache"
)

// Reads records what the reads made under one context depended on, so that an answer built
// from them alone (a front door's response) can be kept and served again while it is current.
// Only a page served from a page cache says when it stops being current; any other read spoils
// the record: a statement run on the database (a page cache's miss included), or anything a
// front door reads that the store cannot follow (it calls Spoil). Reads.Current takes the
// store (its clock: Store.Now) to tell whether the answer still is.
type Reads = pagecache.Reads

// TrackReads returns a context under which the store records every read in the Reads it
// returns.
func TrackReads(ctx context.Context) (context.Context, *Reads) { return pagecache.TrackReads(ctx) }

// Spoil marks the reads tracked under ctx (if any) as unfit to keep: what was built from them
// depends on something whose changes the store does not follow.
func Spoil(ctx context.Context) { pagecache.Spoil(ctx) }

// spoilOnQuery spoils the tracked reads of any statement: its answer is not in a page cache.
type spoilOnQuery struct{}

func (spoilOnQuery) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	Spoil(ctx)
	return ctx
}

func (spoilOnQuery) AfterQuery(context.Context, *bun.QueryEvent) {}
