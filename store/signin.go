package store

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"marketd/store/signing"
	"sync"
	"time"

	"github.com/uptrace/bun"
)

// signinNonce is an issued challenge. The first verify that names its nonce consumes it,
// whatever that attempt's outcome.
type signinNonce struct {
	bun.BaseModel `bun:"table:signin_nonces"`

	Nonce     string     `bun:"nonce,pk"`
	PartyID   string     `bun:"party_id"`
	Message   string     `bun:"message"`
	IssuedAt  Timestamp  `bun:"issued_at"`
	ExpiresAt Timestamp  `bun:"expires_at"`
	UsedAt    *Timestamp `bun:"used_at"`
}

const nonceAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// newNonce returns 32 characters of [A-Za-z0-9] from crypto/rand, without modulo bias.
func newNonce() string {
	out := make([]byte, 0, 32)
	var buf [48]byte
	for len(out) < 32 {
		if _, err := rand.Read(buf[:]); err != nil {
			panic(err) // crypto/rand does not fail on supported platforms
		}
		for _, b := range buf {
			if b < 248 && len(out) < 32 { // 248 = 4*62: keeps every letter equally likely
				out = append(out, nonceAlphabet[b%62])
			}
		}
	}
	return string(out)
}

// IssueChallenge creates a sign-in challenge for an onboarded party.
func (s *Store) IssueChallenge(ctx context.Context, partyID string) (*signing.Challenge, error) {
	if _, err := s.Party(ctx, partyID); err != nil {
		return nil, err
	}
	// The text states whole seconds; the lifetime runs from the instant it states.
	issued := s.now().Truncate(time.Second)
	c := &signing.Challenge{
		Domain:    s.domain,
		PartyID:   partyID,
		Statement: s.cfg.Statement,
		URI:       s.cfg.PublicURL,
		Version:   "1",
		Network:   s.cfg.Network,
		Nonce:     newNonce(),
		IssuedAt:  issued,
		ExpiresAt: issued.Add(s.cfg.ChallengeTTL),
	}
	row := &signinNonce{Nonce: c.Nonce, PartyID: partyID, Message: c.Text(), IssuedAt: At(c.IssuedAt), ExpiresAt: At(c.ExpiresAt)}
	if _, err := s.wdb.NewInsert().Model(row).Exec(ctx); err != nil {
		return nil, err
	}
	s.challenges.put(row)
	return c, nil
}

// SignIn is a verify request: the answer to a challenge.
type SignIn struct {
	PartyID    string
	Nonce      string
	Signature  []byte // Ed25519 over the UTF-8 bytes of the challenge text
	UserAgent  string // kept with the session, for the party's own session list and support
	ClientAddr string
}

// SignIn checks the signed challenge and opens a session with its first token. The nonce is
// spent by this attempt whatever its outcome, malformed fields included. The checks run
// before any write, so the write is one statement that spends the nonce and opens the
// session together, and only if no concurrent attempt spent the nonce first.
func (s *Store) SignIn(ctx context.Context, in SignIn) (*IssuedToken, error) {
	if !signing.ValidNonce(in.Nonce) {
		// Not one this service issued; and a NUL or invalid UTF-8 must not reach the database.
		return nil, Errorf(CodeNonceInvalid, "the nonce is unknown or already used; request a new challenge")
	}
	// The challenge text is remembered from its issue; another instance's, or one issued
	// before a restart, is read from the store. Either way the spend below decides whether
	// the nonce is still unused.
	n := s.challenges.take(in.Nonce)
	if n == nil {
		n = new(signinNonce)
		err := s.db.NewSelect().Model(n).Where("nonce = ?", in.Nonce).Scan(ctx)
		if isNoRows(err) || (err == nil && n.UsedAt != nil) {
			return nil, Errorf(CodeNonceInvalid, "the nonce is unknown or already used; request a new challenge")
		}
		if err != nil {
			return nil, err
		}
	}
	refusal, err := s.checkSignIn(ctx, n, in)
	if err != nil {
		return nil, err
	}
	if refusal != nil {
		if err := s.SpendNonce(ctx, in.Nonce); err != nil {
			return nil, err
		}
		return nil, refusal
	}
	keys, err := s.serviceKeys(ctx)
	if err != nil {
		return nil, err
	}
	now := s.now()
	t, err := s.signToken(keys, in.PartyID, randomID(), now)
	if err != nil {
		return nil, err
	}
	row := &Session{
		SID: t.SessionID, PartyID: in.PartyID, CreatedAt: At(now),
		UserAgent: clean(in.UserAgent, 256), ClientAddr: clean(in.ClientAddr, 64),
		TokenJTI: t.TokenID, TokenIssuedAt: At(t.IssuedAt), TokenExpiresAt: At(t.ExpiresAt),
	}
	opened, err := s.spendNonceOpenSession(ctx, in.Nonce, row, now)
	if err != nil {
		return nil, err
	}
	if !opened {
		return nil, Errorf(CodeNonceInvalid, "the nonce is unknown or already used; request a new challenge")
	}
	s.sessions.put(t.SessionID, &sessionState{partyID: in.PartyID, currentJTI: t.TokenID, deadAt: t.ExpiresAt}, now)
	return t, nil
}

// checkSignIn returns why the signed challenge n does not sign in, or nil when it does.
func (s *Store) checkSignIn(ctx context.Context, n *signinNonce, in SignIn) (error, error) {
	switch {
	case !signing.ValidPartyID(in.PartyID):
		return checkPartyID("partyId", in.PartyID), nil
	case n.PartyID != in.PartyID:
		return Errorf(CodeNonceInvalid, "the nonce was issued to another party; request a new challenge"), nil
	case !s.now().Before(n.ExpiresAt.Time):
		return Errorf(CodeNonceInvalid, "the challenge expired at %s; request a new one", n.ExpiresAt.UTC().Format(time.RFC3339)), nil
	}
	p, err := s.Party(ctx, in.PartyID)
	if err != nil {
		return nil, err
	}
	if !ed25519.Verify(p.PublicKey, []byte(n.Message), in.Signature) {
		return Errorf(CodeInvalidSignature, "the signature does not verify against the key of %s over the challenge text", in.PartyID), nil
	}
	return nil, nil
}

// spendNonceOpenSession spends the nonce and inserts the session, both or neither: false
// when the nonce was already spent.
func (s *Store) spendNonceOpenSession(ctx context.Context, nonce string, row *Session, now time.Time) (bool, error) {
	if s.dialect == Postgres { // one statement, one round trip: the session exists only if the nonce was spent here
		res, err := s.wdb.NewRaw(`WITH spent AS (
				UPDATE signin_nonces SET used_at = ? WHERE nonce = ? AND used_at IS NULL RETURNING nonce
			)
			INSERT INTO signin_sessions
				(sid, party_id, created_at, user_agent, client_addr, token_jti, token_issued_at, token_expires_at)
			SELECT ?, ?, ?, ?, ?, ?, ?, ? FROM spent`,
			At(now), nonce,
			row.SID, row.PartyID, row.CreatedAt, row.UserAgent, row.ClientAddr, row.TokenJTI, row.TokenIssuedAt, row.TokenExpiresAt,
		).Exec(ctx)
		if err != nil {
			return false, err
		}
		n, err := res.RowsAffected()
		return n == 1, err
	}
	opened := false
	err := s.inTx(ctx, func(tx *Tx) error {
		n, err := tx.spendNonce(ctx, nonce)
		if err != nil || n == nil {
			return err
		}
		if _, err := tx.NewInsert().Model(row).Exec(ctx); err != nil {
			return err
		}
		opened = true
		return nil
	})
	return opened, err
}

// SpendNonce spends a nonce without signing in: a verify too malformed to attempt still
// uses up the challenge it names.
func (s *Store) SpendNonce(ctx context.Context, nonce string) error {
	if !signing.ValidNonce(nonce) {
		return nil
	}
	return s.inTx(ctx, func(tx *Tx) error {
		_, err := tx.spendNonce(ctx, nonce)
		return err
	})
}

// spendNonce marks the nonce used and returns its challenge, or nil when it is unknown or
// was already used.
func (tx *Tx) spendNonce(ctx context.Context, nonce string) (*signinNonce, error) {
	n := new(signinNonce)
	res, err := tx.NewUpdate().Model(n).
		Set("used_at = ?", At(tx.now)).
		Where("nonce = ?", nonce).Where("used_at IS NULL").
		Returning("*").Exec(ctx)
	if err != nil {
		return nil, err
	}
	if rows, _ := res.RowsAffected(); rows == 0 {
		return nil, nil
	}
	return n, nil
}

// challengeCache remembers the challenges this process issued until they are answered or
// expire, so a verify need not read its challenge back. It only saves that read: spending
// the nonce in the store is what makes it single-use.
type challengeCache struct {
	mu sync.Mutex
	m  map[string]*signinNonce
}

const challengeCacheMax = 1 << 17

func newChallengeCache() *challengeCache { return &challengeCache{m: make(map[string]*signinNonce)} }

func (c *challengeCache) put(n *signinNonce) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= challengeCacheMax {
		for k, v := range c.m { // drop the expired; if none, the new one goes unremembered
			if v.ExpiresAt.Before(n.IssuedAt.Time) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= challengeCacheMax {
			return
		}
	}
	c.m[n.Nonce] = n
}

// take returns and forgets the challenge of nonce, or nil when it is not remembered.
func (c *challengeCache) take(nonce string) *signinNonce {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.m[nonce]
	delete(c.m, nonce)
	return n
}
