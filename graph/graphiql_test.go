package graph

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"marketd/store/storetest"
)

// browser starts headless Chromium for a test. Without Chromium the test is skipped, unless
// MARKETD_REQUIRE_BROWSER is set (.ci/run sets it and installs Chromium).
func browser(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv("MARKETD_REQUIRE_BROWSER") != "" {
			t.Fatal("Chromium is not installed (apt-get install chromium)")
		}
		t.Skip("Chromium is not installed; set MARKETD_REQUIRE_BROWSER to make this a failure")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		// Any host but the test server resolves nowhere: a page that needs a CDN breaks.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"),
	)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(cancel3)
	return ctx
}

func TestGraphiQL_LoadsOfflineAndRunsAQuery(t *testing.T) {
	b := storetest.Backends()[0] // the page is the same on every store
	g := newTestGraph(t, b, 60)
	ctx := browser(t)

	var mu sync.Mutex
	var requested []string
	chromedp.ListenTarget(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			requested = append(requested, e.Request.URL)
			mu.Unlock()
		}
	})
	var result string
	err := chromedp.Run(ctx,
		network.Enable(),
		chromedp.Navigate(g.http.URL+"/graphql"),
		// GraphiQL is ready once its query editor holds the default query.
		chromedp.Poll(`(() => { const cm = document.querySelector('.graphiql-query-editor .CodeMirror');
			return !!cm && cm.CodeMirror.getValue().includes('collections'); })()`, nil,
			chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Click(`.graphiql-execute-button`, chromedp.ByQuery),
		// The result editor fills in once the server answered.
		chromedp.Poll(`(() => { const cm = document.querySelector('.result-window .CodeMirror');
			const v = cm ? cm.CodeMirror.getValue() : '';
			return v.includes('ledger-apes') ? v : false; })()`, &result,
			chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second)),
	)
	if err != nil {
		t.Fatalf("GraphiQL did not run the query: %v (result pane: %q)", err, result)
	}
	if !strings.Contains(result, `"collections"`) || !strings.Contains(result, "ledger-apes") {
		t.Fatalf("result pane: %q", result)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, u := range requested {
		if !strings.HasPrefix(u, g.http.URL+"/") && !strings.HasPrefix(u, "data:") && !strings.HasPrefix(u, "blob:") {
			t.Errorf("the page fetched %s, outside the server", u)
		}
	}
	if len(requested) < 5 {
		t.Errorf("saw only %d requests: %v", len(requested), requested)
	}
}
