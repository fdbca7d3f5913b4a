// Command marketd is the marketplace service: `marketd serve` runs it, `marketd migrate
// up|down|status` manages its schema, and operator commands (seed, collection, pool, oracle,
// admin, keys) act on its store, each printing one JSON object on success. The store's secrets
// are sealed under the key-encryption key of MARKETD_KEK_FILE (keys.go). Every setting is a flag
// and a MARKETD_ variable; `marketd -h` lists the commands (commands.go) and `marketd
// COMMAND -h` the flags and variables each reads. Long work (seed, migrations) draws its
// progress on stderr when stderr is a terminal, and nothing otherwise.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/trace"

	"marketd/graph"
	"marketd/rest"
	"marketd/store"
	"marketd/store/admin"
	"marketd/store/metrics"
	"marketd/store/ratelimit"
	"marketd/web"
)

// newLimiter is the rate limiter of MARKETD_REDIS: windows in Redis, shared by every
// instance, with an in-memory fallback while Redis is unreachable; without it, in memory.
func newLimiter(ctx context.Context, c *config, s *store.Store, log *slog.Logger) (ratelimit.Limiter, func(), error) {
	if c.redis == "" {
		return ratelimit.NewMemory(time.Minute, s.Now), func() {}, nil
	}
	r, err := ratelimit.NewRedis(c.redis, time.Minute, s.Now, log)
	if err != nil {
		return nil, nil, err
	}
	return r, func() { r.Close() }, nil
}

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

func newLogger(level string) *slog.Logger {
	var l slog.Level
	l.UnmarshalText([]byte(level))
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}

// openStore opens the store of c with its key-encryption key (keys.go).
func openStore(ctx context.Context, c *config, log *slog.Logger) (*store.Store, error) {
	c.store.Logger = log
	from, err := loadKEK(c, log)
	if err != nil {
		return nil, err
	}
	s, err := store.Open(ctx, c.store)
	if errors.Is(err, store.ErrWrongKEK) {
		return nil, fmt.Errorf("%w; the key given was read from %s", err, from)
	}
	return s, err
}

func serve(args []string) error {
	c, rest_, err := parseConfig("serve", args)
	if err != nil {
		return err
	}
	if len(rest_) > 0 {
		return fmt.Errorf("serve takes no arguments, got %q", rest_)
	}
	if err := c.checkDev(); err != nil {
		return err
	}
	log := slog.New(rest.WithRequestIDs(newLogger(c.logLevel).Handler())) // a request's lines carry its id
	slog.SetDefault(log)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	tuneGC(ctx)
	tr, err := setupTracing(ctx)
	if err != nil {
		return err
	}
	defer func() { // the spans still queued are exported before the process ends
		flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tr.shutdown(flushCtx); err != nil {
			log.Warn("tracing: spans not exported at shutdown", "err", err.Error())
		}
	}()

	s, err := openStore(ctx, c, log)
	if err != nil {
		return err
	}
	defer s.Close()
	applied, err := s.Migrate(ctx)
	if err != nil {
		return err
	}
	if len(applied) > 0 {
		log.Info("migrations applied", "migrations", applied)
	}
	if c.dev && s.Dialect() == store.Postgres {
		log.Warn("dev mode on PostgreSQL: the tap faucet gives coins to anyone who asks; is this a developer's store?")
	}
	s.StartNFTIndex() // /readyz fails until it is built
	limiter, closeLimiter, err := newLimiter(ctx, c, s, log)
	if err != nil {
		return err
	}
	defer closeLimiter()
	m := metrics.New(s, limiter)
	api, err := rest.New(s, rest.Config{
		Limiter:            limiter,
		Metrics:            m,
		MetricsElsewhere:   c.metricsAddr != "",
		PublicURL:          c.store.PublicURL,
		AllowedOrigins:     c.allowedOrigins,
		Dev:                c.dev,
		RateRead:           c.rateRead,
		RatePrepare:        c.ratePrepare,
		RatePrepareAddress: c.ratePrepareAdr,
		RateSignIn:         c.rateSignIn,
		RateExecute:        c.rateExecute,
		TrustedProxies:     c.trustedProxies,
		WitnessLogs:        c.witnessLogs,
		Logger:             log,
	})
	if err != nil {
		return err
	}
	// GraphQL and the admin console (web/) next to the API: GraphQL on the API's tokens and read
	// budget, the console on the API's rate limiter and its trusted proxies.
	root := frontDoors(api,
		graph.NewHandler(s, graph.Options{Logger: log, Authenticate: api.Authenticate, ChargeRead: api.ChargeRead, ClientAddress: api.ClientOrigin, Metrics: m}),
		web.New(s, web.Config{Limits: api.Limiter(), Dev: c.dev, Logger: log, TrustedProxies: c.trustedProxies}))
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           tr.wrap(root), // a span per request at every door, when tracing is on
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go prune(ctx, s, log)
	go expire(ctx, s, log)
	go swapLoop(ctx, s, log)
	go askWitnesses(ctx, s, c.witnesses, log)
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	if c.metricsAddr != "" {
		mln, err := net.Listen("tcp", c.metricsAddr)
		if err != nil {
			return fmt.Errorf("metrics address: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", m.Handler())
		msrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		defer msrv.Close()
		go func() {
			if err := msrv.Serve(mln); !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("metrics: %w", err)
			}
		}()
		log.Info("metrics listening", "addr", mln.Addr().String())
	}
	log.Info("marketd listening", "addr", ln.Addr().String(), "store", string(s.Dialect()), "kek", s.KEKID(), "public_url", c.store.PublicURL, "dev", c.dev, "limiter", ratelimit.StatusOf(limiter).Backend, "tracing", tr.on())

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Readiness fails first, so load balancers stop sending new requests; then the listener
	// closes and the requests in flight finish.
	api.Drain()
	log.Info("shutting down: readiness fails, draining", "delay", c.drainDelay.String())
	stop() // a second signal ends the process at once
	time.Sleep(c.drainDelay)
	log.Info("shutting down: finishing in-flight requests")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}

// every runs fn each period until ctx ends.
func every(ctx context.Context, period time.Duration, fn func()) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// prune removes expired sign-in state, prepared transactions and console sessions every minute.
func prune(ctx context.Context, s *store.Store, log *slog.Logger) {
	con := admin.New(s)
	every(ctx, time.Minute, func() {
		if _, err := con.PruneSessions(ctx); err != nil && ctx.Err() == nil {
			log.Warn("pruning admin sessions failed", "error", err.Error())
		}
		if n, err := s.Prune(ctx); err != nil && ctx.Err() == nil {
			log.Warn("prune failed", "error", err.Error())
		} else if n != (store.Pruned{}) {
			log.Debug("pruned", "nonces", n.Nonces, "prepared", n.Prepared, "sessions", n.Sessions, "superseded", n.Superseded)
		}
	})
}

// expire archives expired listings and releases expired offers every second, so collection
// statistics follow expiries and an offer's funds return to its maker.
func expire(ctx context.Context, s *store.Store, log *slog.Logger) {
	every(ctx, time.Second, func() {
		if n, err := s.ExpireListings(ctx, 100); err != nil && ctx.Err() == nil {
			log.Warn("expiring listings failed", "error", err.Error())
		} else if n > 0 {
			log.Debug("listings expired", "listings", n)
		}
		if n, err := s.ExpireOffers(ctx, 100); err != nil && ctx.Err() == nil {
			log.Warn("releasing expired offers failed", "error", err.Error())
		} else if n > 0 {
			log.Debug("offers expired", "offers", n)
		}
	})
}

// askWitnesses asks the configured witnesses to cosign the log's checkpoint every second,
// logging a witness's failure when it changes and its recovery.
func askWitnesses(ctx context.Context, s *store.Store, witnesses []store.Witness, log *slog.Logger) {
	if len(witnesses) == 0 {
		return
	}
	client := &http.Client{Timeout: 10 * time.Second}
	last := map[string]string{}
	every(ctx, time.Second, func() {
		for _, r := range s.AskWitnesses(ctx, client, witnesses) {
			msg := ""
			if r.Err != nil {
				msg = r.Err.Error()
			}
			if msg == last[r.Witness] || ctx.Err() != nil {
				continue
			}
			last[r.Witness] = msg
			if msg != "" {
				log.Warn("witness did not cosign", "witness", r.Witness, "size", r.Size, "error", msg)
			} else {
				log.Info("witness cosigns", "witness", r.Witness, "size", r.Size)
			}
		}
	})
}

func migrate(args []string) error {
	if len(args) == 0 {
		return errors.New("migrate wants up, down or status")
	}
	verb := args[0]
	c, extra, err := parseConfig("migrate "+verb, args[1:])
	if err != nil {
		return err
	}
	if len(extra) > 0 {
		return fmt.Errorf("migrate %s takes no arguments, got %q", verb, extra)
	}
	ctx := context.Background()
	s, err := openStore(ctx, c, newLogger(c.logLevel))
	if err != nil {
		return err
	}
	defer s.Close()
	var out any
	switch verb {
	case "up":
		p := newProgress(os.Stderr, "applied %s / %s migrations")
		names, err := s.MigrateWithProgress(ctx, p.report)
		p.end()
		if err != nil {
			return err
		}
		out = map[string]any{"applied": nonNil(names)}
	case "down":
		p := newProgress(os.Stderr, "rolled back %s / %s migrations")
		names, err := s.MigrateDownWithProgress(ctx, p.report)
		p.end()
		if err != nil {
			return err
		}
		out = map[string]any{"rolledBack": nonNil(names)}
	case "status":
		st, err := s.MigrationStatus(ctx)
		if err != nil {
			return err
		}
		out = map[string]any{"migrations": st}
	default:
		return fmt.Errorf("migrate wants up, down or status, not %q", verb)
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// frontDoors routes /graphql (and its GraphiQL assets) to the GraphQL handler, /admin/ to the
// console (when there is one) and every other path to the REST API, which also answers
// unknown paths.
func frontDoors(api, gql, console http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/graphql", gql)
	mux.Handle("/graphql/", gql)
	if console != nil {
		mux.Handle("/admin/", console)
	}
	mux.Handle("/", api)
	return namedByRoute(mux)
}

// namedByRoute names a traced request's span by the pattern of mux that routes it (the door
// it goes through: /graphql, /admin/, /), never its raw path; the door may name it closer.
func namedByRoute(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if span := trace.SpanFromContext(r.Context()); span.IsRecording() {
			_, pattern := mux.Handler(r)
			span.SetName(r.Method + " " + pattern)
		}
		mux.ServeHTTP(w, r)
	})
}
