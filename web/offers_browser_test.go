package web_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"

	"marketd/store/admin"
	"marketd/store/storetest"
)

// TestBrowser_Offers drives the offers list in headless Chromium with JavaScript off: a viewer
// opens it, narrows it to one maker's closed collection offers with the filter form, follows
// the maker's link to the party's page, which shows its open offer, and from there the link to
// all of its offers; another party's page shows the NFTs it bought through its offers.
func TestBrowser_Offers(t *testing.T) {
	browser := newBrowser(t)
	for _, b := range storetest.Backends() { // one at a time: they share the browser's cookies
		t.Run(b.Name, func(t *testing.T) { browserOffers(t, browser, b) })
	}
}

func browserOffers(t *testing.T, browser context.Context, b storetest.Backend) {
	e := newConsoleEnv(t, b)
	dir := artifactsDir(t, "admin-console-"+b.Name)
	e.user("watcher", admin.RoleViewer)
	ob := newOfferBook(t, e)
	ctx := tab(t, browser)
	rows := func() []string {
		t.Helper()
		var nodes []*cdp.Node
		if err := chromedp.Run(ctx, chromedp.Nodes(`tr.offer`, &nodes, chromedp.ByQueryAll, chromedp.AtLeast(0))); err != nil {
			t.Fatal(err)
		}
		ids := make([]string, len(nodes))
		for i, n := range nodes {
			ids[i] = n.AttributeValue("data-offer")
		}
		return ids
	}
	err := chromedp.Run(ctx,
		browserLogin(ctx, e.url, "watcher"),
		chromedp.Navigate(e.url+"/admin/offers"),
		chromedp.WaitVisible(`table.offers`, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatal(err)
	}
	if got := rows(); strings.Join(got, ",") != strings.Join([]string{ob.expired, ob.cancelled, ob.trait, ob.partial, ob.filled}, ",") {
		t.Fatalf("the offers list: %q, want all five newest first", got)
	}
	shoot(t, ctx, dir, "offers")

	var location, state string
	err = chromedp.Run(ctx,
		chromedp.SendKeys(`#filter-maker`, ob.dave.ID, chromedp.ByID),
		chromedp.SetValue(`#filter-kind`, "collection", chromedp.ByID),
		chromedp.SetValue(`#filter-state`, "closed", chromedp.ByID),
		clickAndLoad(`#filter-submit`),
		chromedp.WaitVisible(`table.offers`, chromedp.ByQuery),
		chromedp.Location(&location),
		chromedp.Text(`tr.offer:first-child .pill`, &state, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(location)
	if q := u.Query(); q.Get("maker") != ob.dave.ID || q.Get("kind") != "collection" || q.Get("state") != "closed" {
		t.Fatalf("the filter form led to %s", location)
	}
	if got := rows(); strings.Join(got, ",") != ob.expired+","+ob.cancelled || state != "expired" {
		t.Fatalf("dave's closed collection offers: %q (the first %q), want %s (expired) and %s", got, state, ob.expired, ob.cancelled)
	}
	shoot(t, ctx, dir, "offers-filtered")

	// The maker's link leads to the party's page: its whole id, its open offer.
	var whole string
	err = chromedp.Run(ctx,
		chromedp.Click(`tr.offer:first-child .party a`, chromedp.ByQuery),
		chromedp.WaitVisible(`#party`, chromedp.ByID),
		chromedp.Value(`#party input.whole-id`, &whole, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatal(err)
	}
	if got := rows(); whole != ob.dave.ID || strings.Join(got, ",") != ob.trait {
		t.Fatalf("dave's page: id %q, open offers %q; want %s and his trait offer %s", whole, got, ob.dave.ID, ob.trait)
	}
	err = chromedp.Run(ctx, clickAndLoad(`#all-offers`), chromedp.WaitVisible(`table.offers`, chromedp.ByQuery))
	if err != nil {
		t.Fatal(err)
	}
	if got := rows(); strings.Join(got, ",") != strings.Join([]string{ob.expired, ob.cancelled, ob.trait}, ",") {
		t.Fatalf("all of dave's offers: %q", got)
	}
	// carol's page shows her open offer and the two NFTs she bought through her offers.
	var accepts string
	err = chromedp.Run(ctx, chromedp.Navigate(e.url+"/admin/parties/"+url.PathEscape(ob.carol.ID)), chromedp.Text(`#accepts`, &accepts, chromedp.ByID))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(accepts, "bought through its offer") != 2 {
		t.Fatalf("carol's accepts: %q", accepts)
	}
	shoot(t, ctx, dir, "party-offers")
}
