package clientaddr

import (
	"net/http/httptest"
	"testing"
)

func TestIP_BehindATrustedProxyIsTheRightMostUntrustedHop(t *testing.T) {
	tp, err := ParseProxies([]string{"10.0.0.0/8", " 192.0.2.1 ", ""})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ peer, xff, addr, origin string }{
		{"203.0.113.5:1000", "198.51.100.1", "203.0.113.5", "203.0.113.5"}, // untrusted peer: its header is not read
		{"10.1.1.1:1000", "", "10.1.1.1", "10.1.1.1"},
		{"10.1.1.1:1000", "1.1.1.1, 198.51.100.1, 10.2.2.2", "198.51.100.1", "198.51.100.1"},
		{"192.0.2.1:1000", "198.51.100.2:4711", "198.51.100.2", "198.51.100.2"},
		{"10.1.1.1:1000", "garbage, 10.2.2.2", "10.2.2.2", "10.2.2.2"},
		{"10.1.1.1:1000", "2001:db8:1:2::9", "2001:db8:1:2::9", "2001:db8:1:2::/64"},
		{"[::ffff:10.1.1.1]:1000", "198.51.100.3", "198.51.100.3", "198.51.100.3"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.peer
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		if got := tp.Addr(r); got != c.addr {
			t.Errorf("peer %s xff %q: Addr %s, want %s", c.peer, c.xff, got, c.addr)
		}
		if got := tp.Origin(r); got != c.origin {
			t.Errorf("peer %s xff %q: Origin %s, want %s", c.peer, c.xff, got, c.origin)
		}
	}
	if _, err := ParseProxies([]string{"proxy.example"}); err == nil {
		t.Error("a host name was accepted as a trusted proxy")
	}
}

func TestLocal_OnlyALoopbackPeerThatNamesNoProxiedClient(t *testing.T) {
	for _, c := range []struct {
		peer, header, value string
		want                bool
	}{
		{"127.0.0.1:5000", "", "", true},
		{"[::1]:5000", "", "", true},
		{"127.0.0.2:5000", "", "", true},
		{"127.0.0.1:5000", "X-Forwarded-For", "203.0.113.9", false},
		{"127.0.0.1:5000", "Forwarded", "for=203.0.113.9", false},
		{"127.0.0.1:5000", "X-Forwarded-For", "", false}, // present, even empty
		{"192.0.2.10:5000", "", "", false},
		{"[::ffff:127.0.0.1]:5000", "", "", true},
		{"not an address", "", "", false},
	} {
		r := httptest.NewRequest("GET", "/metrics", nil)
		r.RemoteAddr = c.peer
		if c.header != "" {
			r.Header[c.header] = []string{c.value}
		}
		if got := Local(r); got != c.want {
			t.Errorf("peer %s %s=%q: Local %v, want %v", c.peer, c.header, c.value, got, c.want)
		}
	}
}
