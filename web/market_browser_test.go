package web_test

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"marketd/rest"
	"marketd/store"
	"marketd/store/admin"
	"marketd/store/storetest"
	"marketd/web"
)

// TestBrowser_MarketLanding_ChartsShowWhatTheTestDid makes real market activity on a test
// clock (a demo market's sales and swaps, a sale and a swap over REST, wallet sign-ins, 429s
// from a read burst and from console sign-ins), then opens the landing page in headless
// Chromium with JavaScript off and reads the figures back from the SVG: each bar's value,
// its hover title and its height on the axis.
func TestBrowser_MarketLanding_ChartsShowWhatTheTestDid(t *testing.T) {
	browser := newBrowser(t)
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) { browserMarket(t, browser, b) })
	}
}

// fillsOf counts the swap fills of taker's intents, read from their status.
func fillsOf(t *testing.T, s *store.Store, taker string) int {
	t.Helper()
	h, err := s.SwapHistory(context.Background(), store.SwapHistoryFilter{Taker: taker}, store.PageRequest{Limit: store.MaxPageSize})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range h.Items {
		st, err := s.IntentStatus(context.Background(), taker, v.IntentCID)
		if err != nil {
			t.Fatal(err)
		}
		n += len(st.Fills)
	}
	return n
}

func browserMarket(t *testing.T, browser context.Context, b storetest.Backend) {
	ctx := context.Background()
	e := newConsoleEnv(t, b, func(rc *rest.Config, wc *web.Config) { rc.RateRead = 3; wc.LoginPerUser = 2 })
	dir := artifactsDir(t, "admin-console-"+b.Name)
	e.user("ops", admin.RoleOperator)

	// 12:00: the demo market's sales and swaps.
	demo, err := e.store.SeedDemo(ctx, store.DemoOptions{NFTs: 200, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	seedFills := fillsOf(t, e.store, demo.Parties[len(demo.Parties)-1])
	if demo.Sales == 0 || seedFills == 0 {
		t.Fatalf("the demo market made %d sales and %d fills; the test needs both", demo.Sales, seedFills)
	}

	// 12:30: two wallet sign-ins; 12:35: a third, who buys an NFT and swaps over REST.
	e.clock.Advance(30 * time.Minute)
	e.signInParty("alice")
	e.signInParty("bob")
	e.clock.Advance(5 * time.Minute)
	carol := e.signInParty("carol")
	e.exec(carol, "/api/wallet/tap/prepare", "/api/wallet/tap/execute", map[string]string{"instrument": "CC", "amount": "1000"})
	e.exec(carol, "/api/wallet/nft-preapproval/prepare", "/api/wallet/nft-preapproval/execute", map[string]string{})
	listings, err := e.store.Listings(ctx, store.ListingFilter{State: "active"}, store.PageRequest{Limit: store.MaxPageSize})
	if err != nil {
		t.Fatal(err)
	}
	var cheapest *store.Listing
	for i, l := range listings.Items {
		if l.Currency == store.CC && (cheapest == nil || l.Price.Cmp(cheapest.Price) < 0) {
			cheapest = &listings.Items[i]
		}
	}
	if cheapest == nil {
		t.Fatal("the demo market lists nothing in CC")
	}
	e.exec(carol, "/api/nft/buy/atomic/prepare", "/api/nft/buy/atomic/execute", map[string]string{"cid": cheapest.CID})
	e.exec(carol, "/api/swap/prepare", "/api/swap/intent/submit", map[string]any{"poolId": demo.Pools[0], "sell": "CC", "amount": "5", "minReceive": "0",
		"deadline": e.clock.Now().Add(10 * time.Minute).Unix()})
	var carolFills int
	for range 100 { // an intent is filled by its pool's batch, just after the submit answers
		if carolFills = fillsOf(t, e.store, carol.ID); carolFills > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if carolFills == 0 {
		t.Fatal("carol's swap was not filled")
	}

	// Still 12:35: a read burst, 3 allowed and 4 refused; console sign-ins as an unknown user,
	// 2 allowed and 1 refused.
	for range 7 {
		e.restStatus("GET", "/api/auth/me", "", nil)
	}
	anon := e.client()
	for range 3 {
		anon.login("nobody", "not the password")
	}
	if err := e.store.FlushRefusals(ctx); err != nil { // the flusher would take a few seconds
		t.Fatal(err)
	}

	tb := tab(t, browser)
	if err := chromedp.Run(tb, browserLogin(tb, e.url, "ops"), chromedp.Navigate(e.url+"/admin/"), chromedp.WaitVisible(`#refusals`, chromedp.ByID)); err != nil {
		t.Fatal(err)
	}
	shoot(t, tb, dir, "market")

	// mark reads one bar or dot of a chart: its value, hover title and height on the axis.
	type mark struct {
		value, title string
		height, top  float64
	}
	read := func(chartID, label, series string) mark {
		t.Helper()
		sel := fmt.Sprintf(`#%s [data-label="%s"][data-series="%s"]`, chartID, label, series)
		var m mark
		var h, max string
		var ok bool
		err := chromedp.Run(tb,
			chromedp.AttributeValue(sel, "data-value", &m.value, &ok, chromedp.ByQuery),
			chromedp.AttributeValue(sel, "height", &h, &ok, chromedp.ByQuery),
			chromedp.AttributeValue("#"+chartID, "data-max", &max, &ok, chromedp.ByQuery),
			chromedp.TextContent(sel+` title`, &m.title, chromedp.ByQuery),
		)
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		m.height, _ = strconv.ParseFloat(h, 64)
		m.top, _ = strconv.ParseFloat(max, 64)
		return m
	}
	// The plot is 156 units high: a bar of value v on an axis up to top is v/top of it.
	wantBar := func(chartID, label, series string, want int, title string) {
		t.Helper()
		m := read(chartID, label, series)
		v, _ := strconv.Atoi(m.value)
		if v != want || !strings.Contains(m.title, title) {
			t.Errorf("%s at %s (%s): value %q, title %q; want %d, %q", chartID, label, series, m.value, m.title, want, title)
		}
		if wantH := float64(want) / m.top * 156; math.Abs(m.height-wantH) > 0.1 || m.top < float64(want) {
			t.Errorf("%s at %s: height %.1f on an axis to %v, want %.1f", chartID, label, m.height, m.top, wantH)
		}
	}
	sales := demo.Sales + 1
	wantBar("sales-count", "12:00", "sales", sales, fmt.Sprintf("12:00 · %d sales", sales))
	wantBar("sales-count", "11:00", "sales", 0, "11:00 · 0 sales")
	wantBar("swap-fills", "12:00", "fills", seedFills, fmt.Sprintf("12:00 · %d fills", seedFills))
	wantBar("swap-fills", "12:35", "fills", carolFills, fmt.Sprintf("12:35 · %d fills", carolFills))
	wantBar("sign-ins", "12:30", "sign-ins", 2, "12:30 · 2 sign-ins")
	wantBar("sign-ins", "12:35", "sign-ins", 1, "12:35 · 1 sign-ins")
	wantBar("refusals", "12:35", "read", 4, "12:35 · read: 4 refusals")
	if m := read("refusals", "12:35", "admin-login"); m.value != "1" || m.title != "12:35 · admin-login: 1 refusals" {
		t.Errorf("console sign-in refusals at 12:35: %q %q", m.value, m.title)
	}
	if m := read("sales-volume", "12:00", "CC"); m.value == "0" || !strings.HasPrefix(m.title, "12:00 · CC: ") {
		t.Errorf("CC volume at 12:00: %q %q", m.value, m.title)
	}
	var open string
	if err := chromedp.Run(tb, chromedp.Text(`#tile-open-sessions .figure`, &open, chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	if open != "3" {
		t.Errorf("open sessions: %q, want 3", open)
	}
}

// TestBrowser_CopyButton_CopiesTheWholePartyIdWithJavaScriptOn: copy.js reveals the copy
// button next to a shortened party id, and a click puts the whole id on the clipboard.
func TestBrowser_CopyButton_CopiesTheWholePartyIdWithJavaScriptOn(t *testing.T) {
	browser := startBrowser(t, true)
	e := newConsoleEnv(t, storetest.Backends()[0])
	e.user("ops", admin.RoleOperator)
	alice := e.signInParty("alice")
	tb := tab(t, browser)
	row := `#sessions tbody tr:first-child`
	var label, copied string
	err := chromedp.Run(tb,
		grantClipboard(e.url),
		browserLogin(tb, e.url, "ops"),
		chromedp.Navigate(e.url+"/admin/sessions"),
		chromedp.WaitVisible(row+` button.copy`, chromedp.ByQuery),
		chromedp.Click(row+` button.copy`, chromedp.ByQuery),
		chromedp.Poll(`document.querySelector("#sessions button.copy").textContent !== "copy"`, nil),
		chromedp.Text(row+` button.copy`, &label, chromedp.ByQuery),
		chromedp.Evaluate(`navigator.clipboard.readText()`, &copied, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }),
	)
	if err != nil {
		t.Fatal(err)
	}
	if label != "copied" || copied != alice.ID {
		t.Fatalf("after the click: button %q, clipboard %q; want \"copied\" and %q", label, copied, alice.ID)
	}
}

// grantClipboard lets the console's origin read and write the clipboard without a prompt.
func grantClipboard(origin string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		return cdpbrowser.GrantPermissions([]cdpbrowser.PermissionType{cdpbrowser.PermissionTypeClipboardReadWrite, cdpbrowser.PermissionTypeClipboardSanitizedWrite}).
			WithOrigin(origin).Do(ctx)
	})
}
