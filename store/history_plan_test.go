package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/uptrace/bun"

	"marketd/store"
	"marketd/store/storetest"
)

// statements records the SELECTs a store runs.
type statements struct {
	mu   sync.Mutex
	list []statement
}

// statement is a SELECT as bun renders it and, for one sent with its arguments apart (the
// store's planned reads), the text sent and its arguments.
type statement struct {
	query, sent string
	args        []any
}

func (s *statements) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }
func (s *statements) AfterQuery(ctx context.Context, e *bun.QueryEvent) {
	if store.InBackground(ctx) || !strings.HasPrefix(strings.TrimSpace(e.Query), "SELECT") {
		return
	}
	st := statement{query: e.Query}
	if e.QueryTemplate != e.Query && strings.Contains(e.QueryTemplate, "$1") {
		st.sent, st.args = e.QueryTemplate, e.QueryArgs
	}
	s.mu.Lock()
	s.list = append(s.list, st)
	s.mu.Unlock()
}

func (s *statements) take() []statement {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.list
	s.list = nil
	return out
}

// Every page of a growing history (NFT histories, listings, rewards, swap outcomes and
// histories, open intents and quotes, sessions, the console's offers and a party's accepts) is a keyset read that an index serves in
// order: on PostgreSQL, with sequential scans and sorts priced out, its plan has neither, so
// the database walks only the page however long the history grows. That holds for a
// collection's activity feed and a pool's outcomes feed too, read in log order from a
// position: their rows carry their update's offset.
func TestHistories_EveryPageIsAnIndexWalkWithoutASort(t *testing.T) {
	for _, b := range storetest.Backends() {
		if b.Dialect != store.Postgres {
			continue // the plan is PostgreSQL's; SQLite's indexes are the same
		}
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			s := b.Open(t, storetest.Config(nil))
			sum, err := s.SeedDemo(ctx, store.DemoOptions{NFTs: 40, Seed: 5})
			if err != nil {
				t.Fatal(err)
			}
			rec := &statements{}
			s.AddQueryHook(rec)
			party, pool := sum.Parties[0], sum.Pools[0]
			col, err := s.CollectionBySlug(ctx, sum.Collections[0])
			if err != nil {
				t.Fatal(err)
			}
			page := store.PageRequest{Limit: 5}
			// Reads that sort the rows of the page only, which Limit'ed index walks gave them
			// (the first pages of several NFTs' histories, merged).
			pageSorts := map[string]bool{"NFT histories of a page": true}
			reads := []struct {
				name string
				read func() error
			}{
				{"NFT history", func() error {
					_, err := s.NFTHistory(ctx, store.NFTRef{CollectionID: col.ID, Serial: 1}, page)
					return err
				}},
				{"NFT histories of a page", func() error {
					_, err := s.NFTHistories(ctx, []store.NFTRef{{CollectionID: col.ID, Serial: 1}, {CollectionID: col.ID, Serial: 2}}, page)
					return err
				}},
				{"listings of a collection", func() error {
					_, err := s.Listings(ctx, store.ListingFilter{CollectionID: col.ID}, page)
					return err
				}},
				{"listings of a seller", func() error {
					_, err := s.Listings(ctx, store.ListingFilter{Seller: party}, page)
					return err
				}},
				{"rewards", func() error { _, err := s.RewardHistory(ctx, party, page); return err }},
				{"swap history of a taker", func() error {
					_, err := s.SwapHistory(ctx, store.SwapHistoryFilter{Taker: party}, page)
					return err
				}},
				{"outcomes of a pool", func() error {
					_, err := s.SwapHistory(ctx, store.SwapHistoryFilter{PoolID: pool}, page)
					return err
				}},
				{"open intents of a taker", func() error { _, err := s.ActiveIntents(ctx, party, page); return err }},
				{"open quotes of an LP", func() error { _, err := s.ActiveLPQuotes(ctx, party, page); return err }},
				{"sessions of a party", func() error { _, err := s.Sessions(ctx, party, page); return err }},
				{"the console's offers", func() error { _, err := s.AdminOffers(ctx, store.OfferFilter{}, page); return err }},
				{"the console's offers of a maker", func() error {
					_, err := s.AdminOffers(ctx, store.OfferFilter{Maker: party, State: "open"}, page)
					return err
				}},
				{"the console's offers of a collection", func() error {
					_, err := s.AdminOffers(ctx, store.OfferFilter{CollectionID: col.ID, Kind: store.OfferTrait}, page)
					return err
				}},
				{"a party's accepts", func() error { _, err := s.OfferAccepts(ctx, party, page); return err }},
				{"a pool's outcomes from a position", func() error {
					outs, err := s.PoolOutcomesAfter(ctx, pool, store.LogPosition{}, 2)
					if err != nil || len(outs) == 0 {
						return fmt.Errorf("the feed's start: %d outcomes, %v", len(outs), err)
					}
					_, err = s.PoolOutcomesAfter(ctx, pool, outs[len(outs)-1].Position(), 5)
					return err
				}},
				{"a collection's activity, a page and the next, of every kind and of two", func() error {
					for _, kinds := range [][]string{nil, {store.EventMinted, store.EventListed}} {
						first, err := s.CollectionActivity(ctx, col.ID, kinds, page)
						if err != nil || first.Cursor == "" {
							return fmt.Errorf("the first page of %v: %d events, %v", kinds, len(first.Items), err)
						}
						if _, err := s.CollectionActivity(ctx, col.ID, kinds, store.PageRequest{Limit: 5, Cursor: first.Cursor}); err != nil {
							return err
						}
					}
					return nil
				}},
				{"a collection's activity from a position", func() error {
					evs, err := s.CollectionActivityAfter(ctx, col.ID, store.LogPosition{}, 3)
					if err != nil || len(evs) == 0 {
						return fmt.Errorf("the feed's start: %d events, %v", len(evs), err)
					}
					_, err = s.CollectionActivityAfter(ctx, col.ID, evs[len(evs)-1].Position(), 5)
					return err
				}},
			}
			raw, err := sql.Open("pgx", s.Config().DB)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			conn, err := raw.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.ExecContext(ctx, "SET enable_seqscan = off; SET enable_sort = off; SET enable_incremental_sort = off"); err != nil {
				t.Fatal(err)
			}
			for _, r := range reads {
				rec.take()
				if err := r.read(); err != nil {
					t.Fatalf("%s: %v", r.name, err)
				}
				stmts := rec.take()
				if len(stmts) == 0 {
					t.Fatalf("%s ran no statement", r.name)
				}
				for _, st := range stmts {
					plans := []string{"EXPLAIN " + st.query}
					if st.sent != "" {
						// sent apart, the statement runs on PostgreSQL's generic plan once it
						// has run a few times: that plan walks the index too
						literals := make([]string, len(st.args))
						for i, a := range st.args {
							literals[i] = literal(a)
						}
						if _, err := conn.ExecContext(ctx, "PREPARE planned AS "+st.sent); err != nil {
							t.Fatalf("%s: prepare %s: %v", r.name, st.sent, err)
						}
						plans = append(plans, "EXPLAIN EXECUTE planned("+strings.Join(literals, ", ")+")")
					}
					for i, explain := range plans {
						if i == 1 {
							if _, err := conn.ExecContext(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
								t.Fatal(err)
							}
						}
						text := explainText(t, ctx, conn, explain)
						sorts := strings.Contains(text, "Sort")
						if pageSorts[r.name] {
							sorts = sorts && strings.Count(text, "Limit") < 2 // each walk ends at its page
						}
						if strings.Contains(text, "Seq Scan") || sorts {
							t.Errorf("%s: the plan scans or sorts:\n%s\n%s", r.name, explain, text)
						}
					}
					if st.sent != "" {
						if _, err := conn.ExecContext(ctx, "DEALLOCATE planned; SET plan_cache_mode = auto"); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		})
	}
}

// explainText is the plan EXPLAIN statement explain prints, one line a node.
func explainText(t *testing.T, ctx context.Context, conn *sql.Conn, explain string) string {
	t.Helper()
	rows, err := conn.QueryContext(ctx, explain)
	if err != nil {
		t.Fatalf("%s: %v", explain, err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var line string
		rows.Scan(&line)
		plan = append(plan, line)
	}
	return strings.Join(plan, "\n")
}

// literal is a planned statement's argument as SQL text: a string quoted, a number as it is.
func literal(a any) string {
	if s, ok := a.(string); ok {
		return "'" + strings.ReplaceAll(s, "'", "''") + "'"
	}
	return fmt.Sprint(a)
}
