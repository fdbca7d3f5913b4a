package admin

import (
	"context"
	"testing"

	"marketd/store"
	"marketd/store/internal/keyset"
	"marketd/store/internal/testdb"
	"marketd/store/storetest"
)

// mintCursor issues the cursor of list that names key, as a page ending at an item with that key would.
func mintCursor[K any](t *testing.T, s *store.Store, list string, key K) string {
	t.Helper()
	p, err := store.FinishPage(context.Background(), s, &keyset.Query[K]{List: list, Limit: 1, ItemCursors: true}, []K{key}, func(k K) K { return k })
	if err != nil {
		t.Fatal(err)
	}
	return p.ItemCursors[0]
}

// sessionKey has the shape of a session's position in the store's session lists (its cursor's
// key), for a cursor minted here that SessionPage decodes.
type sessionKey struct {
	CreatedAt int64  `json:"t"`
	SID       string `json:"s"`
}

// Every read of the console's growing histories walks an index in its ORDER BY, on the first
// page and from a cursor: PostgreSQL (scans and sorts priced out) plans no Sort node, and
// SQLite does not sort in a temporary b-tree. The store's own feeds have the test of the same
// name in package store.
func TestHistoryReads_WalkAnIndexInPageOrder(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
		c := New(s)
		party := storetest.Onboard(t, s, "taker").ID
		log := &testdb.QueryLog{Skip: store.InBackground}
		s.AddQueryHook(log)
		postgres := s.Dialect() == store.Postgres
		feeds := []testdb.PageRead{
			{Name: "admin audit log", Read: func(cur bool) error {
				r := store.PageRequest{Limit: 50}
				if cur {
					r.Cursor = mintCursor(t, s, "admin-audit:"+store.HashText(""), int64(5))
				}
				_, err := c.AuditPage(ctx, "", r)
				return err
			}},
			{Name: "admin audit log of an actor", Read: func(cur bool) error {
				r := store.PageRequest{Limit: 50}
				if cur {
					r.Cursor = mintCursor(t, s, "admin-audit:"+store.HashText("ops"), int64(5))
				}
				_, err := c.AuditPage(ctx, "ops", r)
				return err
			}},
			{Name: "admin updates", Read: func(cur bool) error {
				r := store.PageRequest{Limit: 50}
				if cur {
					r.Cursor = mintCursor(t, s, "admin-updates:"+store.HashText(""), int64(5))
				}
				_, err := c.UpdatesPage(ctx, "", r)
				return err
			}},
			{Name: "admin updates of a party", Read: func(cur bool) error {
				r := store.PageRequest{Limit: 50}
				if cur {
					r.Cursor = mintCursor(t, s, "admin-updates:"+store.HashText(party), int64(5))
				}
				_, err := c.UpdatesPage(ctx, party, r)
				return err
			}},
			{Name: "admin latest prepared", Read: func(bool) error { _, err := c.LatestPrepared(ctx, "", 50); return err }},
			{Name: "admin latest prepared of a party", Read: func(bool) error { _, err := c.LatestPrepared(ctx, party, 50); return err }},
			{Name: "admin sessions", Read: func(cur bool) error {
				r := store.PageRequest{Limit: 50}
				if cur {
					r.Cursor = mintCursor(t, s, "admin-sessions:"+store.HashText("|"), sessionKey{CreatedAt: 5, SID: "s"})
				}
				_, err := c.SessionsPage(ctx, SessionQuery{}, r)
				return err
			}},
			{Name: "admin offers", Read: func(cur bool) error {
				r := store.PageRequest{Limit: 50}
				if cur {
					r.Cursor = mintCursor(t, s, "admin-offers:"+store.HashText("|||"), offerListKey{5, "x"})
				}
				_, err := c.Offers(ctx, OfferFilter{}, r)
				return err
			}},
			{Name: "admin offers of a maker", Read: func(cur bool) error {
				r := store.PageRequest{Limit: 50}
				if cur {
					r.Cursor = mintCursor(t, s, "admin-offers:"+store.HashText("|"+party+"||open"), offerListKey{5, "x"})
				}
				_, err := c.Offers(ctx, OfferFilter{Maker: party, State: "open"}, r)
				return err
			}},
			{Name: "admin offers of a collection", Read: func(cur bool) error {
				r := store.PageRequest{Limit: 50}
				if cur {
					r.Cursor = mintCursor(t, s, "admin-offers:"+store.HashText("col||trait|closed"), offerListKey{5, "x"})
				}
				_, err := c.Offers(ctx, OfferFilter{CollectionID: "col", Kind: store.OfferTrait, State: "closed"}, r)
				return err
			}},
		}
		testdb.WalkInPageOrder(t, s.ReadDB(), postgres, log, feeds)
	})
}
