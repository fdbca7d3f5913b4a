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

	"marketd/store/internal/keyset"
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

// serviceKeyRow is a key the service generated when its store was migrated and keeps there, so
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
	retiresAt  map[string]time.Time // a replaced signing key's end in the JWKS (jwtOverlap)
	cursorMAC  *keyset.MAC
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

// keyReloadEvery is how old an instance's loaded keys get before it reads them again, so a
// signing key another process added (RotateJWT) signs here within it, and a retired one leaves.
const keyReloadEvery = time.Minute

// serviceKeys returns the service's keys (Migrate created them: ensureKeys).
func (s *Store) serviceKeys(ctx context.Context) (*serviceKeys, error) {
	if k := s.keys.cur.Load(); k != nil {
		if !k.loadedAt.IsZero() && s.now().Sub(k.loadedAt) >= keyReloadEvery { // zero: keys not read from the store
			s.refreshKeys(ctx, k)
			return s.keys.cur.Load(), nil
		}
		return k, nil
	}
	return s.reloadKeys(ctx, nil)
}

// refreshKeys reads the keys again in place of seen, which is keyReloadEvery old: one caller
// reads while the others go on with the keys they have, and keys that cannot be read now are
// kept for another keyReloadEvery, with a log line.
func (s *Store) refreshKeys(ctx context.Context, seen *serviceKeys) {
	select {
	case s.keys.loading <- struct{}{}:
		defer func() { <-s.keys.loading }()
	default:
		return
	}
	if s.keys.cur.Load() != seen {
		return
	}
	k, err := s.loadKeys(ctx)
	if err != nil {
		s.log.Warn("reading the service's keys again failed; keeping those loaded", "error", err.Error())
		kept := *seen
		kept.loadedAt = s.now()
		k = &kept
	}
	s.keys.cur.Store(k)
}

// reloadKeysNow reads the keys again at once: this process has just changed them.
func (s *Store) reloadKeysNow(ctx context.Context) error {
	select {
	case s.keys.loading <- struct{}{}:
		defer func() { <-s.keys.loading }()
	case <-ctx.Done():
		return ctx.Err()
	}
	k, err := s.loadKeys(ctx)
	if err != nil {
		return err
	}
	s.keys.cur.Store(k)
	return nil
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

// loadKeys reads the service's keys: unavailable while the store lacks a purpose's (it was not
// migrated).
func (s *Store) loadKeys(ctx context.Context) (*serviceKeys, error) {
	var rows []serviceKeyRow
	// The read pool: a caller inside a write transaction must not wait for SQLite's writer.
	// The primary key's order, then oldest first in memory: the handful of rows need no sort
	// in the database, where a read of the keys may fall inside any request.
	if err := s.db.NewSelect().Model(&rows).Order("kid").Scan(ctx); err != nil {
		return nil, err
	}
	slices.SortStableFunc(rows, func(a, b serviceKeyRow) int { return a.CreatedAt.Time.Compare(b.CreatedAt.Time) })
	have := map[string]bool{}
	for _, r := range rows {
		have[r.Purpose] = true
	}
	for _, purpose := range keyPurposes {
		if !have[purpose] {
			return nil, &Error{Code: CodeUnavailable, Message: "the store holds no " + purpose + " key: run marketd migrate, which creates the service's keys"}
		}
	}
	k := &serviceKeys{verifying: map[string]ed25519.PublicKey{}, retiresAt: map[string]time.Time{}, loadedAt: s.now()}
	var jwts []jwtKey
	for i := range rows {
		r := &rows[i]
		secret, err := s.secretOf(r)
		if err != nil {
			return nil, err
		}
		switch r.Purpose {
		case purposeJWT:
			jwts = append(jwts, jwtKey{kid: r.KID, priv: ed25519.NewKeyFromSeed(secret), created: r.CreatedAt.Time})
		case purposeCursor:
			if k.cursorMAC == nil {
				k.cursorMAC = keyset.NewMAC(secret)
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
	for i, j := range jwts {
		if i+1 < len(jwts) {
			if s.jwtRetired(jwts[i+1].created, k.loadedAt) {
				continue
			}
			k.retiresAt[j.kid] = jwts[i+1].created.Add(s.jwtOverlap())
		}
		k.verifying[j.kid] = j.priv.Public().(ed25519.PublicKey)
	}
	if n := len(jwts); n > 0 {
		k.signing, k.signingKID = jwts[n-1].priv, jwts[n-1].kid // the newest signs
	}
	return k, nil
}

// keyPurposes are the purposes of the keys the service keeps, one or more of each.
var keyPurposes = []string{purposeJWT, purposeCursor, purposeNonce, purposeLog}

// ensureKeys creates the service's keys the store does not hold yet: a new store's, or one of
// a purpose a later version added. Migrate calls it, so no read of the keys writes: a request
// that reads them finds them, and a store not migrated answers unavailable.
func (s *Store) ensureKeys(ctx context.Context) error {
	var purposes []string
	if err := s.wdb.NewSelect().Model((*serviceKeyRow)(nil)).Column("purpose").Scan(ctx, &purposes); err != nil {
		return err
	}
	have := map[string]bool{}
	for _, p := range purposes {
		have[p] = true
	}
	if !slices.ContainsFunc(keyPurposes, func(p string) bool { return !have[p] }) {
		return nil
	}
	return s.inTx(ctx, func(tx *Tx) error {
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
		// verifying, and every instance signs with the newest (loadKeys).
		_, err := tx.NewInsert().Model(&fresh).On("CONFLICT DO NOTHING").Exec(ctx)
		return err
	})
}

// jwtKey is one token signing key as loaded, oldest first.
type jwtKey struct {
	kid     string
	priv    ed25519.PrivateKey
	created time.Time
}

// jwtOverlap is how long a signing key keeps verifying, and stays in the JWKS, after its
// successor came: the lifetime of the last token it signed, plus the time every instance
// takes to read the successor (keyReloadEvery) and as much again for their clocks.
func (s *Store) jwtOverlap() time.Duration { return s.cfg.TokenTTL + 2*keyReloadEvery }

// jwtRetired tells whether a signing key whose successor was created at successor is retired
// at now: every token it signed has expired.
func (s *Store) jwtRetired(successor, now time.Time) bool {
	return now.After(successor.Add(s.jwtOverlap()))
}

// JWTRotation is what RotateJWT did.
type JWTRotation struct {
	KID                 string     `json:"kid"`                           // the new signing key
	PreviousKID         string     `json:"previousKid,omitempty"`         // the key it replaces, if any
	PreviousServedUntil *time.Time `json:"previousServedUntil,omitempty"` // when the previous key leaves the JWKS
	Removed             []string   `json:"removed"`                       // keys retired before, whose rows were deleted
}

// RotateJWT adds a new token signing key, which signs every token from now on (on the other
// instances within keyReloadEvery). The keys before it keep verifying, and stay in the JWKS,
// until every token they signed has expired (jwtOverlap after their successor came); the rows
// of keys retired so are deleted.
func (s *Store) RotateJWT(ctx context.Context) (*JWTRotation, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	rot := &JWTRotation{KID: kidOf(pub), Removed: []string{}}
	err = s.inTx(ctx, func(tx *Tx) error {
		var rows []serviceKeyRow
		q := tx.NewSelect().Model(&rows).Where("purpose = ?", purposeJWT).Order("created_at", "kid")
		if s.dialect == Postgres {
			q = q.For("UPDATE")
		}
		if err := q.Scan(ctx); err != nil {
			return err
		}
		now := tx.Now()
		created := now
		if n := len(rows); n > 0 {
			rot.PreviousKID = rows[n-1].KID
			if last := rows[n-1].CreatedAt.Time; !created.After(last) {
				created = last.Add(time.Microsecond) // the newest signs: it must sort last
			}
			until := created.Add(s.jwtOverlap())
			rot.PreviousServedUntil = &until
		}
		for i := 0; i+1 < len(rows); i++ {
			if s.jwtRetired(rows[i+1].CreatedAt.Time, now) {
				rot.Removed = append(rot.Removed, rows[i].KID)
			}
		}
		if len(rot.Removed) > 0 {
			if _, err := tx.NewDelete().Model((*serviceKeyRow)(nil)).Where("kid IN (?)", bun.In(rot.Removed)).Exec(ctx); err != nil {
				return err
			}
		}
		fresh := &serviceKeyRow{KID: rot.KID, Purpose: purposeJWT, Secret: priv.Seed(), CreatedAt: At(created)}
		if err := s.sealRow(fresh); err != nil {
			return err
		}
		_, err := tx.NewInsert().Model(fresh).Exec(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return rot, s.reloadKeysNow(ctx)
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

// JWKS lists the public keys that verify the service's tokens: the one signing now and those
// it replaced whose last tokens have not expired yet.
func (s *Store) JWKS(ctx context.Context) ([]JWK, error) {
	k, err := s.serviceKeys(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]JWK, 0, len(k.verifying))
	now := s.now()
	for kid, pub := range k.verifying {
		if end, ok := k.retiresAt[kid]; ok && now.After(end) {
			continue // every token it signed has expired since the keys were loaded
		}
		out = append(out, JWK{KTY: "OKP", CRV: "Ed25519", ALG: "EdDSA", Use: "sig", KID: kid, X: base64.RawURLEncoding.EncodeToString(pub)})
	}
	slices.SortFunc(out, func(a, b JWK) int { return strings.Compare(a.KID, b.KID) })
	return out, nil
}
