package admin_test

import (
	"context"
	"testing"
	"time"

	"marketd/store/admin"
	"marketd/store/storetest"
)

func TestSessionStore_KeepsDataUntilExpiry(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
		con := admin.New(s)
		st := con.Sessions()
		if _, found, err := st.Find("nope"); found || err != nil {
			t.Fatalf("find of nothing: %v %v", found, err)
		}
		if err := st.Commit("tok", []byte("one"), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := st.Commit("tok", []byte("two"), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if b, found, err := st.Find("tok"); !found || err != nil || string(b) != "two" {
			t.Fatalf("find: %q %v %v", b, found, err)
		}
		if err := st.Commit("old", []byte("x"), time.Now().Add(-time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, found, _ := st.Find("old"); found {
			t.Errorf("an expired session was found")
		}
		if n, err := con.PruneSessions(ctx); err != nil || n != 1 {
			t.Errorf("prune: %d %v, want 1", n, err)
		}
		if err := st.Delete("tok"); err != nil {
			t.Fatal(err)
		}
		if _, found, _ := st.Find("tok"); found {
			t.Errorf("a deleted session was found")
		}
	})
}
