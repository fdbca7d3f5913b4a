package rest

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"marketd/store"
	"marketd/store/ratelimit"
)

const cookieName = "ledger_session"

// access says what a route needs from its caller.
type access int

const (
	public access = iota // nothing: onboarding, sign-in, public reads
	token                // a session token, by Authorization: Bearer or the session cookie
)

// route is one documented endpoint.
type route struct {
	method  string
	path    string // a ServeMux pattern path, as in openapi.yaml
	access  access
	prepare bool // counted against the per-party prepare limit
	signin  bool // counted against the per-address sign-in limit (sign-in and onboarding)
	execute bool // counted against the per-address execute limit; wrap sets it from the path
	// writes marks a write that is neither a prepare nor an execute (the unsigned preapproval
	// renew): counted against the prepare limit, as a prepare is.
	writes bool
	// unlimited marks a route no limit applies to: health, readiness, the API document, the
	// JWKS, metrics. Every other route spends a budget (budget), or the server refuses to start.
	unlimited bool
	noRotate  bool // never rotates the cookie (logout)
	// protocol names another protocol whose answers the route gives instead of problem
	// documents for its own refusals (a C2SP witness's add-checkpoint); openapi.yaml marks the
	// operation with x-protocol.
	protocol string
	// produces is the one media type the route answers with; when set, a request whose
	// Accept header rules it out is 406 not_acceptable.
	produces string
	handle   func(w http.ResponseWriter, r *http.Request) error
}

// budget names the limit a request of the route spends: "read" (every GET under /api/,
// /log/ and /witness/), "sign-in", "prepare" or "execute", "none" for a route marked unlimited; "" for a
// route that names none, which New refuses: a route is limited unless it says why not.
func (rt route) budget() string {
	switch {
	case rt.prepare || rt.writes:
		return "prepare"
	case rt.signin:
		return "sign-in"
	case executes(rt.path):
		return "execute"
	case rt.method == http.MethodGet && (strings.HasPrefix(rt.path, "/api/") || strings.HasPrefix(rt.path, "/log/") || strings.HasPrefix(rt.path, "/witness/")):
		return "read"
	case rt.unlimited:
		return "none"
	}
	return ""
}

// checkBudgets refuses a route table with a route that spends no budget.
func checkBudgets(routes []route) error {
	for _, rt := range routes {
		if rt.budget() == "" {
			return fmt.Errorf("rest: route %s %s names no rate-limit budget: mark it prepare, signin, writes or unlimited", rt.method, rt.path)
		}
	}
	return nil
}

// executes tells whether the route at path executes a signed transaction: every .../execute
// and the swap intent submit. Each counts against the execute limit and the execute metrics.
func executes(path string) bool {
	return strings.HasSuffix(path, "/execute") || path == "/api/swap/intent/submit"
}

func (srv *Server) wrap(rt route) http.Handler {
	kind := strings.TrimSuffix(strings.TrimPrefix(rt.path, "/api/"), "/execute")
	execute := executes(rt.path)
	if rt.path == "/api/swap/intent/submit" {
		kind = "swap/intent"
	}
	if rt.prepare {
		kind = strings.TrimSuffix(kind, "/prepare")
	}
	rt.execute = execute
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if info := infoOf(r.Context()); info != nil {
			info.route = rt.path
		}
		err := srv.serve(rt, w, r)
		switch {
		case rt.prepare:
			srv.metrics.Prepared(kind, err)
		case execute:
			srv.metrics.Executed(kind, err)
		}
		if err != nil {
			srv.writeError(w, r, err)
		}
	})
}

// serve runs the checks every route shares, in this order, then the handler: the read,
// sign-in and execute limits (per client address, before authentication and before the body
// is read, so a 401 or a forged attempt is counted too), authentication, the cross-origin and
// party checks (before any work), cookie rotation, the prepare limit (per party, or per origin
// when anonymous), and the handler.
func (srv *Server) serve(rt route, w http.ResponseWriter, r *http.Request) error {
	if rt.produces != "" && !accepts(r.Header.Values("Accept"), rt.produces) {
		return store.Errorf(store.CodeNotAcceptable, "this endpoint answers %s only, which the Accept header rules out", rt.produces)
	}
	if isRead(r) {
		if err := srv.CountRead(w, r); err != nil {
			return err
		}
	}
	if rt.signin {
		if err := srv.limit(r.Context(), w, "signin:"+srv.ClientOrigin(r), srv.cfg.RateSignIn); err != nil {
			return err
		}
	}
	if rt.execute {
		if err := srv.limit(r.Context(), w, "execute:"+srv.ClientOrigin(r), srv.cfg.RateExecute); err != nil {
			return err
		}
	}
	limitKey := "prepare:" + srv.ClientOrigin(r)
	if rt.access == token {
		a, viaCookie, err := srv.authenticate(r)
		if err != nil {
			return err
		}
		if viaCookie && r.Method != http.MethodGet && r.Method != http.MethodHead {
			if err := srv.checkOrigin(r); err != nil {
				return err
			}
		}
		if err := checkNamedParties(r, a); err != nil {
			return err
		}
		if err := checkBodyParties(w, r, a); err != nil {
			return err
		}
		if viaCookie && !rt.noRotate {
			t, err := srv.store.RotateIfDue(r.Context(), a)
			if err != nil {
				return err
			}
			if t != nil {
				srv.metrics.Rotated()
				srv.setSessionCookie(w, t)
				w.Header().Set("X-Auth-Token", t.Token)
				w.Header().Set("X-Auth-Expires-At", strconv.FormatInt(t.ExpiresAt.Unix(), 10))
				a = t.Auth()
			}
		}
		r = r.WithContext(context.WithValue(r.Context(), authKey, a))
		if info := infoOf(r.Context()); info != nil {
			info.party = a.PartyID
		}
		limitKey = "prepare:" + a.PartyID
	}
	if rt.prepare || rt.writes {
		if rt.access == token {
			if err := srv.limit(r.Context(), w, "prepare-address:"+srv.ClientOrigin(r), srv.cfg.RatePrepareAddress); err != nil {
				return err
			}
		}
		if err := srv.limit(r.Context(), w, limitKey, srv.cfg.RatePrepare); err != nil {
			return err
		}
	}
	return rt.handle(w, r)
}

// authOf returns the authenticated identity of a request, or nil.
func authOf(ctx context.Context) *store.Auth {
	a, _ := ctx.Value(authKey).(*store.Auth)
	return a
}

// authenticate reads the token from Authorization: Bearer when present (an invalid one is
// refused with no fall-back), else from the session cookie.
func (srv *Server) authenticate(r *http.Request) (*store.Auth, bool, error) {
	if _, present := r.Header["Authorization"]; present {
		scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
			return nil, false, store.Errorf(store.CodeInvalidToken, "the Authorization header must be \"Bearer <token>\"")
		}
		a, err := srv.store.Authenticate(r.Context(), strings.TrimSpace(tok))
		return a, false, err
	}
	if c, err := r.Cookie(cookieName); err == nil && c.Value != "" {
		a, err := srv.store.Authenticate(r.Context(), c.Value)
		return a, true, err
	}
	return nil, false, store.Errorf(store.CodeUnauthenticated, "sign in first: send Authorization: Bearer <token> or the ledger_session cookie")
}

// checkOrigin refuses a cookie-authenticated write that a browser sent from another site.
// A request with neither Origin nor Sec-Fetch-Site is not a browser's and passes.
func (srv *Server) checkOrigin(r *http.Request) error {
	if o := r.Header.Get("Origin"); o != "" {
		if origin, err := originOf(o); err != nil || !srv.origins[origin] {
			return store.Errorf(store.CodeCrossOrigin, "origin %s may not write with the session cookie; send the token as Authorization: Bearer", truncate(o, 100))
		}
		return nil
	}
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return store.Errorf(store.CodeCrossOrigin, "a cross-site request may not write with the session cookie")
	}
	return nil
}

// isRead tells whether a request counts against the read limit: every GET under /api/ and /log/ (and
// HEAD, which ServeMux answers with the GET handler).
func isRead(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && (strings.HasPrefix(r.URL.Path, "/api/") || strings.HasPrefix(r.URL.Path, "/log/"))
}

// checkNamedParties refuses a request whose path or query names a party other than the token's.
func checkNamedParties(r *http.Request, a *store.Auth) error {
	if p := r.PathValue("partyId"); p != "" && p != a.PartyID {
		return store.Errorf(store.CodePartyMismatch, "the path names %s, the token is for %s", truncate(p, 100), a.PartyID)
	}
	q := r.URL.Query()
	for _, name := range []string{"taker", "lp", "maker", "owner"} {
		for _, v := range q[name] {
			if v != a.PartyID {
				return store.Errorf(store.CodePartyMismatch, "%s names %s, the token is for %s", name, truncate(v, 100), a.PartyID)
			}
		}
	}
	return nil
}

func (srv *Server) setSessionCookie(w http.ResponseWriter, t *store.IssuedToken) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: t.Token, Path: "/", Expires: t.ExpiresAt,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: !srv.cfg.Dev,
	})
}

func (srv *Server) clearSessionCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: !srv.cfg.Dev,
	})
}

// limit counts one request against key and writes the RateLimit headers; over the limit it
// is rate_limited with Retry-After. A limit of 0 means unlimited. A request counted against
// several budgets (an onboarding call is a sign-in and a prepare or an execute) carries the
// headers of the one with the fewest requests remaining, or of the one that refused it.
func (srv *Server) limit(ctx context.Context, w http.ResponseWriter, key string, perMinute int) error {
	d, err := srv.charge(ctx, key, 1, perMinute)
	d.SetHeaders(w.Header())
	return err
}

// charge counts n requests at once against key (all or none); over the limit it is
// rate_limited. A limit of 0 means unlimited: allowed, with a Decision of Limit 0.
func (srv *Server) charge(ctx context.Context, key string, n, perMinute int) (ratelimit.Decision, error) {
	// key is "scope:who"; the scope (read, prepare, signin, execute) is the metrics label.
	if perMinute <= 0 {
		return ratelimit.Decision{Allowed: true}, nil
	}
	d := ratelimit.AllowN(ctx, srv.limiter, key, n, perMinute)
	if d.Allowed {
		return d, nil
	}
	scope, _, _ := strings.Cut(key, ":")
	srv.metrics.RateLimited(scope)
	srv.store.CountRefusal(scope) // in memory; flushed to the store in batches, for the console's chart
	retry := (time.Duration(d.ResetSeconds()) * time.Second).String()
	if n > perMinute {
		return d, &store.Error{Code: store.CodeRateLimited,
			Message: "this costs " + strconv.Itoa(n) + " reads; the limit here is " + strconv.Itoa(d.Limit) + " a minute"}
	}
	if n > 1 {
		return d, &store.Error{Code: store.CodeRateLimited,
			Message: "this costs " + strconv.Itoa(n) + " reads, " + strconv.Itoa(d.Remaining) + " are left of the limit of " + strconv.Itoa(d.Limit) + " a minute; retry in " + retry}
	}
	return d, &store.Error{Code: store.CodeRateLimited, // without fmt: a flood is refused here
		Message: "the limit here is " + strconv.Itoa(d.Limit) + " requests a minute; retry in " + retry}
}

// Authenticate is the identity REST would give r (Authorization: Bearer, else the session
// cookie), for another front door that takes the same tokens. It never rotates the cookie.
func (srv *Server) Authenticate(r *http.Request) (*store.Auth, error) {
	a, _, err := srv.authenticate(r)
	return a, err
}

// CountRead counts r against the read budget of its origin, as a GET under /api/ is counted,
// and writes the RateLimit headers; over the limit it is rate_limited, with Retry-After set.
// Another front door's reads share the budget through it.
func (srv *Server) CountRead(w http.ResponseWriter, r *http.Request) error {
	return srv.limit(r.Context(), w, "read:"+srv.ClientOrigin(r), srv.cfg.RateRead)
}

// ChargeRead counts n reads of r's origin at once, all or none, against the budget CountRead
// counts REST's reads in: how another front door charges an operation that costs n reads
// (GraphQL's, by its cost). It writes no headers; the caller answers with the decision
// (ratelimit.Decision.SetHeaders). Over the limit it is rate_limited.
func (srv *Server) ChargeRead(r *http.Request, n int) (ratelimit.Decision, error) {
	return srv.charge(r.Context(), "read:"+srv.ClientOrigin(r), n, srv.cfg.RateRead)
}

// accepts tells whether Accept header values admit mediaType (RFC 9110, §12.5.1): no
// header admits anything; otherwise the most specific range that matches it (type/subtype,
// then type/*, then */*) decides, and admits it unless its q is 0. Parameters other than q
// are ignored; a range that does not parse matches nothing.
func accepts(header []string, mediaType string) bool {
	if strings.TrimSpace(strings.Join(header, "")) == "" {
		return true // absent or empty: anything goes
	}
	typ, _, _ := strings.Cut(mediaType, "/")
	best, admitted := 0, false
	for _, h := range header {
		for _, rng := range strings.Split(h, ",") {
			params := strings.Split(rng, ";")
			mr := strings.ToLower(strings.TrimSpace(params[0]))
			specificity := 0
			switch {
			case mr == mediaType:
				specificity = 3
			case mr == typ+"/*":
				specificity = 2
			case mr == "*/*":
				specificity = 1
			}
			if specificity <= best {
				continue
			}
			q := 1.0
			for _, p := range params[1:] {
				if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(strings.TrimSpace(k), "q") {
					if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
						q = f
					}
				}
			}
			best, admitted = specificity, q > 0
		}
	}
	return admitted
}
