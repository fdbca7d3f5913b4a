package rest

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"marketd/store"
	"marketd/store/clientaddr"
	"marketd/store/ratelimit"
)

// apiRoutes is every endpoint the API serves; rest/openapi.yaml documents exactly these.
func (srv *Server) apiRoutes() []route {
	return append([]route{
		{method: "GET", path: "/healthz", unlimited: true, produces: "application/json", handle: srv.healthz},
		{method: "GET", path: "/readyz", unlimited: true, produces: "application/json", handle: srv.readyz},
		{method: "GET", path: "/openapi.yaml", unlimited: true, produces: "application/yaml", handle: serveOpenAPI},
		{method: "GET", path: "/.well-known/jwks.json", unlimited: true, produces: "application/json", handle: srv.jwks},

		{method: "POST", path: "/api/parties/onboard/prepare", prepare: true, signin: true, handle: srv.onboardPrepare},
		{method: "POST", path: "/api/parties/onboard/execute", signin: true, handle: srv.execute(kindOnboard)},

		{method: "POST", path: "/api/auth/nonce", signin: true, handle: srv.nonce},
		{method: "POST", path: "/api/auth/verify", signin: true, handle: srv.verify},
		{method: "GET", path: "/api/auth/me", access: token, handle: srv.me},
		{method: "POST", path: "/api/auth/logout", access: token, signin: true, noRotate: true, handle: srv.logout},
		{method: "GET", path: "/api/auth/sessions", access: token, handle: srv.sessions},
	}, append(append(append(append(append(srv.walletRoutes(), srv.nftRoutes()...), srv.offerRoutes()...), srv.swapRoutes()...), srv.logRoutes()...), srv.metricsRoutes()...)...)
}

// metricsRoutes serves /metrics on the API's address unless it is served elsewhere. There it
// answers only a request from this machine that no proxy relayed (clientaddr.Local): the API's
// address is public, and what the metrics tell (routes, error rates, pool sizes) is for the
// operator. Anyone else gets the 404 of a path that does not exist.
func (srv *Server) metricsRoutes() []route {
	if srv.cfg.MetricsElsewhere {
		return nil
	}
	return []route{{method: "GET", path: "/metrics", unlimited: true, handle: func(w http.ResponseWriter, r *http.Request) error {
		if !clientaddr.Local(r) {
			return store.Errorf(store.CodeNotFound, "no endpoint at %s; see /openapi.yaml", r.URL.Path)
		}
		srv.metrics.Handler().ServeHTTP(w, r)
		return nil
	}}}
}

func (srv *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// readyz answers 200 while this instance should get traffic: not shutting down, the store
// answers, its migrations are current, its NFT index is built; it says which rate-limit
// backend answers. What is not ready is named by a fixed reason per component: the cause
// (a driver's or Redis's error text, migration names) goes to the log, never to the caller.
func (srv *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	if srv.draining.Load() {
		return store.Errorf(store.CodeUnavailable, "shutting down: finishing the requests in flight")
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := srv.store.Ping(ctx); err != nil {
		return notReady("store: unavailable", err)
	}
	pending, err := srv.store.PendingMigrations(ctx)
	if err != nil {
		return notReady("store: unavailable", err)
	}
	if len(pending) > 0 {
		return notReady("migrations: pending; run marketd migrate up", errors.New("not applied: "+strings.Join(pending, ", ")))
	}
	if err := srv.store.NFTIndexReady(); err != nil {
		return notReady("nftIndex: the NFT index is not built yet", err)
	}
	lim := ratelimit.StatusOf(srv.limiter)
	body := map[string]any{"status": "ready", "store": "ok", "migrations": "current", "nftIndex": "ready",
		"limiter": map[string]any{"backend": lim.Backend, "fallback": lim.Fallback}}
	if lim.Fallback {
		// The limiter logs Redis's error itself, each time it falls back.
		body["limiter"].(map[string]any)["error"] = "redis: unavailable"
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

// notReady is readiness's 503: reason for the caller, the cause kept for the log (writeError
// logs it) and for the database-fault count.
func notReady(reason string, cause error) error {
	return &store.Error{Code: store.CodeUnavailable, Message: reason, Err: cause}
}

//go:embed openapi.yaml
var openapiYAML []byte

func serveOpenAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/yaml")
	w.Write(openapiYAML)
	return nil
}

func (srv *Server) jwks(w http.ResponseWriter, r *http.Request) error {
	keys, err := srv.store.JWKS(r.Context())
	if err != nil {
		return err
	}
	b, err := json.Marshal(map[string]any{"keys": keys})
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Write(b)
	return nil
}
