package rest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// sessionList is a page of GET /api/auth/sessions as a client reads it.
type sessionList struct {
	Items  []sessionView `json:"items"`
	Cursor *string       `json:"cursor"`
}

// signInTimes signs p in n times, moving the clock by step before each, and returns the
// last token.
func (a *testAPI) signInTimes(p *storetest.Party, n int, step time.Duration) string {
	a.t.Helper()
	var tok string
	for range n {
		a.clock.Advance(step)
		tok = a.token(p)
	}
	return tok
}

// sessionPage reads one page of the token's sessions; query is the raw query string.
func (a *testAPI) sessionPage(tok, query string) sessionList {
	a.t.Helper()
	path := "/api/auth/sessions"
	if query != "" {
		path += "?" + query
	}
	r := a.do("GET", path, nil, bearer(tok)).ok(a.t)
	var l sessionList
	dec := json.NewDecoder(strings.NewReader(string(r.body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		a.t.Fatalf("list body: %v: %s", err, r.body)
	}
	if l.Items == nil {
		a.t.Fatalf("items is not an array: %s", r.body)
	}
	if !strings.Contains(string(r.body), `"cursor":`) {
		a.t.Fatalf("no cursor field: %s", r.body)
	}
	return l
}

// allSessionPages follows cursors from the first page and returns every page.
func (a *testAPI) allSessionPages(tok, limit string) []sessionList {
	a.t.Helper()
	var pages []sessionList
	q := url.Values{}
	if limit != "" {
		q.Set("limit", limit)
	}
	for {
		p := a.sessionPage(tok, q.Encode())
		pages = append(pages, p)
		if p.Cursor == nil {
			return pages
		}
		if len(pages) > 100 {
			a.t.Fatal("more than 100 pages: the cursor does not advance")
		}
		q.Set("cursor", *p.Cursor)
	}
}

func sessionIDs(items []sessionView) []string {
	ids := make([]string, len(items))
	for i, s := range items {
		ids[i] = s.SessionID
	}
	return ids
}

func TestSessions_DefaultPagesOfTwentyCoverTheListNewestFirst(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice := a.onboard("alice")
		tok := a.signInTimes(alice, 45, time.Second)

		pages := a.allSessionPages(tok, "")
		var sizes []int
		for _, p := range pages {
			sizes = append(sizes, len(p.Items))
		}
		if len(sizes) != 3 || sizes[0] != 20 || sizes[1] != 20 || sizes[2] != 5 {
			t.Fatalf("page sizes %v, want [20 20 5]", sizes)
		}
		for i, p := range pages[:2] {
			if p.Cursor == nil || *p.Cursor == "" {
				t.Fatalf("page %d has no cursor", i+1)
			}
		}
		var all []sessionView
		for _, p := range pages {
			all = append(all, p.Items...)
		}
		seen := map[string]bool{}
		for i, s := range all {
			if seen[s.SessionID] {
				t.Fatalf("session %s appears twice", s.SessionID)
			}
			seen[s.SessionID] = true
			// Sign-in i (from the newest) happened 45-i seconds after the epoch.
			if want := storetest.Epoch.Add(time.Duration(45-i) * time.Second).Unix(); s.CreatedAt != want {
				t.Fatalf("item %d created at %d, want %d: not newest first", i, s.CreatedAt, want)
			}
		}
		if len(seen) != 45 {
			t.Fatalf("%d distinct sessions, want 45", len(seen))
		}
		if !all[0].Current || all[1].Current {
			t.Fatalf("the newest session (the token's) should be the only current one: %+v %+v", all[0], all[1])
		}

		// One page of 100 holds them all, in the same order.
		full := a.sessionPage(tok, "limit=100")
		if len(full.Items) != 45 || full.Cursor != nil {
			t.Fatalf("limit=100: %d items, cursor %v; want 45 and null", len(full.Items), full.Cursor)
		}
		if got, want := strings.Join(sessionIDs(full.Items), ","), strings.Join(sessionIDs(all), ","); got != want {
			t.Fatal("limit=100 order differs from the paged order")
		}
	})
}

func TestSessions_PageSizeBoundaries(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice := a.onboard("alice")
		tok := a.signInTimes(alice, 45, time.Second)

		// A page that ends exactly at the last item has no cursor.
		if p := a.sessionPage(tok, "limit=45"); len(p.Items) != 45 || p.Cursor != nil {
			t.Fatalf("limit=45: %d items, cursor %v", len(p.Items), p.Cursor)
		}
		p := a.sessionPage(tok, "limit=44")
		if len(p.Items) != 44 || p.Cursor == nil {
			t.Fatalf("limit=44: %d items, cursor %v", len(p.Items), p.Cursor)
		}
		last := a.sessionPage(tok, "limit=44&cursor="+url.QueryEscape(*p.Cursor))
		if len(last.Items) != 1 || last.Cursor != nil {
			t.Fatalf("after 44: %d items, cursor %v", len(last.Items), last.Cursor)
		}
		if p := a.allSessionPages(tok, "1"); len(p) != 45 {
			t.Fatalf("limit=1: %d pages, want 45", len(p))
		}
	})
}

func TestSessions_LimitOutsideOneToHundredIs400(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice := a.onboard("alice")
		tok := a.token(alice)
		for _, limit := range []string{"0", "101", "-1", "abc", "", "1.5", "1e2", "99999999999999999999"} {
			t.Run("limit="+limit, func(t *testing.T) {
				r := a.do("GET", "/api/auth/sessions?limit="+url.QueryEscape(limit), nil, bearer(tok))
				r.wantProblem(t, http.StatusBadRequest, store.CodeInvalidRequest)
				wantDetailMentions(t, r, "limit")
			})
		}
	})
}

// base64URLAlphabet is the alphabet of the cursor's two parts.
const base64URLAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// changeOneChar returns c with the character at i replaced by one that differs from it in
// its lowest bit only, the change most likely to go unnoticed.
func changeOneChar(c string, i int) string {
	k := strings.IndexByte(base64URLAlphabet, c[i])
	repl := byte('x')
	if k >= 0 {
		repl = base64URLAlphabet[k^1]
	}
	return c[:i] + string(repl) + c[i+1:]
}

func TestSessions_UnreadableCursorIs400InvalidCursor(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice, bob := a.onboard("alice"), a.onboard("bob")
		aliceTok := a.signInTimes(alice, 3, time.Second)
		bobTok := a.signInTimes(bob, 3, time.Second)
		real := a.sessionPage(aliceTok, "limit=1").Cursor
		bobs := a.sessionPage(bobTok, "limit=1").Cursor
		if real == nil || bobs == nil {
			t.Fatal("no cursor on a first page of 1 out of 3")
		}
		a.sessionPage(aliceTok, "limit=1&cursor="+url.QueryEscape(*real)) // the real one reads

		cursors := map[string]string{
			"garbage":              "garbage",
			"dot only":             ".",
			"two parts of garbage": "abc.def",
			"base64 json no mac":   "eyJsIjoic2Vzc2lvbnMifQ",
			"empty":                "",
			"very long":            strings.Repeat("A", 5000) + "." + strings.Repeat("A", 22),
			"truncated by one":     (*real)[:len(*real)-1],
			"truncated to half":    (*real)[:len(*real)/2],
			"body only":            (*real)[:strings.IndexByte(*real, '.')],
			"another party's":      *bobs,
		}
		for i := range len(*real) {
			cursors[fmt.Sprintf("changed at %03d", i)] = changeOneChar(*real, i)
		}
		for name, c := range cursors {
			t.Run(name, func(t *testing.T) {
				r := a.do("GET", "/api/auth/sessions?limit=1&cursor="+url.QueryEscape(c), nil, bearer(aliceTok))
				r.wantProblem(t, http.StatusBadRequest, store.CodeInvalidCursor)
			})
		}
	})
}

func TestSessions_CursorIsStableWhileRowsAreInserted(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice := a.onboard("alice")
		tok := a.signInTimes(alice, 45, time.Second)
		before := a.sessionPage(tok, "limit=100").Items

		page1 := a.sessionPage(tok, "")
		a.signInTimes(alice, 5, time.Second) // five newer sessions land before page 1
		page2 := a.sessionPage(tok, "cursor="+url.QueryEscape(*page1.Cursor))

		if got, want := strings.Join(sessionIDs(page1.Items), ","), strings.Join(sessionIDs(before[:20]), ","); got != want {
			t.Fatal("page 1 is not the first 20 of the list")
		}
		if got, want := strings.Join(sessionIDs(page2.Items), ","), strings.Join(sessionIDs(before[20:40]), ","); got != want {
			t.Fatalf("page 2 after inserts does not continue right after page 1:\n got %s\nwant %s", got, want)
		}
		page3 := a.sessionPage(tok, "cursor="+url.QueryEscape(*page2.Cursor))
		if len(page3.Items) != 5 || page3.Cursor != nil {
			t.Fatalf("page 3: %d items, cursor %v; want 5 and null", len(page3.Items), page3.Cursor)
		}
		if full := a.sessionPage(tok, "limit=100").Items; len(full) != 50 {
			t.Fatalf("%d sessions after 5 more sign-ins, want 50", len(full))
		}
	})
}

func TestSessions_PagesAreDisjointWhenTimestampsTie(t *testing.T) {
	// The clock stands still: every session has the same created_at, and the keyset's
	// tie-breaker alone orders them.
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice := a.onboard("alice")
		tok := a.signInTimes(alice, 45, 0)
		seen := map[string]bool{}
		for _, p := range a.allSessionPages(tok, "7") {
			for _, id := range sessionIDs(p.Items) {
				if seen[id] {
					t.Fatalf("session %s on two pages", id)
				}
				seen[id] = true
			}
		}
		if len(seen) != 45 {
			t.Fatalf("%d sessions over the pages, want 45", len(seen))
		}
	})
}
