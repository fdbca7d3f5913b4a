package rest

import (
	"net/http"
)

// The client of a request is read by package clientaddr, the one reading every front door
// shares (srv.cfg.TrustedProxies are the peers whose X-Forwarded-For names the client).

// clientAddr is the client's address as text, for session records and logs.
func (srv *Server) clientAddr(r *http.Request) string { return srv.cfg.TrustedProxies.Addr(r) }

// ClientOrigin is the budget a request counts against when no party does: the client's
// address, or its /64 for IPv6 (clientaddr.Proxies.Origin). GraphQL counts each client's
// websockets under it too.
func (srv *Server) ClientOrigin(r *http.Request) string { return srv.cfg.TrustedProxies.Origin(r) }
