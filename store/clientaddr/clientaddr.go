// Package clientaddr says which client a request comes from, the same way for every front
// door (REST's rate limits, the console's sign-in throttle, session records and logs): the
// connection's peer, or, when the peer is a trusted proxy, the right-most X-Forwarded-For
// entry that is not itself a trusted proxy. No other header a client can write (Origin,
// X-Real-IP, Forwarded) is read, so no client can pick the address it is counted under.
package clientaddr

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Proxies are the peers whose X-Forwarded-For names the client (MARKETD_TRUSTED_PROXIES). The
// zero value trusts no proxy: every request's client is its peer.
type Proxies []netip.Prefix

// ParseProxies reads addresses and CIDRs; a bare address is a /32 (or /128). A host name is
// an error: a proxy is trusted by address only.
func ParseProxies(list []string) (Proxies, error) {
	var out Proxies
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: want an IP address or a CIDR such as 10.0.0.0/8 (a proxy is trusted by address, never by host name)", s)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// Contains tells whether a is a trusted proxy.
func (tp Proxies) Contains(a netip.Addr) bool {
	for _, p := range tp {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// IP is the request's client address: the peer's, or, when the peer is a trusted proxy, the
// right-most X-Forwarded-For entry that is not itself a trusted proxy. The second result is
// false only when the peer address cannot be parsed (a test's fake RemoteAddr).
func (tp Proxies) IP(r *http.Request) (netip.Addr, bool) {
	peer, ok := Peer(r)
	if !ok || !tp.Contains(peer) {
		return peer, ok
	}
	client := peer
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		entries := strings.Split(hops[i], ",")
		for j := len(entries) - 1; j >= 0; j-- {
			a, err := parseHop(strings.TrimSpace(entries[j]))
			if err != nil {
				return client, true // garbage left of a trusted hop: the nearest trusted hop answers for it
			}
			client = a.Unmap()
			if !tp.Contains(client) {
				return client, true
			}
		}
	}
	return client, true
}

// Addr is the client's address as text, for session records, audit entries and logs.
func (tp Proxies) Addr(r *http.Request) string {
	if a, ok := tp.IP(r); ok {
		return a.String()
	}
	return truncate(r.RemoteAddr, 64)
}

// Origin is the budget a request counts against when no party does: the client's address, or
// its /64 for IPv6, since one host is handed a whole /64 and could otherwise buy a budget per
// address.
func (tp Proxies) Origin(r *http.Request) string {
	a, ok := tp.IP(r)
	if !ok {
		return truncate(r.RemoteAddr, 64)
	}
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// Peer is the connection's peer address.
func Peer(r *http.Request) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// Local tells whether r reached this process directly from this machine: its peer is a
// loopback address and it names no client of a proxy (no X-Forwarded-For, no Forwarded), so
// no proxy on this machine relayed it from elsewhere.
func Local(r *http.Request) bool {
	peer, ok := Peer(r)
	if !ok || !peer.IsLoopback() {
		return false
	}
	_, xff := r.Header["X-Forwarded-For"]
	_, fwd := r.Header["Forwarded"]
	return !xff && !fwd
}

// parseHop reads one X-Forwarded-For entry: an address, or an address with a port as some
// proxies write it ("203.0.113.9:4711", "[2001:db8::1]:443").
func parseHop(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		ap, perr := netip.ParseAddrPort(s)
		if perr != nil {
			return netip.Addr{}, err
		}
		a = ap.Addr()
	}
	return a, nil
}

// truncate cuts s to n bytes, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
