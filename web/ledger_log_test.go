package web_test

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"testing"

	"marketd/store/admin"
	"marketd/store/storetest"
)

// The console's ledger page shows each update's entry in the transparency log beside its offset.
func TestLedger_ShowsEachUpdatesLogIndex(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		e := newConsoleEnv(t, b)
		e.user("watcher", admin.RoleViewer)
		e.signInParty("alice")
		c := e.client()
		c.mustLogin("watcher")
		p := c.get("/admin/ledger")
		if p.status != http.StatusOK {
			t.Fatalf("ledger: %d", p.status)
		}
		updates := between(p.body, `<table class="updates">`, "</table>")
		rows := regexp.MustCompile(`<td class="num">(\d+)</td><td class="num">(\d+)</td>`).FindAllStringSubmatch(updates, -1)
		us, err := e.store.UpdatesAfter(context.Background(), 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 0 || len(rows) != len(us) {
			t.Fatalf("%d rows with a log index, %d updates: %s", len(rows), len(us), updates)
		}
		index := map[string]int{} // by offset: the place in offset order is the log index
		for i, u := range us {
			index[strconv.FormatInt(u.Offset, 10)] = i
		}
		for _, r := range rows {
			if strconv.Itoa(index[r[1]]) != r[2] {
				t.Errorf("the update at offset %s shows log index %s, want %d", r[1], r[2], index[r[1]])
			}
		}
	})
}
