package store

import (
	"context"
	"testing"

	"marketd/store/internal/keyset"
	"marketd/store/internal/testdb"
)

// mintCursor issues the cursor of list that names key, as a page ending at an item with that key would.
func mintCursor[K any](t *testing.T, s *Store, list string, key K) string {
	t.Helper()
	p, err := finish(context.Background(), s, &keyset.Query[K]{List: list, Limit: 1, ItemCursors: true}, []K{key}, func(k K) K { return k })
	if err != nil {
		t.Fatal(err)
	}
	return p.ItemCursors[0]
}

// Every read of a growing history walks an index in its ORDER BY, on the first page and from a
// cursor: PostgreSQL (scans and sorts priced out) plans no Sort
// node, and SQLite does not sort in a temporary b-tree.
func TestHistoryReads_WalkAnIndexInPageOrder(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *Store, _ *ledgerClock) {
		ctx := context.Background()
		log := new(testdb.QueryLog)
		s.db.AddQueryHook(log)
		if _, err := s.SetOraclePrice(ctx, CC, USDCx, "2.5"); err != nil {
			t.Fatal(err)
		}
		pool, err := s.CreatePool(ctx, CC, USDCx, 30)
		if err != nil {
			t.Fatal(err)
		}
		party := onboardKeyed(t, s, "taker").id
		nft := NFTRef{CollectionID: "col", Serial: 7}
		feeds := []testdb.PageRead{
			{Name: "swap history of a taker", Read: func(c bool) error {
				r := PageRequest{}
				if c {
					r.Cursor = mintCursor(t, s, "swaps:"+hashText(party+"|"), intentKey{1, "x"})
				}
				_, err := s.SwapHistory(ctx, SwapHistoryFilter{Taker: party}, r)
				return err
			}},
			{Name: "swap history of a pool", Read: func(c bool) error {
				r := PageRequest{}
				if c {
					r.Cursor = mintCursor(t, s, "swaps:"+hashText("|"+pool.PoolID), intentKey{1, "x"})
				}
				_, err := s.SwapHistory(ctx, SwapHistoryFilter{PoolID: pool.PoolID}, r)
				return err
			}},
			{Name: "active intents", Read: func(c bool) error {
				r := PageRequest{}
				if c {
					r.Cursor = mintCursor(t, s, "intents:"+hashText(party), intentKey{1, "x"})
				}
				_, err := s.ActiveIntents(ctx, party, r)
				return err
			}},
			{Name: "active LP quotes", Read: func(c bool) error {
				r := PageRequest{}
				if c {
					r.Cursor = mintCursor(t, s, "lp-quotes:"+hashText(party), quoteKey{1, "x"})
				}
				_, err := s.ActiveLPQuotes(ctx, party, r)
				return err
			}},
			{Name: "NFT history", Read: func(c bool) error {
				r := PageRequest{}
				if c {
					r.Cursor = mintCursor(t, s, "nft-history:"+nft.nftID(), int64(5))
				}
				_, err := s.NFTHistory(ctx, nft, r)
				return err
			}},
			{Name: "reward history", Read: func(c bool) error {
				r := PageRequest{}
				if c {
					r.Cursor = mintCursor(t, s, "rewards:"+party, int64(5))
				}
				_, err := s.RewardHistory(ctx, party, r)
				return err
			}},
			{Name: "admin offer accepts of a party", Read: func(c bool) error { // its last walk: the offers it bought
				r := PageRequest{Limit: 50}
				if c {
					r.Cursor = mintCursor(t, s, "admin-offer-accepts:"+hashText(party), int64(5))
				}
				_, err := s.OfferAccepts(ctx, party, r)
				return err
			}},
		}
		testdb.WalkInPageOrder(t, s.db, s.dialect == Postgres, log, feeds)
	})
}
