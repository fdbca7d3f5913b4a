package rest

import (
	"context"
	"net"
	"net/http"
	"testing"

	"marketd/store"
	"marketd/store/clientaddr"
	"marketd/store/storetest"
)

type peerKey struct{}

// fromPeer sends the request from a local address of the loopback network (127.0.0.0/8), so
// the service sees a different peer, as a different client host.
func fromPeer(ip string) reqOption {
	return func(r *http.Request) { *r = *r.WithContext(context.WithValue(r.Context(), peerKey{}, ip)) }
}

// peerClient is a client whose connections leave from ip.
func peerClient(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

func withTrustedProxies(p ...string) apiOption {
	proxies, err := clientaddr.ParseProxies(p)
	if err != nil {
		panic(err) // a test's own list
	}
	return func(_ *store.Config, rc *Config) { rc.TrustedProxies = proxies }
}

// No header a client writes (Origin, X-Forwarded-For from an untrusted peer, X-Real-IP,
// Forwarded) chooses a budget; only the peer address does.
func TestReadLimit_NoClientWrittenHeaderBuysANewBudget(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b, withRates(2, 2))
		for range 2 {
			a.do("GET", "/api/auth/me", nil)
		}
		k := newTestKey()
		for range 2 {
			a.do("POST", "/api/parties/onboard/prepare", k.onboardBody("alice")).ok(t)
		}
		forged := map[string][]string{
			"Origin":          {"https://one.example", "https://two.example", "null"},
			"X-Forwarded-For": {"203.0.113.1", "203.0.113.2, 198.51.100.7", "2001:db8::1"},
			"X-Real-IP":       {"203.0.113.3", "198.51.100.8"},
			"Forwarded":       {"for=203.0.113.4", `for="[2001:db8::2]";proto=https`},
		}
		for name, values := range forged {
			for _, v := range values {
				wantRateLimited(t, a.do("GET", "/api/auth/me", nil, withHeader(name, v)), 60)
				wantRateLimited(t, a.do("POST", "/api/parties/onboard/prepare", k.onboardBody("alice"), withHeader(name, v)), 60)
			}
		}
		// Another host (another loopback address) has a budget of its own.
		r := a.do("GET", "/api/auth/me", nil, fromPeer("127.0.0.2"))
		r.wantProblem(t, http.StatusUnauthorized, store.CodeUnauthenticated)
		wantRateHeaders(t, r.header, 2, 1, 60)
	})
}

// Behind a trusted proxy the right-most X-Forwarded-For entry that is not a trusted proxy is
// the client; entries left of it are the client's own writing and ignored.
func TestReadLimit_TrustedProxyNamesTheClientRightMostUntrustedEntry(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b, withRates(2, 0), withTrustedProxies("127.0.0.1", "10.0.0.0/8"))
		via := func(xff string) reqOption { return withHeader("X-Forwarded-For", xff) }
		for _, xff := range []string{"203.0.113.9", "1.1.1.1, 203.0.113.9, 10.1.2.3"} {
			a.do("GET", "/api/auth/me", nil, via(xff))
		}
		for _, xff := range []string{"203.0.113.9", "9.9.9.9, 203.0.113.9", "8.8.8.8,203.0.113.9, 10.0.0.1, 10.200.0.1", "203.0.113.9:4711"} {
			wantRateLimited(t, a.do("GET", "/api/auth/me", nil, via(xff)), 60)
		}
		// Another client behind the proxy, and the proxy's own requests, count apart.
		wantRateHeaders(t, a.do("GET", "/api/auth/me", nil, via("203.0.113.10")).header, 2, 1, 60)
		wantRateHeaders(t, a.do("GET", "/api/auth/me", nil).header, 2, 1, 60)
		// An untrusted peer's X-Forwarded-For is not read: 127.0.0.2 is a client like any other.
		for i := range 2 {
			wantRateHeaders(t, a.do("GET", "/api/auth/me", nil, fromPeer("127.0.0.2"), via("198.51.100.1")).header, 2, 1-i, 60)
		}
		wantRateLimited(t, a.do("GET", "/api/auth/me", nil, fromPeer("127.0.0.2"), via("198.51.100.2")), 60)
		// IPv6 clients count per /64: one host holds a whole /64.
		a.do("GET", "/api/auth/me", nil, via("2001:db8:1:2::1"))
		wantRateHeaders(t, a.do("GET", "/api/auth/me", nil, via("2001:db8:1:2:ffff::9")).header, 2, 0, 60)
		wantRateHeaders(t, a.do("GET", "/api/auth/me", nil, via("2001:db8:1:3::1")).header, 2, 1, 60)
	})
}

func TestNew_BadTrustedProxyIsAnError(t *testing.T) {
	if _, err := clientaddr.ParseProxies([]string{"10.0.0.0/8", "proxy.example"}); err == nil {
		t.Fatal("a host name was accepted as a trusted proxy")
	}
}
