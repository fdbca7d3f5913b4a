package rest

import (
	"net/http"
	"net/netip"

	"marketd/store/clientaddr"
)

// trustedProxies are the peers whose X-Forwarded-For names the client; package clientaddr
// keeps the one reading of a request's client that every front door shares.
type trustedProxies = clientaddr.Proxies

func parseTrustedProxies(list []string) (trustedProxies, error) { return clientaddr.ParseProxies(list) }

// clientIP is the request's client address (clientaddr.Proxies.IP).
func (srv *Server) clientIP(r *http.Request) (netip.Addr, bool) { return srv.proxies.IP(r) }

// clientAddr is the client's address as text, for session records and logs.
func (srv *Server) clientAddr(r *http.Request) string { return srv.proxies.Addr(r) }

// clientOrigin is the budget a request counts against when no party does: the client's
// address, or its /64 for IPv6 (clientaddr.Proxies.Origin).
func (srv *Server) clientOrigin(r *http.Request) string { return srv.proxies.Origin(r) }
