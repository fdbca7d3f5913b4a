package rest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// Without MARKETD_METRICS_ADDR, /metrics on the API's address answers only a request whose
// peer is this machine's loopback and that no proxy relayed; any other gets the 404 of an
// unknown path.
func TestMetrics_OnTheAPIsAddressOnlyForALocalUnproxiedPeer(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b, withTrustedProxies("127.0.0.1"))
		if r := a.do("GET", "/metrics", nil).ok(t); !strings.Contains(string(r.body), "go_goroutines") {
			t.Fatalf("a local scrape: %.200s", r.body)
		}
		a.do("GET", "/metrics", nil, fromPeer("127.0.0.2")).ok(t) // all of 127.0.0.0/8 is this machine
		unknown := problemOf(t, a.do("GET", "/no-such-path", nil))
		for _, h := range []struct{ name, value string }{
			{"X-Forwarded-For", "203.0.113.9"},
			{"X-Forwarded-For", "127.0.0.1"}, // even a proxy on this machine naming itself
			{"Forwarded", "for=203.0.113.9"},
			{"Forwarded", "for=127.0.0.1"},
		} {
			r := a.do("GET", "/metrics", nil, withHeader(h.name, h.value))
			wantProblemShape(t, r, http.StatusNotFound, store.CodeNotFound)
			if p := problemOf(t, r); strings.Replace(p["detail"].(string), "/metrics", "/no-such-path", 1) != unknown["detail"] {
				t.Errorf("%s: %s: not the answer of an unknown path (%v)", h.name, r.body, unknown["detail"])
			}
		}
		// A peer of another address of this machine is not loopback.
		ip := nonLoopbackAddr(t)
		if ip == "" {
			t.Log("this machine has no non-loopback IPv4 address: the remote peer case is not run")
			return
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			t.Fatal(err)
		}
		hs := &http.Server{Handler: a.srv, ReadHeaderTimeout: 5 * time.Second}
		go hs.Serve(ln)
		t.Cleanup(func() { hs.Close() })
		res, err := peerClient(ip).Get("http://" + ln.Addr().String() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound || strings.Contains(string(body), "marketd_") {
			t.Errorf("a scrape from %s: %d %.200s, want 404", ip, res.StatusCode, body)
		}
	})
}

func nonLoopbackAddr(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	return ""
}

// /readyz names what is not ready with a fixed reason per component, never the cause's text
// (a driver's error, an address): the store while the database is down, the NFT index while
// a build that failed for it is retried.
func TestReadyz_NamesWhatIsNotReadyWithoutTheCause(t *testing.T) {
	for _, b := range storetest.Backends() {
		if b.Dialect != store.Postgres {
			continue // SQLite is in process: it cannot go away
		}
		t.Run(b.Name, func(t *testing.T) {
			sc := storetest.Config(storetest.NewClock(storetest.Epoch))
			first, proxy := b.OpenProxied(t, sc)
			s, err := store.Open(context.Background(), first.Config()) // a second instance through the proxy, its index not started
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			a := serveAPI(t, s, nil, Config{PublicURL: sc.PublicURL, Logger: slog.New(slog.DiscardHandler)})
			proxy.SetDown(true)
			s.StartNFTIndex() // its build fails while the database is down, and is retried
			deadline := time.Now().Add(5 * time.Second)
			for err := s.NFTIndexReady(); err == nil || !strings.Contains(err.Error(), "not built"); err = s.NFTIndexReady() {
				if time.Now().After(deadline) {
					t.Fatalf("the NFT index's build did not fail with the database down: %v", err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(time.Second) // a few retries: the next one waits longer
			wantReason := func(r *testResponse, reasons ...string) {
				t.Helper()
				wantProblemShape(t, r, http.StatusServiceUnavailable, store.CodeUnavailable)
				detail, _ := problemOf(t, r)["detail"].(string)
				for _, want := range reasons {
					if detail == want {
						return
					}
				}
				t.Errorf("readyz detail %q, want one of %q", detail, reasons)
			}
			wantReason(a.do("GET", "/readyz", nil), "store: unavailable")
			proxy.SetDown(false)
			if r := a.do("GET", "/readyz", nil); r.status != http.StatusOK {
				wantReason(r, "nftIndex: the NFT index is not built yet")
			}
			if err := s.AwaitNFTIndex(context.Background()); err != nil {
				t.Fatal(err)
			}
			a.do("GET", "/readyz", nil).ok(t)
		})
	}
}
