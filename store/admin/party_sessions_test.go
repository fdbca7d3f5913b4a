package admin_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/admin"
	"marketd/store/storetest"
)

// signedIn onboards a party with hint on s and signs it in; it returns the party and token.
func signedIn(t *testing.T, s *store.Store, hint string) (string, string) {
	t.Helper()
	p := storetest.Onboard(t, s, hint)
	return p.ID, p.SignIn(t, s).Token
}

func TestSearchSessions_MatchesAPartyIdPrefixExactly(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
		alice, _ := signedIn(t, s, "alice")
		signedIn(t, s, "alicebob")
		signedIn(t, s, "Alice")
		for _, tc := range []struct {
			q    string
			want int
		}{{"alice::", 1}, {alice, 1}, {"alice", 2}, {"Alice", 1}, {"al%", 0}, {"", 3}} {
			ss, err := admin.New(s).SearchSessions(ctx, admin.SessionQuery{Party: tc.q})
			if err != nil || len(ss) != tc.want {
				t.Errorf("search %q: %d sessions (%v), want %d", tc.q, len(ss), err, tc.want)
			}
		}
	})
}

// A revoke by an operator is refused at once on the instance that made it and, on PostgreSQL,
// by another instance that had the session cached; it is in the audit log with the same commit.
func TestRevokeSession_HoldsOnEveryInstanceAndIsAudited(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		cfg := storetest.Config(storetest.NewClock(storetest.Epoch))
		a := b.Open(t, cfg)
		other := a
		if b.Dialect == store.Postgres {
			cfg.DB = a.Config().DB
			o, err := store.Open(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			other = o
		}
		party, tok := signedIn(t, a, "alice")
		auth, err := other.Authenticate(ctx, tok) // cached on the other instance
		if err != nil {
			t.Fatal(err)
		}
		if err := admin.New(a).RevokeSession(ctx, auth.SessionID, admin.AuditEntry{Actor: "ada", Addr: "10.0.0.7"}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Authenticate(ctx, tok); store.ErrorCode(err) != store.CodeTokenRevoked {
			t.Fatalf("the revoking instance: %v, want token_revoked", err)
		}
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			_, err := other.Authenticate(ctx, tok)
			if store.ErrorCode(err) == store.CodeTokenRevoked {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the other instance still answers %v five seconds after the revoke", err)
			}
		}
		es, err := admin.New(a).AuditLog(ctx, "", 10)
		if err != nil || len(es) != 1 {
			t.Fatalf("audit: %v %v", es, err)
		}
		if e := es[0]; e.Actor != "ada" || e.Action != "revoke-session" || e.Target != auth.SessionID || e.Addr != "10.0.0.7" || e.Detail != "party "+party || !e.At.Equal(storetest.Epoch) {
			t.Errorf("audit entry %+v", e)
		}
		if err := admin.New(a).RevokeSession(ctx, auth.SessionID, admin.AuditEntry{Actor: "ada"}); store.ErrorCode(err) != store.CodeConflict {
			t.Errorf("second revoke: %v, want conflict", err)
		}
		if err := admin.New(a).RevokeSession(ctx, "nosuch", admin.AuditEntry{Actor: "ada"}); store.ErrorCode(err) != store.CodeNotFound {
			t.Errorf("revoke of nothing: %v, want not_found", err)
		}
		if es, _ := admin.New(a).AuditLog(ctx, "", 10); len(es) != 1 {
			t.Errorf("refused revokes were audited: %d entries", len(es))
		}
	})
}

// The console pages the audit log and the session search with keyset cursors, both ways; a
// cursor of one list is refused by another.
func TestAdminPages_WalkForwardAndBackWithCursors(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		clock := storetest.NewClock(storetest.Epoch)
		s := b.Open(t, storetest.Config(clock))
		for i := range 5 {
			if err := admin.New(s).Audit(ctx, admin.AuditEntry{Actor: "ops", Action: "note", Target: string(rune('a' + i))}); err != nil {
				t.Fatal(err)
			}
			signedIn(t, s, "p"+string(rune('a'+i)))
			clock.Advance(time.Second)
		}
		targets := func(p store.Page[admin.AuditEntry]) (out string) {
			for _, e := range p.Items {
				out += e.Target
			}
			return out
		}
		first, err := admin.New(s).AuditPage(ctx, "ops", store.PageRequest{Limit: 2, ItemCursors: true})
		if err != nil || targets(first) != "ed" || first.Cursor == "" {
			t.Fatalf("first page: %q %v", targets(first), err)
		}
		second, err := admin.New(s).AuditPage(ctx, "ops", store.PageRequest{Limit: 2, Cursor: first.Cursor, ItemCursors: true})
		if err != nil || targets(second) != "cb" {
			t.Fatalf("second page: %q %v", targets(second), err)
		}
		back, err := admin.New(s).AuditPage(ctx, "ops", store.PageRequest{Limit: 2, Cursor: second.ItemCursors[0], Backward: true})
		if err != nil || targets(back) != "ed" || back.Cursor != "" {
			t.Fatalf("back from the second page: %q (more before: %v) %v", targets(back), back.Cursor != "", err)
		}
		if _, err := admin.New(s).AuditPage(ctx, "someone", store.PageRequest{Cursor: first.Cursor}); store.ErrorCode(err) != store.CodeInvalidCursor {
			t.Fatalf("another actor's cursor: %v", err)
		}

		sids := func(p store.Page[store.Session]) (out []string) {
			for _, x := range p.Items {
				out = append(out, x.PartyID[:2])
			}
			return out
		}
		q := admin.SessionQuery{Party: "p"}
		page, err := admin.New(s).SessionsPage(ctx, q, store.PageRequest{Limit: 3})
		if err != nil || strings.Join(sids(page), ",") != "pe,pd,pc" {
			t.Fatalf("sessions, first page: %v %v", sids(page), err)
		}
		page, err = admin.New(s).SessionsPage(ctx, q, store.PageRequest{Limit: 3, Cursor: page.Cursor})
		if err != nil || strings.Join(sids(page), ",") != "pb,pa" || page.Cursor != "" {
			t.Fatalf("sessions, last page: %v %v", sids(page), err)
		}
		if _, err := admin.New(s).SessionsPage(ctx, admin.SessionQuery{Party: "pa"}, store.PageRequest{Cursor: first.Cursor}); store.ErrorCode(err) != store.CodeInvalidCursor {
			t.Fatalf("the audit log's cursor on sessions: %v", err)
		}
	})
}
