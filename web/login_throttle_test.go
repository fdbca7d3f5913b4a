package web_test

import (
	"net"
	"net/http"
	"net/http/cookiejar"
	"slices"
	"strings"
	"testing"

	"marketd/rest"
	"marketd/store/admin"
	"marketd/store/clientaddr"
	"marketd/store/storetest"
	"marketd/web"
)

// viaProxy is a console client whose requests come from the trusted proxy (127.0.0.1) on
// behalf of client: the proxy names it in X-Forwarded-For.
func (e *consoleEnv) viaProxy(client string) *browserless {
	b := e.client()
	b.header = http.Header{"X-Forwarded-For": {client}}
	return b
}

// fromAddr is a console client that connects directly from ip, a loopback address.
func (e *consoleEnv) fromAddr(ip string) *browserless {
	jar, _ := cookiejar.New(nil)
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &browserless{e: e, c: &http.Client{Jar: jar, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// Wrong passwords for ada from one client behind the trusted proxy throttle that client, not
// ada: her own sign-in through the proxy from another client, and from a direct address,
// succeeds, while the guessing client stays refused, for every user name.
func TestLogin_GuessesFromOneClientNeverLockTheUserOutOfAnother(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		proxies, err := clientaddr.ParseProxies([]string{"127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		e := newConsoleEnv(t, b, func(_ *rest.Config, wc *web.Config) { wc.TrustedProxies = proxies })
		e.user("ada", admin.RoleOperator)
		e.user("bea", admin.RoleViewer)
		a := e.viaProxy("203.0.113.7")
		for i := range 25 {
			p := a.login("ada", "wrong password "+string(rune('a'+i)))
			if p.status != http.StatusUnauthorized && p.status != http.StatusTooManyRequests {
				t.Fatalf("guess %d: %d", i+1, p.status)
			}
			if i >= 5 && p.status != http.StatusTooManyRequests {
				t.Fatalf("guess %d from the same client: %d, want 429", i+1, p.status)
			}
		}
		// Ada, through the same proxy from her own address, and then directly.
		e.viaProxy("203.0.113.8").mustLogin("ada")
		e.fromAddr("127.0.0.2").mustLogin("ada")
		// The guessing client is throttled whoever it names, the right password included.
		for _, name := range []string{"ada", "bea"} {
			if p := a.login(name, testPassword); p.status != http.StatusTooManyRequests || !strings.Contains(p.body, "Too many sign-in attempts") {
				t.Errorf("client A signing in as %s: %d, want 429", name, p.status)
			}
		}
		// The audit log names the client, not the proxy.
		if audit := e.auditActions(); !slices.Contains(audit, "ada login ada 203.0.113.8") {
			t.Errorf("ada's login through the proxy is not audited under her address: %q", audit)
		}
	})
}

// An untrusted peer's X-Forwarded-For buys no budget of its own.
func TestLogin_UntrustedForwardedForIsNotTheClient(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		e := newConsoleEnv(t, b, func(_ *rest.Config, wc *web.Config) { wc.LoginPerUser, wc.LoginPerAddr = 3, 6 })
		e.user("ada", admin.RoleOperator)
		for i := range 6 {
			c := e.viaProxy("198.51.100." + string(rune('1'+i)))
			if p := c.login("ada", "wrong password"); p.status != http.StatusUnauthorized && p.status != http.StatusTooManyRequests {
				t.Fatalf("guess %d: %d", i+1, p.status)
			}
		}
		if p := e.viaProxy("198.51.100.9").login("ada", testPassword); p.status != http.StatusTooManyRequests {
			t.Fatalf("a forged X-Forwarded-For from an untrusted peer bought a fresh budget: %d", p.status)
		}
	})
}
