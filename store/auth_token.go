package store

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"marketd/store/wallet"
	"slices"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// tokenClaims are the claims of a session token, an EdDSA JWT whose header names its key
// (kid): iss (the public URL), aud (the public URL's origin, scheme://host[:port]: the API,
// GraphQL and the console served there), sub (the party id), iat, exp, jti, and sid, the
// session it belongs to.
type tokenClaims struct {
	jwt.RegisteredClaims
	SID string `json:"sid"`
}

// IssuedToken is a freshly signed session token.
type IssuedToken struct {
	Token         string
	PartyID       string
	SessionID     string
	TokenID       string
	IssuedAt      time.Time
	ExpiresAt     time.Time
	SessionEndsAt time.Time // no token of the session outlives this
}

// Auth is the identity the token gives, as Authenticate would answer for it.
func (t *IssuedToken) Auth() *Auth {
	return &Auth{PartyID: t.PartyID, SessionID: t.SessionID, TokenID: t.TokenID, IssuedAt: t.IssuedAt,
		ExpiresAt: t.ExpiresAt, SessionEndsAt: t.SessionEndsAt, Current: true}
}

var jwtParser = jwt.NewParser(jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}), jwt.WithoutClaimsValidation())

func randomID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// signToken issues a token of session sid, which ends at sessionEnds. Its iat is whole
// seconds, as JWT states it, and its lifetime runs from there, but never past the session's end.
func (s *Store) signToken(keys *serviceKeys, partyID, sid string, now, sessionEnds time.Time) (*IssuedToken, error) {
	iat := now.Truncate(time.Second)
	exp := iat.Add(s.cfg.TokenTTL)
	if exp.After(sessionEnds) {
		exp = sessionEnds
	}
	t := &IssuedToken{PartyID: partyID, SessionID: sid, TokenID: randomID(), IssuedAt: iat, ExpiresAt: exp, SessionEndsAt: sessionEnds}
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, tokenClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    s.cfg.PublicURL,
			Audience:  jwt.ClaimStrings{s.audience},
			Subject:   partyID,
			IssuedAt:  jwt.NewNumericDate(t.IssuedAt),
			ExpiresAt: jwt.NewNumericDate(t.ExpiresAt),
			ID:        t.TokenID,
		},
		SID: sid,
	})
	tok.Header["kid"] = keys.signingKID
	var err error
	t.Token, err = tok.SignedString(keys.signing)
	return t, err
}

// parseToken checks a token's signature and claims, but not its session. A token already
// verified is answered from memory: the cache is keyed by the whole token, so only the exact
// bytes that verified once can hit it.
func (s *Store) parseToken(ctx context.Context, token string) (*tokenClaims, error) {
	if c := s.tokens.get(token); c != nil {
		return c, nil
	}
	if len(token) > 4096 {
		return nil, Errorf(CodeInvalidToken, "the token is malformed")
	}
	keys, err := s.serviceKeys(ctx)
	if err != nil {
		return nil, err
	}
	var keyErr error
	claims := new(tokenClaims)
	_, err = jwtParser.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		if pub, ok := keys.verifying[kid]; ok {
			return pub, nil
		}
		// Another instance on this store may have created the key since we loaded ours.
		fresh, err := s.reloadKeys(ctx, keys)
		if err != nil {
			keyErr = err
			return nil, err
		}
		if pub, ok := fresh.verifying[kid]; ok {
			return pub, nil
		}
		return nil, errors.New("unknown kid")
	})
	if keyErr != nil {
		return nil, keyErr
	}
	if err != nil {
		return nil, &Error{Code: CodeInvalidToken, Message: "the token does not verify: " + jwtReason(err), Err: err}
	}
	switch {
	case claims.Issuer != s.cfg.PublicURL:
		return nil, Errorf(CodeInvalidToken, "the token was not issued by this service")
	case !slices.Contains(claims.Audience, s.audience):
		return nil, Errorf(CodeInvalidToken, "the token is not meant for %s (its aud claim must name it); sign in again", s.audience)
	case claims.ExpiresAt == nil || claims.IssuedAt == nil || claims.ID == "" || claims.SID == "" || !wallet.ValidPartyID(claims.Subject):
		return nil, Errorf(CodeInvalidToken, "the token lacks a required claim")
	}
	s.tokens.put(token, claims, s.now())
	return claims, nil
}

func jwtReason(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "malformed"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return "bad signature"
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return "unknown key id or algorithm"
	}
	return "rejected"
}

// tokenCache remembers tokens whose signature verified, until they expire.
type tokenCache struct {
	mu sync.RWMutex
	m  map[string]*tokenClaims
}

const tokenCacheMax = 1 << 17

func newTokenCache() *tokenCache { return &tokenCache{m: make(map[string]*tokenClaims)} }

func (c *tokenCache) get(token string) *tokenClaims {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.m[token]
}

// forget drops every remembered token: each verifies again on its next use.
func (c *tokenCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.m)
}

func (c *tokenCache) put(token string, claims *tokenClaims, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= tokenCacheMax {
		for k, v := range c.m {
			if !now.Before(v.ExpiresAt.Time) {
				delete(c.m, k)
			}
		}
		for k := range c.m { // still full: forget arbitrary entries; they verify again on use
			if len(c.m) < tokenCacheMax*3/4 {
				break
			}
			delete(c.m, k)
		}
	}
	c.m[token] = claims
}
