package store

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"math/big"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"marketd/store/wallet"
)

// A nonce is sealed, not stored: its 32 characters of [A-Za-z0-9] (base 62) carry the second
// the challenge was issued, 48 random bits, a 32-bit tag of the party it was issued to and a
// 72-bit MAC over those, under keys the service keeps. Issuing a challenge therefore writes
// nothing, and verify rebuilds the exact text from the nonce and the configuration. The MAC
// does not need the party, so a nonce this service never issued (or one whose challenge has
// expired) is refused before anything is written; single use of the real ones is the
// spent_nonces table.
const (
	nonceTimeLen   = 4
	nonceRandomLen = 6
	nonceTagLen    = 4
	nonceMACLen    = 9
	nonceHeadLen   = nonceTimeLen + nonceRandomLen + nonceTagLen
	nonceLen       = nonceHeadLen + nonceMACLen // 23 bytes: 184 bits, under 62^32
)

// nonceTag names the party a nonce was issued to. It is keyed, so no one can make a party
// whose tag equals another's on purpose.
func nonceTag(key []byte, partyID string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("marketd/siwl-nonce-party\x00"))
	m.Write([]byte(partyID))
	return m.Sum(nil)[:nonceTagLen]
}

func nonceMAC(key []byte, head []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("marketd/siwl-nonce\x00"))
	m.Write(head)
	return m.Sum(nil)[:nonceMACLen]
}

// sealNonce makes the nonce of a challenge issued to partyID at issued (whole seconds).
func sealNonce(key []byte, partyID string, issued time.Time) string {
	b := make([]byte, nonceLen)
	binary.BigEndian.PutUint32(b, uint32(issued.Unix()))
	if _, err := rand.Read(b[nonceTimeLen : nonceTimeLen+nonceRandomLen]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	copy(b[nonceTimeLen+nonceRandomLen:], nonceTag(key, partyID))
	copy(b[nonceHeadLen:], nonceMAC(key, b[:nonceHeadLen]))
	s := new(big.Int).SetBytes(b).Text(62)
	return strings.Repeat("0", 32-len(s)) + s
}

// openNonce returns, if this service sealed nonce, when its challenge was issued and whether
// it was issued to partyID.
func openNonce(key []byte, partyID, nonce string) (issued time.Time, forParty, ok bool) {
	n, valid := new(big.Int).SetString(nonce, 62)
	if !valid || n.BitLen() > 8*nonceLen {
		return time.Time{}, false, false
	}
	b := n.FillBytes(make([]byte, nonceLen))
	if !hmac.Equal(b[nonceHeadLen:], nonceMAC(key, b[:nonceHeadLen])) {
		return time.Time{}, false, false
	}
	issued = time.Unix(int64(binary.BigEndian.Uint32(b)), 0).UTC()
	return issued, hmac.Equal(b[nonceTimeLen+nonceRandomLen:nonceHeadLen], nonceTag(key, partyID)), true
}

// liveNonce opens a nonce named by a verify for partyID. A nonce this service never sealed,
// or whose challenge has expired, is nonce_invalid: nothing needs writing, since it can never
// sign in. Otherwise it returns when its challenge was issued and whether it was partyID's.
func (s *Store) liveNonce(keys *serviceKeys, partyID, nonce string, now time.Time) (time.Time, bool, error) {
	if !wallet.ValidNonce(nonce) {
		// Not one this service issued; and a NUL or invalid UTF-8 must not reach the database.
		return time.Time{}, false, errNonceInvalid
	}
	issued, forParty, ok := openNonce(keys.nonceMAC, partyID, nonce)
	if !ok {
		return time.Time{}, false, Errorf(CodeNonceInvalid, "the nonce was not issued by this service; request a new challenge")
	}
	if expires := issued.Add(s.cfg.ChallengeTTL); !now.Before(expires) {
		return time.Time{}, false, Errorf(CodeNonceInvalid, "the challenge expired at %s; request a new one", expires.Format(time.RFC3339))
	}
	return issued, forParty, nil
}

// challenge is the text of the challenge with nonce, issued to partyID at issued.
func (s *Store) challenge(partyID, nonce string, issued time.Time) *wallet.Challenge {
	return &wallet.Challenge{
		Domain:    s.domain,
		PartyID:   partyID,
		Statement: s.cfg.Statement,
		URI:       s.cfg.PublicURL,
		Version:   "1",
		Network:   s.cfg.Network,
		Nonce:     nonce,
		IssuedAt:  issued,
		ExpiresAt: issued.Add(s.cfg.ChallengeTTL),
	}
}

// IssueChallenge creates a sign-in challenge for an onboarded party. It writes nothing.
func (s *Store) IssueChallenge(ctx context.Context, partyID string) (*wallet.Challenge, error) {
	if _, err := s.Party(ctx, partyID); err != nil {
		return nil, err
	}
	keys, err := s.serviceKeys(ctx)
	if err != nil {
		return nil, err
	}
	// The text states whole seconds; the lifetime runs from the instant it states.
	issued := s.now().Truncate(time.Second)
	return s.challenge(partyID, sealNonce(keys.nonceMAC, partyID, issued), issued), nil
}

// spentNonce records that a verify named a nonce: the first one that does spends it, whatever
// its outcome. Rows go once the challenge could no longer be answered anyway.
type spentNonce struct {
	bun.BaseModel `bun:"table:spent_nonces"`

	Nonce     string    `bun:"nonce,pk"`
	PartyID   string    `bun:"party_id"` // as the verify claimed it
	SpentAt   Timestamp `bun:"spent_at"`
	ExpiresAt Timestamp `bun:"expires_at"`
}

// SignIn is a verify request: the answer to a challenge.
type SignIn struct {
	PartyID    string
	Nonce      string
	Signature  []byte // Ed25519 over the UTF-8 bytes of the challenge text
	UserAgent  string // kept with the session, for the party's own session list and support
	ClientAddr string
}

var errNonceInvalid = Errorf(CodeNonceInvalid, "the nonce is unknown or already used; request a new challenge")

// SignIn checks the signed challenge and opens a session with its first token. A nonce this
// service never issued, or an expired one, is refused before anything is written. A live one
// is spent by this attempt whatever its outcome, malformed fields included. The checks run
// before any write, so the write is one statement that spends the nonce and opens the
// session together, and only if no other attempt spent the nonce first.
func (s *Store) SignIn(ctx context.Context, in SignIn) (*IssuedToken, error) {
	keys, err := s.serviceKeys(ctx)
	if err != nil {
		return nil, err
	}
	now := s.now()
	issued, forParty, err := s.liveNonce(keys, in.PartyID, in.Nonce, now)
	if err != nil {
		return nil, err
	}
	spent := &spentNonce{Nonce: in.Nonce, PartyID: clean(in.PartyID, 200), SpentAt: At(now), ExpiresAt: At(issued.Add(s.cfg.ChallengeTTL))}
	refusal, err := s.checkSignIn(ctx, keys, in, issued, forParty)
	if err != nil {
		return nil, err
	}
	if refusal != nil {
		if _, err := s.spendNonce(ctx, spent, nil); err != nil {
			return nil, err
		}
		return nil, refusal
	}
	t, err := s.signToken(keys, in.PartyID, randomID(), now, s.sessionEnd(now))
	if err != nil {
		return nil, err
	}
	row := &Session{
		SID: t.SessionID, PartyID: in.PartyID, CreatedAt: At(now),
		UserAgent: clean(in.UserAgent, 256), ClientAddr: clean(in.ClientAddr, 64),
		TokenJTI: t.TokenID, TokenIssuedAt: At(t.IssuedAt), TokenExpiresAt: At(t.ExpiresAt),
	}
	opened, err := s.spendNonce(ctx, spent, row)
	if err != nil {
		return nil, err
	}
	if !opened {
		return nil, errNonceInvalid
	}
	s.sessions.put(t.SessionID, &sessionState{partyID: in.PartyID, currentJTI: t.TokenID, deadAt: t.ExpiresAt, endsAt: t.SessionEndsAt}, now)
	return t, nil
}

// checkSignIn returns why the answer to the live challenge issued at issued does not sign in,
// or nil when it does.
func (s *Store) checkSignIn(ctx context.Context, keys *serviceKeys, in SignIn, issued time.Time, forParty bool) (error, error) {
	if !wallet.ValidPartyID(in.PartyID) {
		return checkPartyID("partyId", in.PartyID), nil
	}
	if !forParty {
		return Errorf(CodeNonceInvalid, "the nonce was not issued to %s; request a new challenge", in.PartyID), nil
	}
	c := s.challenge(in.PartyID, in.Nonce, issued)
	p, err := s.Party(ctx, in.PartyID)
	if err != nil {
		return nil, err
	}
	if !ed25519.Verify(p.PublicKey, []byte(c.Text()), in.Signature) {
		return Errorf(CodeInvalidSignature, "the signature does not verify against the key of %s over the challenge text", in.PartyID), nil
	}
	return nil, nil
}

// SpendNonce spends a nonce without signing in: a verify too malformed to attempt still
// uses up the live challenge it names. A nonce this service never issued, or an expired one,
// is nonce_invalid and writes nothing.
func (s *Store) SpendNonce(ctx context.Context, partyID, nonce string) error {
	keys, err := s.serviceKeys(ctx)
	if err != nil {
		return err
	}
	now := s.now()
	issued, _, err := s.liveNonce(keys, partyID, nonce, now)
	if err != nil {
		return err
	}
	_, err = s.spendNonce(ctx, &spentNonce{Nonce: nonce, PartyID: clean(partyID, 200), SpentAt: At(now), ExpiresAt: At(issued.Add(s.cfg.ChallengeTTL))}, nil)
	return err
}

// spendNonce records the live nonce as spent and, when session is not nil, opens it in the
// same atomic write. It reports whether this call spent the nonce: of concurrent attempts
// naming one nonce, exactly one does (the primary key decides).
func (s *Store) spendNonce(ctx context.Context, spent *spentNonce, session *Session) (bool, error) {
	// The row can go once the challenge has expired: the nonce is refused from then on anyway.
	if s.dialect == Postgres && session != nil {
		// One statement, one round trip: the session exists only if this spent the nonce.
		res, err := s.wdb.NewRaw(`WITH spent AS (
				INSERT INTO spent_nonces (nonce, party_id, spent_at, expires_at) VALUES (?, ?, ?, ?)
				ON CONFLICT DO NOTHING RETURNING nonce
			)
			INSERT INTO signin_sessions
				(sid, party_id, created_at, user_agent, client_addr, token_jti, token_issued_at, token_expires_at)
			SELECT ?, ?, ?, ?, ?, ?, ?, ? FROM spent`,
			spent.Nonce, spent.PartyID, spent.SpentAt, spent.ExpiresAt,
			session.SID, session.PartyID, session.CreatedAt, session.UserAgent, session.ClientAddr,
			session.TokenJTI, session.TokenIssuedAt, session.TokenExpiresAt,
		).Exec(ctx)
		if err != nil {
			return false, err
		}
		n, err := res.RowsAffected()
		return n == 1, err
	}
	done := false
	err := s.inTx(ctx, func(tx *Tx) error {
		res, err := tx.NewInsert().Model(spent).On("CONFLICT DO NOTHING").Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil // spent before
		}
		if session != nil {
			if _, err := tx.NewInsert().Model(session).Exec(ctx); err != nil {
				return err
			}
		}
		done = true
		return nil
	})
	return done, err
}
