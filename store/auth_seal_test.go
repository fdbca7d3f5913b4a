package store_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"marketd/store"
	"marketd/store/admin"
	"marketd/store/storetest"
	"marketd/web"
)

// sealKEK returns a key-encryption key of its own for each name.
func sealKEK(name string) []byte {
	k := sha256.Sum256([]byte("seal test " + name))
	return k[:]
}

// sealWitness is what a store's secrets let a client check, taken before a change and checked
// after it on another instance: a token it signed, its log's key and its operator party; and
// a console session, whose token (the cookie) the store must keep as a hash only.
type sealWitness struct {
	token    string
	logKey   string
	operator string
	console  string
}

// witness signs a party in, signs a support engineer in to the console and notes the log's
// key and the operator party of s.
func witness(t *testing.T, s *store.Store) sealWitness {
	t.Helper()
	ctx := context.Background()
	alice := storetest.Onboard(t, s, "alice")
	tok := alice.SignIn(t, s)
	vkey, err := s.LogVerifierKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	op, err := s.OperatorParty(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return sealWitness{token: tok.Token, logKey: vkey, operator: op, console: consoleSignIn(t, s)}
}

// bearers are the credentials w's clients hold: none may be readable in the store.
func (w sealWitness) bearers() []string { return []string{w.token, w.console} }

// check wants s, another instance on the same database, to accept w's token, sign
// checkpoints with w's log key, name w's operator party and serve w's console session.
func (w sealWitness) check(t *testing.T, s *store.Store) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Authenticate(ctx, w.token); err != nil {
		t.Errorf("the token signed before: %v", err)
	}
	v, err := note.NewVerifier(w.logKey)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := s.LogCheckpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open(cp, note.VerifierList(v)); err != nil {
		t.Errorf("a checkpoint does not verify under the log's key from before: %v", err)
	}
	if op, err := s.OperatorParty(ctx); err != nil || op != w.operator {
		t.Errorf("operator party %q %v, want %q", op, err, w.operator)
	}
	if p, err := s.Party(ctx, w.operator); err != nil || p == nil {
		t.Errorf("the operator party is not onboarded: %v", err)
	}
	req := httptest.NewRequest("GET", "/admin/sessions", nil)
	req.AddCookie(&http.Cookie{Name: consoleCookie, Value: w.console})
	res := httptest.NewRecorder()
	console(s).ServeHTTP(res, req)
	if res.Code != http.StatusOK {
		t.Errorf("the console session opened before: %d %s, want its page", res.Code, res.Header().Get("Location"))
	}
}

// consoleCookie is the name of the admin console's session cookie.
const consoleCookie = "marketd_admin"

// console is the admin console over s, as marketd serve mounts it.
func console(s *store.Store) *web.Console {
	return web.New(s, web.Config{Dev: true, Logger: slog.New(slog.DiscardHandler)})
}

// consoleSignIn makes a console user on s and signs it in through the console's login form,
// as a browser does; it returns the session's token, the cookie's value.
func consoleSignIn(t *testing.T, s *store.Store) string {
	t.Helper()
	const pw = "a long enough password"
	if _, err := admin.New(s).CreateUser(context.Background(), "support", admin.RoleViewer, pw, admin.AuditEntry{Actor: "cli:root", Addr: "local"}); err != nil {
		t.Fatal(err)
	}
	form := url.Values{"username": {"support"}, "password": {pw}}
	req := httptest.NewRequest("POST", "/admin/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	res := httptest.NewRecorder()
	console(s).ServeHTTP(res, req)
	if res.Code != http.StatusSeeOther || res.Header().Get("Location") != "/admin/" {
		t.Fatalf("console sign-in: %d %s %s", res.Code, res.Header().Get("Location"), res.Body)
	}
	for _, c := range res.Result().Cookies() {
		if c.Name == consoleCookie && c.Value != "" {
			return c.Value
		}
	}
	t.Fatal("console sign-in set no session cookie")
	return ""
}

// wantNoSecretInTheStore reads every value of every table of s and wants none to hold one of
// the service's secrets, in bytes, base64 or hex, nor one of the bearer credentials clients
// hold (a party's token, a console session's cookie), as text, decoded or in hex.
func wantNoSecretInTheStore(t *testing.T, s *store.Store, bearers ...string) {
	t.Helper()
	ctx := context.Background()
	secrets, err := s.PlainServiceKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(secrets) < 5 {
		t.Fatalf("%d service keys, want the signing, cursor, nonce, log and operator keys", len(secrets))
	}
	tables, err := s.TableValues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	read := []string{"service_keys"}
	if len(bearers) > 0 { // a witness's, its console session among them
		read = append(read, "admin_sessions")
	}
	for _, table := range read {
		if len(tables[table]) == 0 {
			t.Fatalf("%s was not read", table)
		}
	}
	forms := map[string][][]byte{}
	for kid, secret := range secrets {
		forms["the secret of "+kid] = [][]byte{secret, []byte(hex.EncodeToString(secret)), []byte(base64.StdEncoding.EncodeToString(secret)),
			[]byte(base64.RawURLEncoding.EncodeToString(secret))}
		if len(secret) > 32 { // the log's key, a text holding its seed in base64
			forms["the secret of "+kid] = append(forms["the secret of "+kid], secret[len(secret)-32:])
		}
	}
	for i, bearer := range bearers {
		name := fmt.Sprintf("bearer credential %d (%.8s…)", i, bearer)
		forms[name] = [][]byte{[]byte(bearer)}
		last := bearer[strings.LastIndex(bearer, ".")+1:] // a JWT's signature; a cookie's random bytes
		if raw, err := base64.RawURLEncoding.DecodeString(last); err == nil && len(raw) >= 16 {
			forms[name] = append(forms[name], raw, []byte(hex.EncodeToString(raw)))
		}
	}
	for what, encodings := range forms {
		for table, values := range tables {
			for _, v := range values {
				for _, f := range encodings {
					if bytes.Contains(v, f) {
						t.Errorf("%s is readable in %s", what, table)
					}
				}
			}
		}
	}
}

func TestSealedKeys_NoSecretIsReadableInTheStoreAfterStart(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
		w := witness(t, s) // every key in use, a console session open
		wantNoSecretInTheStore(t, s, w.bearers()...)
		w.check(t, b.Reopen(t, s.Config())) // the console session too, after a restart
	})
}

func TestSealedKeys_MigratingAPlaintextStoreSealsItAndKeepsEveryKey(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		cfg := storetest.Config(storetest.NewClock(storetest.Epoch))
		old := b.Open(t, cfg)
		w := witness(t, old)
		secrets, err := old.PlainServiceKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := old.UnsealAsBefore(ctx); err != nil {
			t.Fatal(err)
		}
		plain, err := old.TableValues(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for kid, secret := range secrets { // the scan sees a secret where there is one
			if !slices.ContainsFunc(plain["service_keys"], func(v []byte) bool { return bytes.Equal(v, secret) }) {
				t.Fatalf("the plaintext store does not hold %s's secret in plain bytes", kid)
			}
		}

		if b.Dialect == store.SQLite { // the file as the code before left it: its keys in live rows only
			if err := old.ExecRaw(ctx, "VACUUM"); err != nil {
				t.Fatal(err)
			}
		}

		cfg = old.Config()
		cfg.KEK = sealKEK("upgrade") // the KEK the upgraded service is started with
		s := b.Reopen(t, cfg)
		applied, err := s.Migrate(ctx)
		if err != nil || len(applied) != 1 || !strings.HasSuffix(applied[0], "sealed_keys") {
			t.Fatalf("migrate: %v %v, want the sealing migration alone", applied, err)
		}
		wantNoSecretInTheStore(t, s, w.bearers()...)
		if b.Dialect == store.SQLite { // nor in the file's free space or its WAL
			path := strings.TrimPrefix(cfg.DB, "sqlite://")
			for _, f := range []string{path, path + "-wal"} {
				raw, err := os.ReadFile(f)
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					t.Fatal(err)
				}
				for kid, secret := range secrets {
					if bytes.Contains(raw, secret) {
						t.Errorf("the secret of %s is still in %s after sealing", kid, filepath.Base(f))
					}
				}
				if bytes.Contains(raw, []byte(w.console)) {
					t.Errorf("the console session's token is in %s", filepath.Base(f))
				}
			}
		}
		w.check(t, s)
		again := b.Reopen(t, cfg) // a fresh instance reads the sealed rows
		w.check(t, again)
	})
}

func TestSealedKeys_AWrongKEKIsRefusedAtOpen(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
		witness(t, s)
		cfg := s.Config()
		cfg.KEK = sealKEK("another")
		other, err := store.Open(context.Background(), cfg)
		if err == nil {
			other.Close()
			t.Fatal("a store sealed under one KEK opened under another")
		}
		if !errors.Is(err, store.ErrWrongKEK) || !strings.Contains(err.Error(), store.KEKID(storetest.KEK[:])) ||
			!strings.Contains(err.Error(), store.KEKID(cfg.KEK)) || !strings.Contains(err.Error(), "MARKETD_KEK_FILE") {
			t.Errorf("error %q: want ErrWrongKEK naming both keys and MARKETD_KEK_FILE", err)
		}
	})
}

func TestSealedKeys_ASealedSecretSwappedBetweenRowsIsRefused(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
		witness(t, s)
		// The nonce key's row takes the cursor key's sealed secret: the same KEK, another row.
		if err := s.ExecRaw(ctx, "UPDATE service_keys SET secret = (SELECT secret FROM service_keys WHERE kid = 'cursor-1') WHERE kid = 'nonce-1'"); err != nil {
			t.Fatal(err)
		}
		other := b.Reopen(t, s.Config())
		_, err := other.Migrate(ctx)
		if err == nil || !strings.Contains(err.Error(), "nonce-1") || !strings.Contains(err.Error(), "copied from another row") {
			t.Fatalf("migrate with a swapped row: %v, want it refused naming the row", err)
		}
		if _, err := other.JWKS(ctx); err == nil {
			t.Error("the keys loaded with a swapped row")
		}
	})
}

func TestSealedKeys_RotateKEKKeepsEverythingUnderTheNewKEKOnly(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
		w := witness(t, s)
		next := sealKEK("rotated")
		n, err := s.RotateKEK(ctx, next)
		if err != nil || n < 5 {
			t.Fatalf("rotate: %d %v, want every key sealed again", n, err)
		}
		if s.KEKID() != store.KEKID(next) {
			t.Errorf("the store seals under %s after the rotation, want %s", s.KEKID(), store.KEKID(next))
		}
		w.check(t, s)
		wantNoSecretInTheStore(t, s, w.bearers()...)

		cfg := s.Config()
		cfg.KEK = next
		rotated := b.Reopen(t, cfg)
		if _, err := rotated.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		w.check(t, rotated)

		cfg.KEK = storetest.KEK[:]
		if old, err := store.Open(ctx, cfg); err == nil {
			old.Close()
			t.Error("the old KEK still opens the store")
		} else if !errors.Is(err, store.ErrWrongKEK) {
			t.Errorf("the old KEK: %v, want ErrWrongKEK", err)
		}
	})
}

func TestSealedKeys_RollingBackTheSealingWritesThePlainKeysBack(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
		w := witness(t, s)
		secrets, err := s.PlainServiceKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The sealing migration applied alone, after the others: the group a rollback takes.
		if err := s.ExecRaw(ctx, "UPDATE bun_migrations SET group_id = group_id + 1 WHERE name = '20261129000140'"); err != nil {
			t.Fatal(err)
		}
		down, err := s.MigrateDown(ctx)
		if err != nil || len(down) != 1 || !strings.HasSuffix(down[0], "sealed_keys") {
			t.Fatalf("down: %v %v, want the sealing migration alone", down, err)
		}
		plain, err := s.TableValues(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for kid, secret := range secrets {
			if !slices.ContainsFunc(plain["service_keys"], func(v []byte) bool { return bytes.Equal(v, secret) }) {
				t.Errorf("after the rollback %s's secret is not in plain bytes, as the code before reads it", kid)
			}
		}
		if up, err := s.Migrate(ctx); err != nil || len(up) != 1 {
			t.Fatalf("up again: %v %v", up, err)
		}
		wantNoSecretInTheStore(t, s, w.bearers()...)
		w.check(t, b.Reopen(t, s.Config()))
	})
}

// tokenKID reads the kid of a token's header.
func tokenKID(t *testing.T, token string) string {
	t.Helper()
	h, _, _ := strings.Cut(token, ".")
	b, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil {
		t.Fatal(err)
	}
	var header struct{ KID string }
	if err := json.Unmarshal(b, &header); err != nil {
		t.Fatal(err)
	}
	return header.KID
}

// jwksKIDs lists the kids s serves in its JWKS.
func jwksKIDs(t *testing.T, s *store.Store) []string {
	t.Helper()
	keys, err := s.JWKS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, k := range keys {
		kids = append(kids, k.KID)
	}
	slices.Sort(kids)
	return kids
}

func TestRotateJWT_TheNewKeySignsAndTheOldOneVerifiesUntilItsLastTokenExpires(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		clock := storetest.NewClock(storetest.Epoch)
		cfg := storetest.Config(clock)
		s := b.Open(t, cfg)
		other := b.Reopen(t, s.Config()) // another instance, its keys loaded before the rotation
		alice := storetest.Onboard(t, s, "alice")
		before := alice.SignIn(t, other)
		old := tokenKID(t, before.Token)

		clock.Advance(time.Minute)
		rot, err := s.RotateJWT(ctx)
		if err != nil || rot.PreviousKID != old || rot.KID == old || len(rot.Removed) != 0 {
			t.Fatalf("rotate: %+v %v, want a new key after %s", rot, err, old)
		}
		if want := storetest.Epoch.Add(time.Minute + cfg.TokenTTL + 2*time.Minute); rot.PreviousServedUntil == nil || !rot.PreviousServedUntil.Equal(want) {
			t.Errorf("the old key is served until %s, want %s", rot.PreviousServedUntil, want)
		}
		for name, in := range map[string]*store.Store{"this instance": s, "the other instance": other} {
			if got := tokenKID(t, alice.SignIn(t, in).Token); got != rot.KID {
				t.Errorf("%s signs with %s after the rotation, want %s", name, got, rot.KID)
			}
			if got, want := jwksKIDs(t, in), []string{old, rot.KID}; !slices.Equal(got, slices.Sorted(slices.Values(want))) {
				t.Errorf("%s serves %v, want both keys", name, got)
			}
			if _, err := in.Authenticate(ctx, before.Token); err != nil {
				t.Errorf("%s: the token signed before the rotation: %v", name, err)
			}
		}
		wantNoSecretInTheStore(t, s)

		clock.Set((*rot.PreviousServedUntil).Add(-time.Second))
		if got := jwksKIDs(t, other); !slices.Contains(got, old) {
			t.Errorf("the old key left the JWKS a second before its time: %v", got)
		}
		clock.Set((*rot.PreviousServedUntil).Add(time.Second))
		for name, in := range map[string]*store.Store{"this instance": s, "the other instance": other} {
			if got := jwksKIDs(t, in); !slices.Equal(got, []string{rot.KID}) {
				t.Errorf("%s serves %v once every token of the old key has expired, want %s alone", name, got, rot.KID)
			}
		}
		next, err := s.RotateJWT(ctx)
		if err != nil || next.PreviousKID != rot.KID || !slices.Equal(next.Removed, []string{old}) {
			t.Fatalf("the next rotation: %+v %v, want the retired key's row removed", next, err)
		}
		keys, err := s.PlainServiceKeys(ctx)
		if err != nil || keys[old] != nil || keys[rot.KID] == nil || keys[next.KID] == nil {
			t.Errorf("the rows after the next rotation: %v, want %s gone and the two others kept", err, old)
		}
	})
}
