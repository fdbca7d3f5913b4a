package web_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"slices"
	"testing"

	"marketd/store"
	"marketd/store/admin"
	"marketd/store/storetest"
)

var (
	auditTarget = regexp.MustCompile(`<td class="mono">(n\d{3})</td>`)
	pageLink    = func(id string) *regexp.Regexp { return regexp.MustCompile(`id="` + id + `" href="([^"]+)"`) }
)

// The audit log is paged 50 at a time with keyset cursors: older and newer links walk it both
// ways, keep the filter, and a page reached back is the page it was; a forged cursor is a 400.
func TestAudit_PagesWalkBothWaysWithTheFilterKept(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		e := newConsoleEnv(t, b)
		e.user("ops", admin.RoleOperator)
		for i := range 120 {
			if err := admin.New(e.store).Audit(context.Background(), admin.AuditEntry{Actor: "robot", Action: "note", Target: fmt.Sprintf("n%03d", i)}); err != nil {
				t.Fatal(err)
			}
		}
		c := e.client()
		c.mustLogin("ops")
		type view struct {
			targets    []string
			prev, next string
		}
		open := func(path string) view {
			t.Helper()
			p := c.get(path)
			if p.status != http.StatusOK {
				t.Fatalf("GET %s: %d", path, p.status)
			}
			var v view
			for _, m := range auditTarget.FindAllStringSubmatch(p.body, -1) {
				v.targets = append(v.targets, m[1])
			}
			if m := pageLink("page-prev").FindStringSubmatch(p.body); m != nil {
				v.prev = html.UnescapeString(m[1])
			}
			if m := pageLink("page-next").FindStringSubmatch(p.body); m != nil {
				v.next = html.UnescapeString(m[1])
			}
			return v
		}
		want := func(from, to int) (out []string) { // newest first
			for i := from; i >= to; i-- {
				out = append(out, fmt.Sprintf("n%03d", i))
			}
			return out
		}
		first := open("/admin/audit?actor=robot")
		if !slices.Equal(first.targets, want(119, 70)) || first.prev != "" || first.next == "" {
			t.Fatalf("first page: %v, prev %q, next %q", first.targets, first.prev, first.next)
		}
		second := open(first.next)
		if !slices.Equal(second.targets, want(69, 20)) || second.prev == "" || second.next == "" {
			t.Fatalf("second page: %v, prev %q, next %q", second.targets, second.prev, second.next)
		}
		last := open(second.next)
		if !slices.Equal(last.targets, want(19, 0)) || last.next != "" {
			t.Fatalf("last page: %v, next %q", last.targets, last.next)
		}
		back := open(last.prev)
		if !slices.Equal(back.targets, second.targets) || back.prev == "" || back.next == "" {
			t.Fatalf("back from the last page: %v, prev %q, next %q", back.targets, back.prev, back.next)
		}
		if start := open(back.prev); !slices.Equal(start.targets, first.targets) || start.prev != "" {
			t.Fatalf("back to the start: %v, prev %q", start.targets, start.prev)
		}
		if p := c.get("/admin/audit?actor=robot&after=forged.cursor"); p.status != http.StatusBadRequest {
			t.Fatalf("a forged cursor: %d, want 400", p.status)
		}
	})
}

var updateOffset = regexp.MustCompile(`<tr><td class="num">(\d+)</td>`)

// The ledger's update log is paged 50 at a time by offset, newest first, both ways.
func TestLedger_UpdatesArePagedByOffsetBothWays(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		e := newConsoleEnv(t, b)
		e.user("watcher", admin.RoleViewer)
		if _, err := e.store.SeedDemo(context.Background(), store.DemoOptions{NFTs: 24, Seed: 5}); err != nil {
			t.Fatal(err)
		}
		all, err := admin.New(e.store).LatestUpdates(context.Background(), "", store.MaxPageSize)
		if err != nil || len(all) < 60 {
			t.Fatalf("the demo market made %d updates (%v); the test needs more than 50", len(all), err)
		}
		c := e.client()
		c.mustLogin("watcher")
		open := func(path string) (offsets []string, prev, next string) {
			t.Helper()
			p := c.get(path)
			if p.status != http.StatusOK {
				t.Fatalf("GET %s: %d", path, p.status)
			}
			updates := between(p.body, `<table class="updates">`, "</table>")
			for _, m := range updateOffset.FindAllStringSubmatch(updates, -1) {
				offsets = append(offsets, m[1])
			}
			if m := pageLink("page-prev").FindStringSubmatch(p.body); m != nil {
				prev = html.UnescapeString(m[1])
			}
			if m := pageLink("page-next").FindStringSubmatch(p.body); m != nil {
				next = html.UnescapeString(m[1])
			}
			return offsets, prev, next
		}
		var want []string
		for _, u := range all {
			want = append(want, fmt.Sprint(u.Offset))
		}
		first, prev, next := open("/admin/ledger")
		if !slices.Equal(first, want[:50]) || prev != "" || next == "" {
			t.Fatalf("first page: %v, prev %q, next %q; want %v", first, prev, next, want[:50])
		}
		second, prev, _ := open(next)
		if !slices.Equal(second, want[50:min(100, len(want))]) || prev == "" {
			t.Fatalf("second page: %v, prev %q; want %v", second, prev, want[50:min(100, len(want))])
		}
		if back, _, _ := open(prev); !slices.Equal(back, first) {
			t.Fatalf("back: %v, want %v", back, first)
		}
	})
}
