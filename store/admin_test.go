package store_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/admin"
	"marketd/store/storetest"
)

func TestAdminSessionStore_KeepsOnlyAHashOfEachTokenAndFindsItAfterARestart(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
		raw := make([]byte, 32) // a token as scs makes one: 32 random bytes, base64url
		rand.Read(raw)
		token := base64.RawURLEncoding.EncodeToString(raw)
		if err := admin.New(s).Sessions().Commit(token, []byte("support's session"), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		tables, err := s.TableValues(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(tables["admin_sessions"]) == 0 {
			t.Fatal("admin_sessions was not read")
		}
		for table, values := range tables {
			for _, v := range values {
				for _, form := range [][]byte{[]byte(token), raw, []byte(hex.EncodeToString(raw))} {
					if bytes.Contains(v, form) {
						t.Errorf("the session's token is readable in %s", table)
					}
				}
			}
		}
		// A session the console opened before the store hashed (scs hashed the token itself,
		// the same way) is found by its token: an upgrade signs no one out.
		before := "a token the console hashed itself before"
		h := sha256.Sum256([]byte(before))
		if err := s.ExecRaw(ctx, "INSERT INTO admin_sessions (token, data, expiry) VALUES (?, ?, ?)",
			base64.RawURLEncoding.EncodeToString(h[:]), []byte("from before"), time.Now().Add(time.Hour).UnixMicro()); err != nil {
			t.Fatal(err)
		}
		again := admin.New(b.Reopen(t, s.Config())).Sessions() // another instance, after a restart
		if data, found, err := again.Find(token); !found || err != nil || string(data) != "support's session" {
			t.Errorf("the session after a restart: %q %v %v", data, found, err)
		}
		if data, found, err := again.Find(before); !found || err != nil || string(data) != "from before" {
			t.Errorf("a session opened before the store hashed: %q %v %v", data, found, err)
		}
		if _, found, _ := again.Find(base64.RawURLEncoding.EncodeToString(h[:])); found {
			t.Error("the stored hash opens the session it keys: a reader of the database could present it")
		}
	})
}

// signedIn onboards a party with hint on s and signs it in; it returns the party and token.
func signedIn(t *testing.T, s *store.Store, hint string) (string, string) {
	t.Helper()
	p := storetest.Onboard(t, s, hint)
	return p.ID, p.SignIn(t, s).Token
}
