package store

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/uptrace/bun"
)

// Session is a sign-in session: one browser instance (or client) of one party, with its
// current token. Rotation replaces the token, logout revokes the whole session.
type Session struct {
	bun.BaseModel `bun:"table:signin_sessions"`

	SID            string     `bun:"sid,pk"`
	PartyID        string     `bun:"party_id"`
	CreatedAt      Timestamp  `bun:"created_at"`
	UserAgent      string     `bun:"user_agent"`
	ClientAddr     string     `bun:"client_addr"`
	TokenJTI       string     `bun:"token_jti"`
	TokenIssuedAt  Timestamp  `bun:"token_issued_at"`
	TokenExpiresAt Timestamp  `bun:"token_expires_at"`
	Rotations      int        `bun:"rotations"`
	RevokedAt      *Timestamp `bun:"revoked_at"`
}

// supersededToken is a token a rotation replaced.
type supersededToken struct {
	bun.BaseModel `bun:"table:superseded_tokens"`

	JTI          string    `bun:"jti,pk"`
	SID          string    `bun:"sid"`
	SupersededAt Timestamp `bun:"superseded_at"`
	ExpiresAt    Timestamp `bun:"expires_at"`
}

// Auth is an authenticated request's identity: a token that verified and whose session accepts it.
type Auth struct {
	PartyID       string
	SessionID     string
	TokenID       string
	IssuedAt      time.Time
	ExpiresAt     time.Time
	SessionEndsAt time.Time // SessionMax after the sign-in: no token of the session is accepted from here on
	Current       bool      // the session's current token; a superseded one inside its grace is not
}

// sessionEnd is when a session signed in at createdAt ends, whatever its rotations: SessionMax
// after the sign-in as its first token states it (whole seconds), so a token's exp can equal it.
func (s *Store) sessionEnd(createdAt time.Time) time.Time {
	return createdAt.Truncate(time.Second).Add(s.cfg.SessionMax)
}

// Authenticate checks a session token: its signature and claims, its expiry, and its
// session's state, which is kept in memory so no request pays a store round trip for it.
// A superseded token presented after its grace ends its session, as a logout would: the
// reuse of a replaced token is the sign of a stolen copy.
func (s *Store) Authenticate(ctx context.Context, token string) (*Auth, error) {
	c, err := s.parseToken(ctx, token)
	if err != nil {
		return nil, err
	}
	now := s.now()
	if !now.Before(c.ExpiresAt.Time) {
		return nil, Errorf(CodeInvalidToken, "the token expired at %d; sign in again", c.ExpiresAt.Unix())
	}
	st, err := s.sessionState(ctx, c.SID)
	if err != nil {
		return nil, err
	}
	switch {
	case st == nil || st.partyID != c.Subject:
		return nil, Errorf(CodeInvalidToken, "the token's session does not exist")
	case st.revoked:
		return nil, Errorf(CodeTokenRevoked, "the session was ended (logged out, or a replaced token of it was used after its grace); sign in again")
	case !now.Before(st.endsAt):
		return nil, Errorf(CodeInvalidToken, "the session reached its maximum lifetime at %d (%s after its sign-in); sign in again", st.endsAt.Unix(), s.cfg.SessionMax)
	}
	a := &Auth{PartyID: c.Subject, SessionID: c.SID, TokenID: c.ID, IssuedAt: c.IssuedAt.Time, ExpiresAt: c.ExpiresAt.Time, SessionEndsAt: st.endsAt}
	if st.currentJTI == c.ID {
		a.Current = true
		return a, nil
	}
	at, ok := st.superseded[c.ID]
	switch {
	case !ok:
		return nil, Errorf(CodeInvalidToken, "the token is not one of its session's")
	case !now.Before(at.Add(s.cfg.RotateGrace)):
		if err := s.revokeSession(ctx, c.SID, c.Subject, nil); err != nil {
			return nil, err
		}
		return nil, Errorf(CodeTokenRotated, "the token was replaced at %d and its grace period is over; its session is now ended, as a logout would end it: sign in again", at.Unix())
	}
	return a, nil
}

// RotateIfDue gives the session a new token when a is its current token and older than the
// rotation threshold; otherwise it returns nil. The replaced token stays valid for the grace.
func (s *Store) RotateIfDue(ctx context.Context, a *Auth) (*IssuedToken, error) {
	if !a.Current || s.now().Sub(a.IssuedAt) <= s.cfg.RotateAfter {
		return nil, nil
	}
	keys, err := s.serviceKeys(ctx)
	if err != nil {
		return nil, err
	}
	var issued *IssuedToken
	s.sessions.beginWrite()
	err = s.inTx(ctx, func(tx *Tx) error {
		t, err := s.signToken(keys, a.PartyID, a.SessionID, tx.Now(), a.SessionEndsAt)
		if err != nil {
			return err
		}
		res, err := tx.NewUpdate().Model((*Session)(nil)).
			Set("token_jti = ?", t.TokenID).
			Set("token_issued_at = ?", At(t.IssuedAt)).
			Set("token_expires_at = ?", At(t.ExpiresAt)).
			Set("rotations = rotations + 1").
			Where("sid = ?", a.SessionID).Where("token_jti = ?", a.TokenID).Where("revoked_at IS NULL").
			Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil // a concurrent request rotated it first, or logout won: nothing to do
		}
		old := &supersededToken{JTI: a.TokenID, SID: a.SessionID, SupersededAt: At(tx.Now()), ExpiresAt: At(a.ExpiresAt)}
		if _, err := tx.NewInsert().Model(old).Exec(ctx); err != nil {
			return err
		}
		if err := tx.notifySessionChanged(ctx, a.SessionID); err != nil {
			return err
		}
		issued = t
		return nil
	})
	if err != nil {
		s.sessions.endWrite(a.SessionID, nil)
		return nil, err
	}
	if issued == nil {
		st, err := s.loadSession(ctx, a.SessionID)
		s.sessions.endWrite(a.SessionID, st)
		return nil, err
	}
	s.sessions.endWrite(a.SessionID, s.sessions.rotated(a.SessionID, a, issued, s.now()))
	return issued, nil
}

// Logout revokes the session of a: every token of it is refused from the moment this returns.
func (s *Store) Logout(ctx context.Context, a *Auth) error {
	return s.revokeSession(ctx, a.SessionID, a.PartyID, nil)
}

// RevokeSessionWith revokes session sid of partyID as a logout does (every token of it is
// refused from the moment this returns, on every instance), running also in the same write
// transaction at its instant: how the console (store/admin) records an operator's revoke in
// its audit log with the same commit.
func (s *Store) RevokeSessionWith(ctx context.Context, sid, partyID string, also func(ctx context.Context, tx bun.Tx, now time.Time) error) error {
	return s.revokeSession(ctx, sid, partyID, func(tx *Tx) error { return also(ctx, tx.Tx.Tx, tx.Now()) })
}

// revokeSession revokes session sid of partyID, running also (when not nil) in the same
// transaction, and leaves the revocation in this instance's cache.
func (s *Store) revokeSession(ctx context.Context, sid, partyID string, also func(tx *Tx) error) error {
	s.sessions.beginWrite()
	err := s.inTx(ctx, func(tx *Tx) error {
		_, err := tx.NewUpdate().Model((*Session)(nil)).
			Set("revoked_at = ?", At(tx.Now())).
			Where("sid = ?", sid).Where("revoked_at IS NULL").
			Exec(ctx)
		if err != nil {
			return err
		}
		if also != nil {
			if err := also(tx); err != nil {
				return err
			}
		}
		return tx.notifySessionChanged(ctx, sid)
	})
	if err != nil {
		s.sessions.endWrite(sid, nil)
		return err
	}
	st, err := s.loadSession(ctx, sid)
	if err == nil && st == nil {
		st = &sessionState{partyID: partyID, revoked: true}
	}
	if st != nil {
		st.revoked = true
	}
	s.sessions.endWrite(sid, st)
	return err
}

// sessionState returns the session's state from memory, loading it on a miss.
func (s *Store) sessionState(ctx context.Context, sid string) (*sessionState, error) {
	if st := s.sessions.get(sid); st != nil {
		return st, nil
	}
	gen := s.sessions.generation()
	st, err := s.loadSession(ctx, sid)
	if err != nil || st == nil {
		return nil, err
	}
	return s.sessions.putLoaded(sid, st, gen), nil
}

// loadSession reads a session's state from the store; nil when there is no such session.
func (s *Store) loadSession(ctx context.Context, sid string) (*sessionState, error) {
	row := new(Session)
	err := s.wdb.NewSelect().Model(row).Where("sid = ?", sid).Scan(ctx)
	if isNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var old []supersededToken
	if row.Rotations > 0 {
		if err := s.wdb.NewSelect().Model(&old).Where("sid = ?", sid).Scan(ctx); err != nil {
			return nil, err
		}
	}
	st := &sessionState{partyID: row.PartyID, revoked: row.RevokedAt != nil, currentJTI: row.TokenJTI, deadAt: row.TokenExpiresAt.Time, endsAt: s.sessionEnd(row.CreatedAt.Time)}
	if len(old) > 0 {
		st.superseded = make(map[string]time.Time, len(old))
		for _, t := range old {
			st.superseded[t.JTI] = t.SupersededAt.Time
		}
	}
	return st, nil
}

// sessionState is what authentication needs of a session. A value is never modified once
// shared; a change replaces it.
type sessionState struct {
	partyID    string
	revoked    bool
	currentJTI string
	superseded map[string]time.Time // jti -> when it was replaced
	deadAt     time.Time            // no token of the session is accepted from here on
	endsAt     time.Time            // the session's end, SessionMax after its sign-in
}

// sessionCache holds session states in memory. The store is the truth: an entry may be
// dropped at any time and is loaded again on use. Writers (rotation, logout) update the
// entry after their commit, and a load that overlapped a write is not cached, so a stale
// state can never replace a newer one. Whatever changes or drops an entry tells the session's
// watchers (WatchSession).
type sessionCache struct {
	mu       sync.RWMutex
	m        map[string]*sessionState
	writes   uint64                                // writes begun; a load caches its result only if none began meanwhile
	watchers map[string]map[chan struct{}]struct{} // by session id
}

const sessionCacheMax = 1 << 17

func newSessionCache() *sessionCache {
	return &sessionCache{m: make(map[string]*sessionState), watchers: make(map[string]map[chan struct{}]struct{})}
}

// WatchSession tells, on the channel it returns, every time session sid may have changed
// (rotated, logged out, revoked) as soon as this instance learns of it: from its own write,
// from another instance's notification on PostgreSQL, or from a gap in listening for them,
// after which any session may have changed. A signal says only "read the session again"; one
// not yet received stands for any number. Expiry is no change: it comes with time. It learns
// nothing of other processes that share one SQLite file. stop ends the watch.
func (s *Store) WatchSession(sid string) (changed <-chan struct{}, stop func()) {
	return s.sessions.watch(sid)
}

func (c *sessionCache) watch(sid string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watchers[sid] == nil {
		c.watchers[sid] = make(map[chan struct{}]struct{})
	}
	c.watchers[sid][ch] = struct{}{}
	return ch, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.watchers[sid], ch)
		if len(c.watchers[sid]) == 0 {
			delete(c.watchers, sid)
		}
	}
}

// changedLocked signals the watchers of sid, or of every session when sid is empty.
func (c *sessionCache) changedLocked(sid string) {
	signal := func(chs map[chan struct{}]struct{}) {
		for ch := range chs {
			select {
			case ch <- struct{}{}:
			default: // a signal is pending: the watcher reads the session after this change
			}
		}
	}
	if sid != "" {
		signal(c.watchers[sid])
		return
	}
	for _, chs := range c.watchers {
		signal(chs)
	}
}

func (c *sessionCache) get(sid string) *sessionState {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.m[sid]
}

func (c *sessionCache) generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.writes
}

// put records the state a sign-in created.
func (c *sessionCache) put(sid string, st *sessionState, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evictLocked(now)
	c.m[sid] = st
}

// putLoaded caches a state read from the store at generation gen, unless an entry exists
// or a write began since; it returns the state to use.
func (c *sessionCache) putLoaded(sid string, st *sessionState, gen uint64) *sessionState {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.m[sid]; cur != nil {
		return cur
	}
	if c.writes == gen {
		c.m[sid] = st
	}
	return st
}

// beginWrite marks a write in flight: loads that overlap it are not cached.
func (c *sessionCache) beginWrite() {
	c.mu.Lock()
	c.writes++
	c.mu.Unlock()
}

// endWrite installs the state a committed write left, or drops the entry when st is nil.
// Revocation is final: a rotation that finishes after a logout cannot undo it.
func (c *sessionCache) endWrite(sid string, st *sessionState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	defer c.changedLocked(sid)
	if st == nil {
		delete(c.m, sid)
		return
	}
	if cur := c.m[sid]; cur != nil && cur.revoked && !st.revoked {
		revoked := *st
		revoked.revoked = true
		st = &revoked
	}
	c.m[sid] = st
}

// rotated is the state after a's token was replaced by t at now.
func (c *sessionCache) rotated(sid string, a *Auth, t *IssuedToken, now time.Time) *sessionState {
	prev := c.get(sid)
	st := &sessionState{partyID: a.PartyID, currentJTI: t.TokenID, deadAt: t.ExpiresAt, endsAt: t.SessionEndsAt, superseded: map[string]time.Time{}}
	if prev != nil {
		maps.Copy(st.superseded, prev.superseded)
		st.revoked = prev.revoked
	}
	st.superseded[a.TokenID] = now
	return st
}

// forget drops one session, or every session when sid is empty, so the next use reads the
// store; it counts as a write, so a load that overlaps it is not cached.
func (c *sessionCache) forget(sid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	c.changedLocked(sid)
	if sid == "" {
		clear(c.m)
		return
	}
	delete(c.m, sid)
}

// evictLocked keeps the cache bounded: dead sessions go first, then arbitrary ones.
func (c *sessionCache) evictLocked(now time.Time) {
	if len(c.m) < sessionCacheMax {
		return
	}
	for k, v := range c.m {
		if !now.Before(v.deadAt) {
			delete(c.m, k)
		}
	}
	for k := range c.m {
		if len(c.m) < sessionCacheMax*3/4 {
			break
		}
		delete(c.m, k)
	}
}

// sessionKey is the keyset position in a party's session list: newest first.
type sessionKey struct {
	CreatedAt int64  `json:"t"`
	SID       string `json:"s"`
}

// Sessions lists a party's sign-in sessions, newest first.
func (s *Store) Sessions(ctx context.Context, partyID string, r PageRequest) (Page[Session], error) {
	return s.SessionPage(ctx, "sessions:"+partyID, r, func(sel *bun.SelectQuery) *bun.SelectQuery {
		return sel.Where("party_id = ?", partyID)
	})
}

// SessionPage is one page, newest first, of the sign-in sessions that where narrows the read
// to, in the list named list (its cursors carry the name, so another list refuses them): a
// party's sessions here, the console's search in store/admin.
func (s *Store) SessionPage(ctx context.Context, list string, r PageRequest, where func(*bun.SelectQuery) *bun.SelectQuery) (Page[Session], error) {
	q, err := startPage[sessionKey](ctx, s, list, r)
	if err != nil {
		return Page[Session]{}, err
	}
	var rows []Session
	sel := where(s.db.NewSelect().Model(&rows))
	sel = q.Seek(sel, true, []string{"created_at", "sid"}, q.At(func(k sessionKey) []any { return []any{k.CreatedAt, k.SID} }))
	if err := sel.Limit(q.Fetch()).Scan(ctx); err != nil {
		return Page[Session]{}, err
	}
	return finish(ctx, s, q, rows, func(x Session) sessionKey { return sessionKey{x.CreatedAt.UnixMicro(), x.SID} })
}
