package rest

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// trustedProxies are the peers whose X-Forwarded-For names the client: behind them, the
// right-most entry that is not itself a trusted proxy is the client's address.
type trustedProxies []netip.Prefix

// parseTrustedProxies reads addresses and CIDRs; a bare address is a /32 (or /128).
func parseTrustedProxies(list []string) (trustedProxies, error) {
	var out trustedProxies
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
			return nil, fmt.Errorf("trusted proxy %q: want an address or a CIDR", s)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

func (tp trustedProxies) contains(a netip.Addr) bool {
	for _, p := range tp {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// clientIP is the request's client address: the peer's, or, when the peer is a trusted proxy,
// the right-most X-Forwarded-For entry that is not itself a trusted proxy. No other header a
// client can write (Origin, X-Real-IP, Forwarded) is read. The second result is false only
// when the peer address cannot be parsed (a test's fake RemoteAddr).
func (srv *Server) clientIP(r *http.Request) (netip.Addr, bool) {
	peer, ok := peerAddr(r)
	if !ok || !srv.proxies.contains(peer) {
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
			if !srv.proxies.contains(client) {
				return client, true
			}
		}
	}
	return client, true
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

func peerAddr(r *http.Request) (netip.Addr, bool) {
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

// clientAddr is the client's address as text, for session records and logs.
func (srv *Server) clientAddr(r *http.Request) string {
	if a, ok := srv.clientIP(r); ok {
		return a.String()
	}
	return truncate(r.RemoteAddr, 64)
}

// clientOrigin is the budget a request counts against when no party does: the client's
// address, or its /64 for IPv6, since one host is handed a whole /64 and could otherwise
// buy a budget per address.
func (srv *Server) clientOrigin(r *http.Request) string {
	a, ok := srv.clientIP(r)
	if !ok {
		return truncate(r.RemoteAddr, 64)
	}
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}
