package store

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"marketd/store/signing"
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
	err := s.inTx(ctx, func(tx *Tx) error {
		_, err := tx.NewInsert().Model(row).Exec(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
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
// spent by this attempt whatever its outcome, malformed fields included.
func (s *Store) SignIn(ctx context.Context, in SignIn) (*IssuedToken, error) {
	if !signing.ValidNonce(in.Nonce) {
		// Not one this service issued; and a NUL or invalid UTF-8 must not reach the database.
		return nil, Errorf(CodeNonceInvalid, "the nonce is unknown or already used; request a new challenge")
	}
	keys, err := s.serviceKeys(ctx)
	if err != nil {
		return nil, err
	}
	var issued *IssuedToken
	var refusal error
	err = s.inTx(ctx, func(tx *Tx) error {
		n, err := tx.spendNonce(ctx, in.Nonce)
		if err != nil {
			return err
		}
		// From here on the nonce is spent whatever the rest decides: refusals still commit.
		switch {
		case n == nil:
			refusal = Errorf(CodeNonceInvalid, "the nonce is unknown or already used; request a new challenge")
			return nil
		case !signing.ValidPartyID(in.PartyID):
			refusal = checkPartyID("partyId", in.PartyID)
			return nil
		case n.PartyID != in.PartyID:
			refusal = Errorf(CodeNonceInvalid, "the nonce was issued to another party; request a new challenge")
			return nil
		case !tx.now.Before(n.ExpiresAt.Time):
			refusal = Errorf(CodeNonceInvalid, "the challenge expired at %s; request a new one", n.ExpiresAt.UTC().Format(time.RFC3339))
			return nil
		}
		p := new(Party)
		if err := tx.NewSelect().Model(p).Where("party_id = ?", in.PartyID).Scan(ctx); err != nil {
			return err
		}
		if !ed25519.Verify(p.PublicKey, []byte(n.Message), in.Signature) {
			refusal = Errorf(CodeInvalidSignature, "the signature does not verify against the key of %s over the challenge text", in.PartyID)
			return nil
		}
		issued, err = tx.openSession(ctx, keys, in)
		return err
	})
	if err != nil {
		return nil, err
	}
	if refusal != nil {
		return nil, refusal
	}
	s.sessions.put(issued.SessionID, issued.state, s.now())
	return issued, nil
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
