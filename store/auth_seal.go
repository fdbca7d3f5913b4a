package store

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The service's secrets (the rows of service_keys) are sealed at rest: each row's secret is
// encrypted by AES-256-GCM under the key-encryption key (KEK) of Config.KEK, which is never
// in the database, with a random nonce and the row's kid and purpose as associated data, so a
// sealed secret copied onto another row does not open. Beside it the row keeps the KEK's id
// (kek_id), so a store opened with another KEK is refused by name rather than read as a
// garbled key. A row whose kek_id is empty holds its secret in plain bytes, as the code before
// sealing wrote it; migrating seals it (sealKeys).

// KEKSize is the size of a key-encryption key in bytes: an AES-256 key.
const KEKSize = 32

// sealedOverhead is what sealing adds to a secret: the nonce before it and GCM's tag after.
const sealedOverhead = 12 + 16

// kekCipher is a key-encryption key ready to seal and open the rows of service_keys.
type kekCipher struct {
	id   string
	aead cipher.AEAD
}

// KEKID names a key-encryption key without revealing it: the first 8 bytes of the SHA-256 of
// a label and the key, in hex. The store keeps it beside each sealed secret.
func KEKID(key []byte) string {
	h := sha256.New()
	h.Write([]byte("marketd key-encryption key id\x00"))
	h.Write(key)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// newKEK readies key, which must be KEKSize bytes.
func newKEK(key []byte) (*kekCipher, error) {
	if len(key) != KEKSize {
		return nil, fmt.Errorf("key-encryption key: %d bytes, want %d", len(key), KEKSize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &kekCipher{id: KEKID(key), aead: aead}, nil
}

// sealAD is the associated data of a row's secret: its kid and purpose, so a sealed secret
// moved to another row, or relabelled, fails to open.
func sealAD(kid, purpose string) []byte {
	return []byte("marketd service key\x00" + kid + "\x00" + purpose)
}

// seal encrypts the secret of row kid/purpose: a random nonce, then the ciphertext and tag.
func (k *kekCipher) seal(kid, purpose string, secret []byte) ([]byte, error) {
	nonce := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(secret)+k.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return k.aead.Seal(nonce, nonce, secret, sealAD(kid, purpose)), nil
}

// open decrypts what seal made for the row kid/purpose.
func (k *kekCipher) open(kid, purpose string, sealed []byte) ([]byte, error) {
	n := k.aead.NonceSize()
	if len(sealed) < n+k.aead.Overhead() {
		return nil, fmt.Errorf("service key %s (%s): %d sealed bytes, too short to be sealed", kid, purpose, len(sealed))
	}
	out, err := k.aead.Open(nil, sealed[:n], sealed[n:], sealAD(kid, purpose))
	if err != nil {
		return nil, fmt.Errorf("service key %s (%s) does not open under key-encryption key %s although it names it: "+
			"the row was altered or its sealed secret copied from another row", kid, purpose, k.id)
	}
	return out, nil
}

// ErrWrongKEK is the error (errors.Is) of a store whose secrets are sealed under another
// key-encryption key than the one given.
var ErrWrongKEK = errors.New("wrong key-encryption key")

// secretOf returns the plain secret of row r: opened under the store's KEK when sealed,
// checked for the shape of a plain secret when not (a row sealed by a KEK whose id was lost
// is refused rather than read as a garbled key).
func (s *Store) secretOf(r *serviceKeyRow) ([]byte, error) {
	if r.KEKID == "" {
		if err := plainShape(r); err != nil {
			return nil, err
		}
		return r.Secret, nil
	}
	k := s.kek.Load()
	if r.KEKID != k.id {
		return nil, fmt.Errorf("%w: the store's service key %s (%s) is sealed under key-encryption key %s, "+
			"but the key given is %s; start with the KEK the store was sealed with (MARKETD_KEK_FILE)",
			ErrWrongKEK, r.KID, r.Purpose, r.KEKID, k.id)
	}
	return k.open(r.KID, r.Purpose, r.Secret)
}

// plainShape checks that an unsealed row's secret looks like the plain secret of its purpose.
func plainShape(r *serviceKeyRow) error {
	switch r.Purpose {
	case purposeLog:
		if strings.HasPrefix(string(r.Secret), "PRIVATE+KEY+") {
			return nil
		}
	default:
		if len(r.Secret) == 32 {
			return nil
		}
	}
	return fmt.Errorf("service key %s (%s) names no key-encryption key but does not hold a plain key either "+
		"(%d bytes): it may be sealed under a key whose id was lost", r.KID, r.Purpose, len(r.Secret))
}

// sealRow seals the plain secret of a row about to be written.
func (s *Store) sealRow(r *serviceKeyRow) error {
	k := s.kek.Load()
	sealed, err := k.seal(r.KID, r.Purpose, r.Secret)
	if err != nil {
		return err
	}
	r.Secret, r.KEKID = sealed, k.id
	return nil
}

// KEKID returns the id of the key-encryption key the store seals its secrets under.
func (s *Store) KEKID() string { return s.kek.Load().id }

// sealKeys opens every row of service_keys, so a store sealed under another KEK, or a row
// altered or swapped, is refused as the service starts; and it seals the rows still in plain
// bytes (a store written by the code before sealing), in one transaction. On SQLite the bytes
// those rows held are zeroed in the file (secure_delete) and the WAL that held them emptied.
func (s *Store) sealKeys(ctx context.Context) error {
	var rows []serviceKeyRow
	if err := s.db.NewSelect().Model(&rows).Order("kid").Scan(ctx); err != nil {
		return err
	}
	plain := 0
	for i := range rows {
		if _, err := s.secretOf(&rows[i]); err != nil {
			return err
		}
		if rows[i].KEKID == "" {
			plain++
		}
	}
	if plain == 0 {
		return nil
	}
	if s.dialect == SQLite {
		if _, err := s.wdb.ExecContext(ctx, "PRAGMA secure_delete = ON"); err != nil {
			return err
		}
		defer s.wdb.ExecContext(context.WithoutCancel(ctx), "PRAGMA secure_delete = OFF")
	}
	if err := s.sealPlainRows(ctx); err != nil {
		return err
	}
	if s.dialect == SQLite {
		if _, err := s.wdb.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			s.log.Warn("emptying the WAL after sealing the service's keys failed; it empties at its next checkpoint", "error", err.Error())
		}
	}
	return nil
}

// sealPlainRows seals the rows of service_keys still in plain bytes, in one transaction;
// every row is opened first, so a row altered or sealed under another KEK fails it.
func (s *Store) sealPlainRows(ctx context.Context) error {
	_, err := s.rewriteKeys(ctx, func(r *serviceKeyRow) (bool, error) {
		plain, err := s.secretOf(r)
		if err != nil || r.KEKID != "" {
			return false, err
		}
		r.Secret = plain
		if err := s.sealRow(r); err != nil {
			return false, err
		}
		s.log.Info("service key sealed under the key-encryption key", "kid", r.KID, "purpose", r.Purpose, "kek", s.KEKID())
		return true, nil
	})
	return err
}

// unsealKeys writes every sealed secret back in plain bytes: rolling back the migration that
// added kek_id leaves the code before it a store it can read.
func (s *Store) unsealKeys(ctx context.Context) error {
	_, err := s.rewriteKeys(ctx, func(r *serviceKeyRow) (bool, error) {
		if r.KEKID == "" {
			return false, nil
		}
		plain, err := s.secretOf(r)
		if err != nil {
			return false, err
		}
		r.Secret, r.KEKID = plain, ""
		return true, nil
	})
	return err
}

// RotateKEK seals every secret of the store again under newKEK, in one transaction: each is
// opened under the store's KEK (or read plain) and sealed afresh. From then on only newKEK
// opens them; every instance must restart with it. It returns how many secrets it sealed.
func (s *Store) RotateKEK(ctx context.Context, key []byte) (int, error) {
	next, err := newKEK(key)
	if err != nil {
		return 0, err
	}
	n, err := s.rewriteKeys(ctx, func(r *serviceKeyRow) (bool, error) {
		plain, err := s.secretOf(r)
		if err != nil {
			return false, err
		}
		sealed, err := next.seal(r.KID, r.Purpose, plain)
		if err != nil {
			return false, err
		}
		r.Secret, r.KEKID = sealed, next.id
		return true, nil
	})
	if err != nil {
		return 0, err
	}
	s.kek.Store(next)
	return n, nil
}

// rewriteKeys reads every row of service_keys in one transaction (locked for it on
// PostgreSQL; SQLite's writers are serialised already), in kid order, and writes back the
// secret and kek_id of each row change says it altered; it returns how many it wrote.
func (s *Store) rewriteKeys(ctx context.Context, change func(r *serviceKeyRow) (bool, error)) (int, error) {
	n := 0
	err := s.inTx(ctx, func(tx *Tx) error {
		n = 0
		var rows []serviceKeyRow
		q := tx.NewSelect().Model(&rows).Order("kid")
		if s.dialect == Postgres {
			q = q.For("UPDATE")
		}
		if err := q.Scan(ctx); err != nil {
			return err
		}
		for i := range rows {
			r := &rows[i]
			write, err := change(r)
			if err != nil {
				return err
			}
			if !write {
				continue
			}
			if _, err := tx.NewUpdate().Model(r).Column("secret", "kek_id").WherePK().Exec(ctx); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// ReadKEKFile reads a key-encryption key from path: KEKSize random bytes as base64 on one
// line, as `head -c 32 /dev/urandom | base64` writes them.
func ReadKEKFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("key-encryption key: %w", err)
	}
	text := strings.TrimSpace(string(b))
	key, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		if key, err = base64.RawStdEncoding.DecodeString(text); err != nil {
			return nil, fmt.Errorf("key-encryption key %s: not base64 on one line (make one with: head -c 32 /dev/urandom | base64)", path)
		}
	}
	if len(key) != KEKSize {
		return nil, fmt.Errorf("key-encryption key %s: %d bytes, want %d (make one with: head -c 32 /dev/urandom | base64)", path, len(key), KEKSize)
	}
	if bytes.Equal(key, make([]byte, KEKSize)) {
		return nil, fmt.Errorf("key-encryption key %s: all zero bytes; make a random one with: head -c 32 /dev/urandom | base64", path)
	}
	return key, nil
}

// NewKEKFile makes a fresh random key-encryption key and writes it to path (mode 0600, its
// folder made 0700 if missing), refusing to overwrite a file already there.
func NewKEKFile(path string) ([]byte, error) {
	key := make([]byte, KEKSize)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("key-encryption key: %w", err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("key-encryption key: %w", err)
	}
	_, werr := f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("key-encryption key: %w", err)
	}
	return key, nil
}

// checkKEK refuses, as the store opens, a KEK other than the one its secrets are sealed under,
// naming both. A store not migrated as far as sealing (no kek_id column yet) has nothing to
// check: migrating it seals its secrets under the KEK given.
func (s *Store) checkKEK(ctx context.Context) error {
	var has int
	q := "SELECT count(*) FROM pragma_table_info('service_keys') WHERE name = 'kek_id'"
	if s.dialect == Postgres {
		q = "SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'service_keys' AND column_name = 'kek_id'"
	}
	if err := s.db.NewRaw(q).Scan(ctx, &has); err != nil {
		return fmt.Errorf("key-encryption key: reading the store: %w", err)
	}
	if has == 0 {
		return nil
	}
	var ids []string
	if err := s.db.NewRaw("SELECT DISTINCT kek_id FROM service_keys WHERE kek_id <> '' ORDER BY kek_id").Scan(ctx, &ids); err != nil {
		return fmt.Errorf("key-encryption key: reading the store: %w", err)
	}
	k := s.kek.Load()
	for _, id := range ids {
		if id != k.id {
			return fmt.Errorf("%w: the store's secrets are sealed under key-encryption key %s, but the key given is %s; "+
				"start with the KEK the store was sealed with (MARKETD_KEK_FILE)", ErrWrongKEK, id, k.id)
		}
	}
	return nil
}

// SealSecret seals secret as the row kid/purpose of service_keys keeps it under the
// key-encryption key kek: for tools and tests that write a row themselves.
func SealSecret(kek []byte, kid, purpose string, secret []byte) ([]byte, error) {
	k, err := newKEK(kek)
	if err != nil {
		return nil, err
	}
	return k.seal(kid, purpose, secret)
}

// OpenSecret opens what SealSecret sealed for the row kid/purpose under kek.
func OpenSecret(kek []byte, kid, purpose string, sealed []byte) ([]byte, error) {
	k, err := newKEK(kek)
	if err != nil {
		return nil, err
	}
	return k.open(kid, purpose, sealed)
}
