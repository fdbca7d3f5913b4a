package store

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"
)

const (
	purposeJWT    = "jwt-ed25519" // secret: the Ed25519 seed
	purposeCursor = "cursor-hmac" // secret: the HMAC-SHA256 key that signs list cursors
	cursorKID     = "cursor-1"
	purposeNonce  = "nonce-hmac" // secret: the HMAC-SHA256 key that seals sign-in nonces
	nonceKID      = "nonce-1"
	purposeLog    = "log-note" // secret: the note signer key of the transparency log (ledger_log_serve.go)
	logKID        = "log-1"
)

// serviceKeyRow is a key the service generated on its first start and keeps in the store, so
// tokens and cursors survive a restart and every instance on one store agrees on them. Its
// secret is sealed under the key-encryption key KEKID names (auth_seal.go).
type serviceKeyRow struct {
	bun.BaseModel `bun:"table:service_keys"`

	KID       string    `bun:"kid,pk"`
	Purpose   string    `bun:"purpose"`
	Secret    []byte    `bun:"secret"`
	KEKID     string    `bun:"kek_id"`
	CreatedAt Timestamp `bun:"created_at"`
}

// serviceKeys is the loaded set; it never changes once built.
type serviceKeys struct {
	signingKID string
	signing    ed25519.PrivateKey
	verifying  map[string]ed25519.PublicKey
	cursorMAC  *keyedMAC
	nonceMAC   []byte
	log        *logKey
	loadedAt   time.Time
}

// keyring holds the current serviceKeys; reads are lock-free.
type keyring struct {
	cur     atomic.Pointer[serviceKeys]
	loading chan struct{} // a one-slot lock around loads
}

func kidOf(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// serviceKeys returns the service's keys, creating them on the first start.
func (s *Store) serviceKeys(ctx context.Context) (*serviceKeys, error) {
	if k := s.keys.cur.Load(); k != nil {
		return k, nil
	}
	return s.reloadKeys(ctx, nil)
}

// reloadKeys reads the keys again, unless another caller has done so since seen was loaded.
// A verifier that meets an unknown kid calls it: another instance may have created that key.
func (s *Store) reloadKeys(ctx context.Context, seen *serviceKeys) (*serviceKeys, error) {
	select {
	case s.keys.loading <- struct{}{}:
		defer func() { <-s.keys.loading }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if k := s.keys.cur.Load(); k != nil && k != seen {
		return k, nil
	}
	if seen != nil && s.now().Sub(seen.loadedAt) < time.Second {
		return seen, nil // do not let a stream of forged kids hammer the store
	}
	k, err := s.loadKeys(ctx)
	if err != nil {
		return nil, err
	}
	s.keys.cur.Store(k)
	return k, nil
}

func (s *Store) loadKeys(ctx context.Context) (*serviceKeys, error) {
	var rows []serviceKeyRow
	read := func() error {
		rows = rows[:0]
		return s.wdb.NewSelect().Model(&rows).Order("created_at", "kid").Scan(ctx)
	}
	if err := read(); err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, r := range rows {
		have[r.Purpose] = true
	}
	if !have[purposeJWT] || !have[purposeCursor] || !have[purposeNonce] || !have[purposeLog] {
		err := s.inTx(ctx, func(tx *Tx) error {
			var fresh []serviceKeyRow
			if !have[purposeJWT] {
				pub, priv, err := ed25519.GenerateKey(rand.Reader)
				if err != nil {
					return err
				}
				fresh = append(fresh, serviceKeyRow{KID: kidOf(pub), Purpose: purposeJWT, Secret: priv.Seed(), CreatedAt: At(tx.Now())})
			}
			for _, k := range []struct{ kid, purpose string }{{cursorKID, purposeCursor}, {nonceKID, purposeNonce}} {
				if have[k.purpose] {
					continue
				}
				secret := make([]byte, 32)
				if _, err := rand.Read(secret); err != nil {
					return err
				}
				fresh = append(fresh, serviceKeyRow{KID: k.kid, Purpose: k.purpose, Secret: secret, CreatedAt: At(tx.Now())})
			}
			if !have[purposeLog] {
				skey, err := s.newLogKey()
				if err != nil {
					return err
				}
				fresh = append(fresh, serviceKeyRow{KID: logKID, Purpose: purposeLog, Secret: []byte(skey), CreatedAt: At(tx.Now())})
			}
			for i := range fresh {
				if err := s.sealRow(&fresh[i]); err != nil {
					return err
				}
			}
			// Two instances starting at once may both insert a signing key; both keep
			// verifying, and every instance signs with the oldest.
			_, err := tx.NewInsert().Model(&fresh).On("CONFLICT DO NOTHING").Exec(ctx)
			return err
		})
		if err != nil {
			return nil, err
		}
		if err := read(); err != nil {
			return nil, err
		}
	}
	k := &serviceKeys{verifying: map[string]ed25519.PublicKey{}, loadedAt: s.now()}
	for i := range rows {
		r := &rows[i]
		secret, err := s.secretOf(r)
		if err != nil {
			return nil, err
		}
		switch r.Purpose {
		case purposeJWT:
			priv := ed25519.NewKeyFromSeed(secret)
			k.verifying[r.KID] = priv.Public().(ed25519.PublicKey)
			if k.signing == nil {
				k.signing, k.signingKID = priv, r.KID
			}
		case purposeCursor:
			if k.cursorMAC == nil {
				k.cursorMAC = newKeyedMAC(secret)
			}
		case purposeNonce:
			if k.nonceMAC == nil {
				k.nonceMAC = secret
			}
		case purposeLog:
			lk, err := parseLogKey(string(secret))
			if err != nil {
				return nil, err
			}
			k.log = lk
		}
	}
	return k, nil
}

// JWK is one public key of the JWKS document (RFC 8037, OKP keys).
type JWK struct {
	KTY string `json:"kty"`
	CRV string `json:"crv"`
	ALG string `json:"alg"`
	Use string `json:"use"`
	KID string `json:"kid"`
	X   string `json:"x"`
}

// JWKS lists the public keys that verify the service's tokens.
func (s *Store) JWKS(ctx context.Context) ([]JWK, error) {
	k, err := s.serviceKeys(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]JWK, 0, len(k.verifying))
	for kid, pub := range k.verifying {
		out = append(out, JWK{KTY: "OKP", CRV: "Ed25519", ALG: "EdDSA", Use: "sig", KID: kid, X: base64.RawURLEncoding.EncodeToString(pub)})
	}
	slices.SortFunc(out, func(a, b JWK) int { return strings.Compare(a.KID, b.KID) })
	return out, nil
}
