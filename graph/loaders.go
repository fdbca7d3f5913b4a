package graph

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/graph-gophers/dataloader/v7"

	"marketd/store"
)

// loaders batch a request's associations: the resolvers of one list's items run concurrently
// and each asks its loader, which makes one store call for all of them.
type loaders struct {
	collection *dataloader.Loader[string, *store.Collection]
	history    *dataloader.Loader[historyKey, store.Page[store.NFTEvent]]
	oracle     *dataloader.Loader[[2]store.Instrument, *store.OraclePrice]
}

// historyKey asks for the first page of one NFT's history, or its last (backward).
type historyKey struct {
	ref      store.NFTRef
	limit    int
	backward bool
}

// historyBatch is the keys that share one query: the same page size and direction.
type historyBatch struct {
	limit    int
	backward bool
}

// batchWait is how long a loader gathers keys before it calls the store: long enough for the
// resolvers of one page, which run at once, short next to a query.
const batchWait = 2 * time.Millisecond

func newLoaders(s *store.Store) *loaders {
	return &loaders{
		collection: dataloader.NewBatchedLoader(func(ctx context.Context, ids []string) []*dataloader.Result[*store.Collection] {
			found, err := s.CollectionsByID(ctx, ids)
			out := make([]*dataloader.Result[*store.Collection], len(ids))
			for i, id := range ids {
				switch c := found[id]; {
				case err != nil:
					out[i] = &dataloader.Result[*store.Collection]{Error: err}
				case c == nil:
					out[i] = &dataloader.Result[*store.Collection]{Error: store.Errorf(store.CodeNotFound, "no collection %q", id)}
				default:
					out[i] = &dataloader.Result[*store.Collection]{Data: c}
				}
			}
			return out
		}, dataloader.WithWait[string, *store.Collection](batchWait)),
		history: dataloader.NewBatchedLoader(func(ctx context.Context, keys []historyKey) []*dataloader.Result[store.Page[store.NFTEvent]] {
			batches := map[historyBatch][]store.NFTRef{}
			for _, k := range keys {
				b := historyBatch{k.limit, k.backward}
				batches[b] = append(batches[b], k.ref)
			}
			pages := map[historyKey]store.Page[store.NFTEvent]{}
			errs := map[historyBatch]error{}
			for b, refs := range batches {
				got, err := s.NFTHistories(ctx, refs, store.PageRequest{Limit: b.limit, Backward: b.backward, ItemCursors: true})
				errs[b] = err
				for ref, p := range got {
					pages[historyKey{ref: ref, limit: b.limit, backward: b.backward}] = p
				}
			}
			out := make([]*dataloader.Result[store.Page[store.NFTEvent]], len(keys))
			for i, k := range keys {
				out[i] = &dataloader.Result[store.Page[store.NFTEvent]]{Data: pages[k], Error: errs[historyBatch{k.limit, k.backward}]}
			}
			return out
		}, dataloader.WithWait[historyKey, store.Page[store.NFTEvent]](batchWait)),
		// The pools of a page share a handful of pairs: the loader asks the oracle once per pair.
		oracle: dataloader.NewBatchedLoader(func(ctx context.Context, pairs [][2]store.Instrument) []*dataloader.Result[*store.OraclePrice] {
			out := make([]*dataloader.Result[*store.OraclePrice], len(pairs))
			for i, pair := range pairs {
				p, err := s.Oracle().Price(ctx, pair[0], pair[1])
				out[i] = &dataloader.Result[*store.OraclePrice]{Data: p, Error: err}
			}
			return out
		}, dataloader.WithWait[[2]store.Instrument, *store.OraclePrice](batchWait)),
	}
}

type loadersKey struct{}

// withLoaders gives each request its own loaders (their caches live as long as the request).
func withLoaders(s *store.Store, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), loadersKey{}, newLoaders(s))))
	})
}

func loadersOf(ctx context.Context) *loaders { return ctx.Value(loadersKey{}).(*loaders) }

// primeHistories loads the first (or last) history page of every NFT of a page in one query,
// when the query asks for edges { node { history } } without a cursor, and leaves them in the loader
// for the NFTs' history resolvers: a page costs the same however many NFTs it holds, and
// however the resolvers happen to be scheduled.
func primeHistories(ctx context.Context, s *store.Store, nfts []store.NFTView) error {
	oc := graphql.GetOperationContext(ctx)
	for _, edges := range graphql.CollectFieldsCtx(ctx, nil) {
		if edges.Name != "edges" {
			continue
		}
		for _, node := range graphql.CollectFields(oc, edges.Selections, nil) {
			if node.Name != "node" {
				continue
			}
			for _, h := range graphql.CollectFields(oc, node.Selections, nil) {
				if h.Name != "history" {
					continue
				}
				args := h.ArgumentMap(oc.Variables)
				if args["after"] != nil || args["before"] != nil || args["first"] != nil && args["last"] != nil {
					continue // the resolver reads (or refuses) it alone
				}
				backward := args["last"] != nil
				size := args["first"]
				if backward {
					size = args["last"]
				}
				limit, ok := intArg(size, store.DefaultPageSize)
				if !ok || limit < 1 || limit > store.MaxPageSize {
					continue
				}
				refs := make([]store.NFTRef, len(nfts))
				for i := range nfts {
					refs[i] = nfts[i].Ref()
				}
				pages, err := s.NFTHistories(ctx, refs, store.PageRequest{Limit: limit, Backward: backward, ItemCursors: true})
				if err != nil {
					return err
				}
				l := loadersOf(ctx).history
				for ref, p := range pages {
					l.Prime(ctx, historyKey{ref: ref, limit: limit, backward: backward}, p)
				}
			}
		}
	}
	return nil
}

// intArg reads an Int argument as the query or its variables carry it.
func intArg(v any, def int) (int, bool) {
	switch n := v.(type) {
	case nil:
		return def, true
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		return int(n), n == float64(int(n))
	case json.Number:
		i, err := n.Int64()
		return int(i), err == nil
	}
	return 0, false
}

// An operation the fast path (nftpage_fast.go) starts and then leaves to the executor would
// otherwise read what it read twice, and run more statements than its cost says. The fast path
// gives such an operation a memo of its reads; the resolvers it shares with the executor read
// through it, so the executor finds what the fast path read. Without a memo (every operation
// the executor answers alone) they read the store directly.
type readMemoKey struct{}

type readMemo struct {
	mu    sync.Mutex
	reads map[any]*memoRead
}

type memoRead struct {
	once sync.Once
	v    any
	err  error
}

func withReadMemo(ctx context.Context) context.Context {
	return context.WithValue(ctx, readMemoKey{}, &readMemo{reads: map[any]*memoRead{}})
}

// memoized answers read once per key within an operation that has a memo. A key is a
// comparable value naming the read (a struct of its kind and arguments).
func memoized[T any](ctx context.Context, key func() any, read func() (T, error)) (T, error) {
	m, _ := ctx.Value(readMemoKey{}).(*readMemo)
	if m == nil {
		return read()
	}
	k := key()
	m.mu.Lock()
	e := m.reads[k]
	if e == nil {
		e = new(memoRead)
		m.reads[k] = e
	}
	m.mu.Unlock()
	e.once.Do(func() { e.v, e.err = read() })
	v, _ := e.v.(T)
	return v, e.err
}
