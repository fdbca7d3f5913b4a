// Package web is marketd's admin console: server-rendered pages (templ) under /admin for
// support staff, with their own users, sessions kept in the store, CSRF protection, login
// throttling and an audit log of every operator action. Its landing page charts the market
// (SVG drawn on the server, chart.go). It works with JavaScript off. README.md maps the pages.
package web

//go:generate go tool templ generate -path .

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"errors"
	"go.opentelemetry.io/otel/trace"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/alexedwards/scs/v2"

	"marketd/store"
	"marketd/store/admin"
	"marketd/store/clientaddr"
	"marketd/store/ratelimit"
)

//go:embed static
var static embed.FS

// Limits is what the console needs of the API's rate limiter: its state and a reset. The
// limiter may live in this process or be shared (Redis); either satisfies this.
type Limits interface {
	State() []ratelimit.KeyState
	Reset(key string) bool
}

// Config is the admin console's part of the service configuration.
type Config struct {
	Limits      Limits        // the API's rate limiter; nil hides the rate-limit page's data
	Dev         bool          // cookies over plain http
	IdleTimeout time.Duration // a session unused this long ends; default 30m
	Lifetime    time.Duration // a session ends this long after sign-in, used or not; default 12h
	Logger      *slog.Logger

	// TrustedProxies are the proxies whose X-Forwarded-For names the client, as for the API
	// (MARKETD_TRUSTED_PROXIES): sign-in is throttled, and audited, by the client's address.
	TrustedProxies clientaddr.Proxies

	// Login throttling, per 15 minutes: attempts per user name from one client address, and
	// per client address, counted in the store, so a fleet's instances share the budgets.
	// No budget is per user name alone: guesses from elsewhere never lock the user out.
	LoginPerUser int // default 5, per (client address, user name)
	LoginPerAddr int // default 20
}

// Console serves the admin console.
type Console struct {
	store    *store.Store
	admin    *admin.Console // the console's data: its users, sign-in throttle, sessions and charts
	cfg      Config
	log      *slog.Logger
	sessions *scs.SessionManager
	handler  http.Handler
}

// loginWindow is the window login attempts are counted in.
const loginWindow = 15 * time.Minute

// New builds the admin console over s. Mount it at /admin/.
func New(s *store.Store, cfg Config) *Console {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 30 * time.Minute
	}
	if cfg.Lifetime <= 0 {
		cfg.Lifetime = 12 * time.Hour
	}
	if cfg.LoginPerUser <= 0 {
		cfg.LoginPerUser = 5
	}
	if cfg.LoginPerAddr <= 0 {
		cfg.LoginPerAddr = 20
	}
	con := admin.New(s)
	sm := scs.New()
	sm.Store = con.Sessions() // it keeps each token's hash, never the token
	sm.IdleTimeout = cfg.IdleTimeout
	sm.Lifetime = cfg.Lifetime
	sm.Cookie.Path = "/admin"
	sm.Cookie.HttpOnly = true
	sm.Cookie.SameSite = http.SameSiteStrictMode
	sm.Cookie.Secure = !cfg.Dev
	sm.Cookie.Name = "marketd_admin"
	sm.ErrorFunc = func(w http.ResponseWriter, r *http.Request, err error) {
		cfg.Logger.ErrorContext(r.Context(), "admin session store", "error", err.Error())
		http.Error(w, "the session store does not answer; try again", http.StatusServiceUnavailable)
	}
	c := &Console{store: s, admin: con, cfg: cfg, log: cfg.Logger, sessions: sm}

	mux := http.NewServeMux()
	mux.Handle("GET /admin/static/", http.StripPrefix("/admin/", http.FileServerFS(static)))
	mux.HandleFunc("GET /admin/login", c.loginPage)
	mux.HandleFunc("POST /admin/login", c.login)
	mux.Handle("POST /admin/logout", c.user(c.logout))
	mux.Handle("GET /admin/{$}", c.user(c.marketPage))
	mux.Handle("GET /admin/sessions", c.user(c.sessionsPage))
	mux.Handle("POST /admin/sessions/{sid}/revoke", c.operator(c.revokeSession))
	mux.Handle("GET /admin/listings", c.user(c.listingsPage))
	mux.Handle("GET /admin/listings/{cid}", c.user(c.listingPage))
	mux.Handle("GET /admin/offers", c.user(c.offersPage))
	mux.Handle("GET /admin/ratelimits", c.user(c.rateLimitsPage))
	mux.Handle("POST /admin/ratelimits/reset", c.operator(c.resetRateLimit))
	mux.Handle("GET /admin/ledger", c.user(c.ledgerPage))
	mux.Handle("GET /admin/parties/{party}", c.user(c.partyPage))
	mux.Handle("GET /admin/audit", c.user(c.auditPage))
	mux.Handle("GET /admin/users", c.user(c.usersPage))
	mux.Handle("/admin/", c.user(func(w http.ResponseWriter, r *http.Request, u *viewer) {
		c.fail(w, r, u, http.StatusNotFound, "There is no page at "+r.URL.Path+".")
	}))

	// Every state-changing request must come from the console's own pages: browsers say
	// where a request comes from (Sec-Fetch-Site, Origin), and a cross-site one is refused.
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte("refused: this form was posted from another site\n"))
	}))
	c.handler = securityHeaders(cop.Handler(sm.LoadAndSave(namedByRoute(mux))))
	return c
}

func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.handler.ServeHTTP(w, r) }

// namedByRoute names a traced request's span by the console's route that serves it (its
// pattern, never the raw path).
func namedByRoute(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if span := trace.SpanFromContext(r.Context()); span.IsRecording() {
			_, pattern := mux.Handler(r)
			if !strings.Contains(pattern, " ") {
				pattern = r.Method + " " + pattern
			}
			span.SetName(pattern)
		}
		mux.ServeHTTP(w, r)
	})
}

// securityHeaders keeps the console out of frames and caches, and scripts out of its pages.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' https: data:; frame-ancestors 'none'; form-action 'self'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		if !strings.HasPrefix(r.URL.Path, "/admin/static/") {
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}

// viewer is the signed-in console user of a request.
type viewer struct {
	Name string
	Role admin.Role
	CSRF string
	Path string // the page's path, for the navigation
}

func (v *viewer) CanAct() bool { return v != nil && v.Role == admin.RoleOperator }

// Session keys.
const (
	keyUser   = "user"
	keyAuthAt = "auth_at" // store clock, Unix microseconds: sign-in
	keySeenAt = "seen_at" // store clock, Unix microseconds: last request
	keyCSRF   = "csrf"
)

type userHandler func(w http.ResponseWriter, r *http.Request, u *viewer)

// user lets a request through with a live session of an enabled user; anything else goes to
// the login page. The timeouts are checked here on the store's clock: idle since the last
// request, absolute since sign-in. A disabled user, or one whose password was reset after
// this session signed in, is signed out.
func (c *Console) user(h userHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		name := c.sessions.GetString(ctx, keyUser)
		if name == "" {
			c.toLogin(w, r, "")
			return
		}
		now := c.store.Now()
		authAt := time.UnixMicro(c.sessions.GetInt64(ctx, keyAuthAt))
		seenAt := time.UnixMicro(c.sessions.GetInt64(ctx, keySeenAt))
		var why string
		switch {
		case now.Sub(authAt) >= c.cfg.Lifetime:
			why = "Your session reached its maximum length; sign in again."
		case now.Sub(seenAt) >= c.cfg.IdleTimeout:
			why = "Your session was idle too long; sign in again."
		}
		u, err := c.admin.UserByName(ctx, name)
		switch {
		case store.ErrorCode(err) == store.CodeNotFound:
			why = "Your user no longer exists."
		case err != nil:
			c.fail(w, r, nil, http.StatusServiceUnavailable, "The store does not answer; try again.")
			return
		case u.DisabledAt != nil:
			why = "Your user is disabled."
		case u.PasswordAt.After(authAt):
			why = "Your password was reset; sign in again."
		}
		if why != "" {
			c.sessions.Destroy(ctx)
			c.toLogin(w, r, why)
			return
		}
		c.sessions.Put(ctx, keySeenAt, now.UnixMicro())
		v := &viewer{Name: u.Name, Role: u.Role, CSRF: c.sessions.GetString(ctx, keyCSRF), Path: r.URL.Path}
		if r.Method == http.MethodPost && !c.checkCSRF(r, v) {
			c.fail(w, r, v, http.StatusForbidden, "This form is stale or was not sent by the console; reload the page and try again.")
			return
		}
		h(w, r, v)
	})
}

// operator is user for actions: a viewer is refused.
func (c *Console) operator(h userHandler) http.Handler {
	return c.user(func(w http.ResponseWriter, r *http.Request, u *viewer) {
		if !u.CanAct() {
			c.fail(w, r, u, http.StatusForbidden, "Only an operator may do this; you are a viewer.")
			return
		}
		h(w, r, u)
	})
}

// checkCSRF compares the form's token with the session's, in constant time. It backs up the
// cross-origin check for clients that send neither Sec-Fetch-Site nor Origin.
func (c *Console) checkCSRF(r *http.Request, v *viewer) bool {
	got := r.PostFormValue("csrf")
	return v.CSRF != "" && subtle.ConstantTimeCompare([]byte(got), []byte(v.CSRF)) == 1
}

// toLogin sends a request without a usable session to the login page, remembering where it went.
func (c *Console) toLogin(w http.ResponseWriter, r *http.Request, why string) {
	q := url.Values{}
	if r.Method == http.MethodGet && r.URL.Path != "/admin/" {
		q.Set("next", r.URL.RequestURI())
	}
	if why != "" {
		c.sessions.Put(r.Context(), "flash", why)
	}
	target := "/admin/login"
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	if c.sessions.GetString(r.Context(), keyUser) != "" {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	c.render(w, r, http.StatusOK, loginView(loginForm{Next: r.URL.Query().Get("next"), Notice: c.sessions.PopString(r.Context(), "flash")}))
}

// login checks a user name and password, throttled per user name from one client address and
// per client address (never per user name alone, which would let anyone lock a user out).
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	name := strings.TrimSpace(r.PostFormValue("username"))
	password := r.PostFormValue("password")
	form := loginForm{Username: name, Next: r.PostFormValue("next")}
	if name == "" || password == "" {
		form.Error = "Enter your user name and password."
		c.render(w, r, http.StatusBadRequest, loginView(form))
		return
	}
	addr := c.cfg.TrustedProxies.Addr(r)
	origin := c.cfg.TrustedProxies.Origin(r) // an IPv6 client's /64: one host holds a whole /64
	userKey := userThrottleKey(origin, name)
	byAddr, err1 := c.admin.CountLoginAttempt(ctx, "addr:"+origin, c.cfg.LoginPerAddr, loginWindow)
	byUser, err2 := c.admin.CountLoginAttempt(ctx, userKey, c.cfg.LoginPerUser, loginWindow)
	if err := errors.Join(err1, err2); err != nil {
		c.log.ErrorContext(ctx, "admin login throttle", "error", err.Error())
		form.Error = "The store does not answer; try again."
		c.render(w, r, http.StatusServiceUnavailable, loginView(form))
		return
	}
	if !byAddr.Allowed || !byUser.Allowed {
		var wait time.Duration // until every budget that refused has a fresh window
		for _, d := range []admin.LoginAttempt{byAddr, byUser} {
			if !d.Allowed {
				wait = max(wait, d.ResetIn)
			}
		}
		c.store.CountRefusal("admin-login") // for the landing page's chart of 429s
		w.Header().Set("Retry-After", itoa(int64(wait.Seconds()+1)))
		form.Error = "Too many sign-in attempts. Try again in " + wait.Round(time.Second).String() + "."
		c.render(w, r, http.StatusTooManyRequests, loginView(form))
		return
	}
	u, err := c.admin.Login(ctx, name, password)
	if err != nil {
		status := http.StatusUnauthorized
		form.Error = "Wrong user name or password, or the user is disabled."
		if store.ErrorCode(err) != store.CodeUnauthenticated {
			c.log.ErrorContext(ctx, "admin login", "error", err.Error())
			status, form.Error = http.StatusServiceUnavailable, "The store does not answer; try again."
		}
		c.render(w, r, status, loginView(form))
		return
	}
	if err := c.admin.ResetLoginAttempts(ctx, userKey); err != nil {
		c.log.WarnContext(ctx, "admin login throttle", "error", err.Error())
	}
	// A fresh session token on sign-in, so a token planted before it is worth nothing.
	if err := c.sessions.RenewToken(ctx); err != nil {
		c.fail(w, r, nil, http.StatusServiceUnavailable, "The session store does not answer; try again.")
		return
	}
	now := c.store.Now().UnixMicro()
	c.sessions.Put(ctx, keyUser, u.Name)
	c.sessions.Put(ctx, keyAuthAt, now)
	c.sessions.Put(ctx, keySeenAt, now)
	c.sessions.Put(ctx, keyCSRF, newToken())
	if err := c.admin.Audit(ctx, admin.AuditEntry{Actor: u.Name, Action: "login", Target: u.Name, Detail: "role " + string(u.Role), Addr: addr}); err != nil {
		c.log.WarnContext(ctx, "audit login", "error", err.Error())
	}
	http.Redirect(w, r, safeNext(form.Next), http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, u *viewer) {
	if err := c.sessions.Destroy(r.Context()); err != nil {
		c.fail(w, r, u, http.StatusServiceUnavailable, "The session store does not answer; try again.")
		return
	}
	c.sessions.Put(r.Context(), "flash", "You are signed out.")
	http.Redirect(w, r, "/admin/login", http.StatusSeeOther)
}

// safeNext is where to go after login: a console path, never another site.
func safeNext(next string) string {
	if strings.HasPrefix(next, "/admin/") && !strings.HasPrefix(next, "/admin/login") && !strings.ContainsAny(next, "\\\r\n") && !strings.HasPrefix(next, "//") {
		return next
	}
	return "/admin/"
}

// userThrottleKey names the budget of sign-in attempts for one user name from one client.
// A name longer than any user's is cut, so the key stays a short index entry.
func userThrottleKey(origin, name string) string {
	name = strings.ToLower(name)
	if len(name) > 128 {
		name = name[:128]
	}
	return "user:" + name + "|addr:" + origin
}

func newToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// audit records an operator action that made no store write of its own.
func (c *Console) audit(r *http.Request, u *viewer, action, target, detail string) error {
	return c.admin.Audit(r.Context(), c.auditEntry(r, u, action, target, detail))
}

func (c *Console) auditEntry(r *http.Request, u *viewer, action, target, detail string) admin.AuditEntry {
	return admin.AuditEntry{Actor: u.Name, Action: action, Target: target, Detail: detail, Addr: c.cfg.TrustedProxies.Addr(r)}
}

// flash leaves a message for the next page the user sees.
func (c *Console) flash(ctx context.Context, msg string, isErr bool) {
	c.sessions.Put(ctx, "flash", msg)
	c.sessions.Put(ctx, "flash_error", isErr)
}

func (c *Console) popFlash(ctx context.Context) (msg string, isErr bool) {
	return c.sessions.PopString(ctx, "flash"), c.sessions.PopBool(ctx, "flash_error")
}

// render writes a page with status.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, page templ.Component) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := page.Render(r.Context(), w); err != nil && !errors.Is(err, context.Canceled) {
		c.log.WarnContext(r.Context(), "render", "path", r.URL.Path, "error", err.Error())
	}
}

// fail shows an error page with status.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, u *viewer, status int, msg string) {
	c.render(w, r, status, errorView(u, status, msg))
}

// storeFail shows what a store error means: its message when it has a code, else a generic one.
func (c *Console) storeFail(w http.ResponseWriter, r *http.Request, u *viewer, err error) {
	status := http.StatusInternalServerError
	switch store.ErrorCode(err) {
	case store.CodeInvalidRequest, store.CodeInvalidCursor:
		status = http.StatusBadRequest
	case store.CodeNotFound, store.CodePartyNotFound:
		status = http.StatusNotFound
	case store.CodeConflict:
		status = http.StatusConflict
	case store.CodeInternal:
		c.log.ErrorContext(r.Context(), "admin console", "path", r.URL.Path, "error", err.Error())
	}
	c.fail(w, r, u, status, store.ErrorMessage(err))
}
