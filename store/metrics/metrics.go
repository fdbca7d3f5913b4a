// Package metrics is marketd's Prometheus instrumentation: HTTP requests by route pattern,
// GraphQL operations by type and outcome, sign-in and session events, prepares and executes by kind and outcome, ledger commits, rate
// limiting, the database pool and the Go runtime. Labels are route patterns and kinds, never
// raw paths or party ids, so their number is bounded by the code.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"marketd/store"
	"marketd/store/ratelimit"
)

// Metrics holds the service's collectors in a registry of its own. A nil *Metrics records
// nothing, so callers need not check.
type Metrics struct {
	reg           *prometheus.Registry
	requests      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	gqlOps        *prometheus.CounterVec
	gqlSeconds    *prometheus.HistogramVec
	gqlReused     prometheus.Counter
	signIns       prometheus.Counter
	rotations     prometheus.Counter
	revocations   prometheus.Counter
	prepares      *prometheus.CounterVec
	executes      *prometheus.CounterVec
	commits       *prometheus.CounterVec
	commitSeconds prometheus.Histogram
	rateLimited   *prometheus.CounterVec
	unavailable   *prometheus.CounterVec
}

// New registers every collector and hooks the store's commit observer.
func New(s *store.Store, limiter ratelimit.Limiter) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "marketd_http_requests_total", Help: "HTTP requests by route pattern, method and status.",
	}, []string{"route", "method", "status"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "marketd_http_request_duration_seconds", Help: "HTTP request latency by route pattern and method.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	}, []string{"route", "method"})
	m.gqlOps = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "marketd_graphql_operations_total", Help: "GraphQL operations by type (query, subscription, or invalid when none parsed) and outcome (ok or the first error's code).",
	}, []string{"type", "outcome"})
	m.gqlSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "marketd_graphql_operation_duration_seconds", Help: "GraphQL operation latency, request to response, by type (subscriptions, which last as long as their client, are not timed).",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	}, []string{"type"})
	m.gqlReused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "marketd_graphql_reused_answers_total", Help: "GraphQL query answers served again from memory, every cached page they were built from still current (also counted in marketd_graphql_operations_total).",
	})
	m.signIns = prometheus.NewCounter(prometheus.CounterOpts{Name: "marketd_signins_total", Help: "Successful sign-ins (verify)."})
	m.rotations = prometheus.NewCounter(prometheus.CounterOpts{Name: "marketd_token_rotations_total", Help: "Session cookies rotated to a new token."})
	m.revocations = prometheus.NewCounter(prometheus.CounterOpts{Name: "marketd_session_revocations_total", Help: "Sessions ended by logout."})
	m.prepares = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "marketd_prepares_total", Help: "Prepare requests by kind (the endpoint) and outcome (ok or the error code).",
	}, []string{"kind", "outcome"})
	m.executes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "marketd_executes_total", Help: "Execute requests by kind (the endpoint) and outcome: ok, stale, expired, bad_signature or another error code.",
	}, []string{"kind", "outcome"})
	m.commits = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "marketd_ledger_commits_total", Help: "Ledger updates committed, by kind.",
	}, []string{"kind"})
	m.commitSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "marketd_ledger_commit_duration_seconds", Help: "Time of a ledger update's database transaction, begin to commit.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
	})
	m.rateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "marketd_ratelimit_rejections_total", Help: "Requests refused 429 by scope (read, prepare, signin, execute).",
	}, []string{"scope"})
	m.unavailable = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "marketd_database_faults_total", Help: "Requests answered 503 because of the database, by code: unavailable (it could not be reached) or outcome_unknown (a commit lost its connection).",
	}, []string{"code"})
	fallback := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "marketd_ratelimit_fallback", Help: "1 while the shared Redis limiter is unreachable and this instance counts in memory.",
	}, func() float64 {
		if ratelimit.StatusOf(limiter).Fallback {
			return 1
		}
		return 0
	})
	shed := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "marketd_database_shed_total", Help: "Requests refused 503 unavailable because the database connections would not come free within the admission bound (a queue too long for the pool's pace, or one that stood still).",
	}, func() float64 { return float64(s.DatabaseSheds()) })
	m.reg.MustRegister(shed, m.requests, m.duration, m.gqlOps, m.gqlSeconds, m.gqlReused, m.signIns, m.rotations, m.revocations, m.prepares,
		m.executes, m.commits, m.commitSeconds, m.rateLimited, m.unavailable, fallback,
		collectors.NewDBStatsCollector(s.SQLDB(), "marketd"),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	s.ObserveCommits(func(kind string, took time.Duration) {
		m.commits.WithLabelValues(kind).Inc()
		m.commitSeconds.Observe(took.Seconds())
	})
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Request records one HTTP request under its route pattern.
func (m *Metrics) Request(route, method string, status int, took time.Duration) {
	if m == nil {
		return
	}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
	default:
		method = "OTHER" // a client chooses the method: keep the label set bounded
	}
	if status == 0 {
		status = http.StatusOK // the handler wrote nothing
	}
	m.requests.WithLabelValues(route, method, itoa(status)).Inc()
	m.duration.WithLabelValues(route, method).Observe(took.Seconds())
}

// GraphQLOperation records one GraphQL operation of type typ (query, subscription, or invalid
// when the request held none that parsed) ending in outcome (ok or an error code), which took
// took to answer. A subscription is counted once, not timed: it lasts as long as its client.
func (m *Metrics) GraphQLOperation(typ, outcome string, took time.Duration) {
	if m == nil {
		return
	}
	m.gqlOps.WithLabelValues(typ, outcome).Inc()
	if typ != "subscription" {
		m.gqlSeconds.WithLabelValues(typ).Observe(took.Seconds())
	}
}

// GraphQLAnswerReused records a query answered again from memory, which took took; it counts
// as an operation too.
func (m *Metrics) GraphQLAnswerReused(took time.Duration) {
	if m == nil {
		return
	}
	m.gqlReused.Inc()
	m.GraphQLOperation("query", "ok", took)
}

// DatabaseFault records a request answered 503 because of the database.
func (m *Metrics) DatabaseFault(code store.Code) {
	if m != nil {
		m.unavailable.WithLabelValues(string(code)).Inc()
	}
}

// Prepared records a prepare of kind ending in err.
func (m *Metrics) Prepared(kind string, err error) {
	if m != nil {
		m.prepares.WithLabelValues(kind, Outcome(err)).Inc()
	}
}

// Executed records an execute of kind ending in err.
func (m *Metrics) Executed(kind string, err error) {
	if m != nil {
		m.executes.WithLabelValues(kind, Outcome(err)).Inc()
	}
}

func (m *Metrics) SignedIn() {
	if m != nil {
		m.signIns.Inc()
	}
}

func (m *Metrics) Rotated() {
	if m != nil {
		m.rotations.Inc()
	}
}

func (m *Metrics) Revoked() {
	if m != nil {
		m.revocations.Inc()
	}
}

// RateLimited records a 429 in scope.
func (m *Metrics) RateLimited(scope string) {
	if m != nil {
		m.rateLimited.WithLabelValues(scope).Inc()
	}
}

// Outcome names how an operation ended: ok, or its error code, with the three an operator
// watches most spelled plainly (stale, expired, bad_signature).
func Outcome(err error) string {
	if err == nil {
		return "ok"
	}
	switch code := store.ErrorCode(err); code {
	case store.CodePreparedExpired:
		return "expired"
	case store.CodeInvalidSignature:
		return "bad_signature"
	default:
		return string(code)
	}
}

func itoa(status int) string {
	if status >= 100 && status <= 599 {
		return string(rune('0'+status/100)) + string(rune('0'+status/10%10)) + string(rune('0'+status%10))
	}
	return "other"
}
