// Package rest is marketd's documented REST API (rest/openapi.yaml): sign-in, onboarding and
// the prepare/execute write endpoints, over the store.
package rest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"marketd/store"
	"marketd/store/clientaddr"
	"marketd/store/metrics"
	"marketd/store/ratelimit"
	"marketd/store/translog"
)

// Config is the REST API's part of the service configuration.
type Config struct {
	PublicURL      string   // its origin may write with the session cookie
	AllowedOrigins []string // more origins that may write with the cookie
	Dev            bool     // dev mode: the tap exists, cookies travel over plain http
	RateRead       int      // GET requests under /api/ per minute per origin; 0 = unlimited
	RatePrepare    int      // prepare requests per minute per party (per origin when anonymous); 0 = unlimited
	// RatePrepareAddress bounds the prepares of one client address over all the parties it
	// signs in as, so onboarding more parties buys no more prepares; 0 = unlimited.
	RatePrepareAddress int
	RateSignIn         int                // sign-in and onboarding requests per minute per client address; 0 = unlimited
	RateExecute        int                // executes (and intent submits) per minute per client address; 0 = unlimited
	TrustedProxies     clientaddr.Proxies // the proxies whose X-Forwarded-For names the client
	Limiter            ratelimit.Limiter
	Logger             *slog.Logger
	// Metrics collects the service's metrics; nil makes a registry of the API's own.
	Metrics *metrics.Metrics
	// MetricsElsewhere leaves /metrics off the API's routes: the caller serves
	// Metrics.Handler() on another address (MARKETD_METRICS_ADDR).
	MetricsElsewhere bool
	// WitnessLogs are the logs the service witnesses (POST /witness/add-checkpoint), by
	// origin; none answers every submission 404 (MARKETD_WITNESS_LOGS).
	WitnessLogs map[string]*translog.WitnessedLog
}

// The service's default sign-in and execute limits, per client address and minute. A wallet
// spends 2 sign-in requests a sign-in (nonce, verify) and 2 more to onboard, so 60 lets 15
// wallets behind one address (a NAT) sign in each minute while a script guessing at verify
// gets one attempt a second. A party prepares at most MARKETD_RATE_PREPARE (60) a minute, so
// 600 executes are ten parties at full speed behind one address, and a wallet's burst of
// dozens never meets it.
const (
	DefaultRateSignIn  = 60
	DefaultRateExecute = 600
)

// Server serves the REST API.
type Server struct {
	store   *store.Store
	cfg     Config
	log     *slog.Logger
	limiter ratelimit.Limiter
	metrics *metrics.Metrics
	origins map[string]bool
	routes  []route
	// draining is set when shutdown begins: readiness fails first, so a load balancer stops
	// sending requests while those in flight finish.
	draining atomic.Bool
	mux      *http.ServeMux
	handler  http.Handler
}

// New builds the REST API over s.
func New(s *store.Store, cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Logger = slog.New(WithRequestIDs(cfg.Logger.Handler()))
	if cfg.Limiter == nil {
		cfg.Limiter = ratelimit.NewMemory(time.Minute, s.Now)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New(s, cfg.Limiter)
	}
	srv := &Server{store: s, cfg: cfg, log: cfg.Logger, limiter: cfg.Limiter, metrics: cfg.Metrics, origins: map[string]bool{}}
	for _, o := range append([]string{cfg.PublicURL}, cfg.AllowedOrigins...) {
		if strings.TrimSpace(o) == "" {
			continue
		}
		origin, err := originOf(o)
		if err != nil {
			return nil, err
		}
		srv.origins[origin] = true
	}
	srv.routes = srv.apiRoutes()
	if err := checkBudgets(srv.routes); err != nil {
		return nil, err
	}
	srv.mux = http.NewServeMux()
	for _, rt := range srv.routes {
		srv.mux.Handle(rt.method+" "+rt.path, srv.wrap(rt))
	}
	srv.mux.HandleFunc("/", srv.unrouted)
	srv.handler = srv.withRequestLog(srv.withRecover(srv.mux))
	return srv, nil
}

func (srv *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { srv.handler.ServeHTTP(w, r) }

// Limiter is the rate limiter the API counts requests with.
func (srv *Server) Limiter() ratelimit.Limiter { return srv.limiter }

// originOf normalises an origin (scheme://host[:port]) from a URL or origin string.
func originOf(s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("origin %q: want scheme://host[:port]", s)
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

// unrouted answers what no route matched: 405 when the path exists for another method, else 404.
func (srv *Server) unrouted(w http.ResponseWriter, r *http.Request) {
	if isRead(r) { // every GET under /api/ counts, a 404 too
		if err := srv.CountRead(w, r); err != nil {
			srv.writeError(w, r, err)
			return
		}
	}
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := srv.mux.Handler(probe); pattern != "/" && pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeProblem(w, http.StatusMethodNotAllowed, store.CodeMethodNotAllowed, r.Method+" is not allowed here; allowed: "+strings.Join(allow, ", "))
		return
	}
	writeProblem(w, http.StatusNotFound, store.CodeNotFound, "no endpoint at "+truncate(r.URL.Path, 200)+"; see /openapi.yaml")
}

type ctxKey int

const (
	requestIDKey ctxKey = iota
	authKey
	infoKey
)

// requestInfo is what the handlers learn about a request that the access log reports.
type requestInfo struct {
	party string
	route string // the route's pattern: the metrics label, never the raw path
}

func infoOf(ctx context.Context) *requestInfo {
	i, _ := ctx.Value(infoKey).(*requestInfo)
	return i
}

var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

func newRequestID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// statusRecorder remembers the status and size of a response for the access log.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += n
	return n, err
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// withRequestLog gives every request an id, echoed in X-Request-Id, and logs it once done: the
// trace id of the request's span when it has one (otelhttp in cmd/marketd), else the
// X-Request-Id sent when well-formed, else a new one. It names the request's span by its route.
func (srv *Server) withRequestLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		span := trace.SpanFromContext(r.Context())
		id := r.Header.Get("X-Request-Id")
		if sc := span.SpanContext(); sc.HasTraceID() {
			id = sc.TraceID().String() // the logs and the problem body name the request's trace
		} else if !requestIDPattern.MatchString(id) {
			id = newRequestID()
		}
		w.Header().Set("X-Request-Id", id)
		info := new(requestInfo)
		ctx := context.WithValue(context.WithValue(r.Context(), requestIDKey, id), infoKey, info)
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r.WithContext(ctx))
		route := info.route
		if route == "" {
			route = "unmatched"
		}
		if span.IsRecording() { // the span's name is the route's pattern, never the raw path
			span.SetName(r.Method + " " + route)
			if info.route != "" {
				span.SetAttributes(semconv.HTTPRoute(info.route))
			}
		}
		srv.metrics.Request(route, r.Method, rec.status, time.Since(start))
		level := slog.LevelInfo
		// Probes, and refusals over a rate limit (counted in marketd_ratelimit_rejections_total):
		// under a flood a line each would cost more than the refusal itself.
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || rec.status == http.StatusTooManyRequests {
			level = slog.LevelDebug
		}
		if !srv.log.Enabled(ctx, level) {
			return
		}
		attrs := []slog.Attr{
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.Int("status", rec.status),
			slog.Int("bytes", rec.bytes),
			slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
			slog.String("remote", r.RemoteAddr),
		}
		if info.party != "" {
			attrs = append(attrs, slog.String("party", info.party))
		}
		srv.log.LogAttrs(ctx, level, "request", attrs...)
	})
}

// withRecover turns a panic into a logged 500 without a stack trace in the body.
func (srv *Server) withRecover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				srv.log.ErrorContext(r.Context(), "panic", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				writeProblem(w, http.StatusInternalServerError, store.CodeInternal, "internal error")
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// Drain makes /readyz answer 503 from now on; call it when shutdown begins.
func (srv *Server) Drain() { srv.draining.Store(true) }

// WithRequestIDs wraps a log handler so every record logged with a request's context carries
// its request_id.
func WithRequestIDs(h slog.Handler) slog.Handler {
	if _, ok := h.(requestIDHandler); ok {
		return h
	}
	return requestIDHandler{h}
}

type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, rec slog.Record) error {
	if id := requestID(ctx); id != "" {
		rec.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, rec)
}

func (h requestIDHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(as)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}
