package admin

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"
	"golang.org/x/crypto/argon2"

	"marketd/store"
	"marketd/store/ledger"
)

// Role is what an admin console user may do: a viewer reads, an operator also acts.
type Role string

const (
	RoleViewer   Role = "viewer"
	RoleOperator Role = "operator"
)

// ParseRole returns the role s names, or invalid_request.
func ParseRole(s string) (Role, error) {
	switch r := Role(s); r {
	case RoleViewer, RoleOperator:
		return r, nil
	}
	return "", store.Errorf(store.CodeInvalidRequest, "role must be viewer or operator, not %q", ledger.Truncate(s, 40))
}

// User is a user of the admin console. Its password is kept as an argon2id hash.
type User struct {
	bun.BaseModel `bun:"table:admin_users"`

	Name         string           `bun:"name,pk"`
	Role         Role             `bun:"role"`
	PasswordHash string           `bun:"password_hash"`
	DisabledAt   *store.Timestamp `bun:"disabled_at"`
	CreatedAt    store.Timestamp  `bun:"created_at"`
	PasswordAt   store.Timestamp  `bun:"password_at"` // when the password was last set
}

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// MinPasswordLen is the shortest password an admin user may have.
const MinPasswordLen = 10

func checkPassword(pw string) error {
	switch {
	case utf8.RuneCountInString(pw) < MinPasswordLen:
		return store.Errorf(store.CodeInvalidRequest, "the password must have at least %d characters", MinPasswordLen)
	case len(pw) > 1024:
		return store.Errorf(store.CodeInvalidRequest, "the password must have at most 1024 bytes")
	case !utf8.ValidString(pw) || strings.ContainsAny(pw, "\r\n\x00"):
		return store.Errorf(store.CodeInvalidRequest, "the password must be one line of text")
	}
	return nil
}

// CreateUser adds an admin console user, recorded in the audit log as by's action; a taken
// name is a conflict.
func (c *Console) CreateUser(ctx context.Context, name string, role Role, password string, by AuditEntry) (*User, error) {
	if !namePattern.MatchString(name) {
		return nil, store.Errorf(store.CodeInvalidRequest, "user name %q: want 1 to 64 of [a-z0-9._-], starting with a letter or digit", ledger.Truncate(name, 80))
	}
	if _, err := ParseRole(string(role)); err != nil {
		return nil, err
	}
	if err := checkPassword(password); err != nil {
		return nil, err
	}
	hash := hashPassword(password)
	var u *User
	err := c.s.WriteTx(ctx, func(ctx context.Context, tx bun.Tx, now time.Time) error {
		u = &User{Name: name, Role: role, PasswordHash: hash, CreatedAt: store.At(now), PasswordAt: store.At(now)}
		if _, err := tx.NewInsert().Model(u).Exec(ctx); err != nil {
			return err
		}
		by.Action, by.Target, by.Detail = "create-user", name, "role "+string(role)
		return writeAudit(ctx, tx, now, by)
	})
	if store.IsUniqueViolation(err) {
		return nil, store.Errorf(store.CodeConflict, "an admin user named %q exists", name)
	}
	if err != nil {
		return nil, err
	}
	return u, nil
}

// Users lists the admin console's users by name.
func (c *Console) Users(ctx context.Context) ([]User, error) {
	var us []User
	err := c.s.ReadDB().NewSelect().Model(&us).Order("name").Scan(ctx)
	return us, err
}

// UserByName returns a user, or not_found.
func (c *Console) UserByName(ctx context.Context, name string) (*User, error) {
	return userByName(ctx, c.s.WriteDB(), name)
}

func userByName(ctx context.Context, db bun.IDB, name string) (*User, error) {
	u := new(User)
	err := db.NewSelect().Model(u).Where("name = ?", name).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.Errorf(store.CodeNotFound, "no admin user %q", ledger.Truncate(name, 80))
	}
	return u, err
}

// DisableUser refuses the user's sign-ins and ends its open sessions at their next request;
// by's action goes to the audit log.
func (c *Console) DisableUser(ctx context.Context, name string, by AuditEntry) error {
	return c.s.WriteTx(ctx, func(ctx context.Context, tx bun.Tx, now time.Time) error {
		res, err := tx.NewUpdate().Model((*User)(nil)).Set("disabled_at = ?", store.At(now)).
			Where("name = ?", name).Where("disabled_at IS NULL").Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			if _, err := userByName(ctx, tx, name); err != nil {
				return err
			}
			return store.Errorf(store.CodeConflict, "admin user %q is already disabled", name)
		}
		by.Action, by.Target, by.Detail = "disable-user", name, ""
		return writeAudit(ctx, tx, now, by)
	})
}

// ResetPassword sets a new password and enables the user again; by's action goes to the
// audit log. Sessions signed in before the reset end at their next request.
func (c *Console) ResetPassword(ctx context.Context, name, password string, by AuditEntry) error {
	if err := checkPassword(password); err != nil {
		return err
	}
	hash := hashPassword(password)
	return c.s.WriteTx(ctx, func(ctx context.Context, tx bun.Tx, now time.Time) error {
		res, err := tx.NewUpdate().Model((*User)(nil)).
			Set("password_hash = ?", hash).
			Set("password_at = ?", store.At(now)).
			Set("disabled_at = NULL").
			Where("name = ?", name).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return store.Errorf(store.CodeNotFound, "no admin user %q", ledger.Truncate(name, 80))
		}
		by.Action, by.Target, by.Detail = "reset-user", name, "new password; enabled"
		return writeAudit(ctx, tx, now, by)
	})
}

// errLogin is the one answer to a failed sign-in, so it tells nothing about which part failed.
func errLogin() error {
	return store.Errorf(store.CodeUnauthenticated, "wrong user name or password, or the user is disabled")
}

// Login checks a user's password; any failure is the same unauthenticated error, and costs
// the same hash whether the user exists or not.
func (c *Console) Login(ctx context.Context, name, password string) (*User, error) {
	u, err := c.UserByName(ctx, name)
	if store.ErrorCode(err) == store.CodeNotFound {
		checkHash(dummyHash, password)
		return nil, errLogin()
	}
	if err != nil {
		return nil, err
	}
	if !checkHash(u.PasswordHash, password) || u.DisabledAt != nil {
		return nil, errLogin()
	}
	return u, nil
}

// argon2id parameters: OWASP's second recommendation (19 MiB, 2 passes, 1 lane).
const (
	argonTime    = 2
	argonMemory  = 19 * 1024
	argonThreads = 1
	argonKeyLen  = 32
)

var dummyHash = hashPassword("not a password of anyone")

// hashPassword returns the PHC string of an argon2id hash of pw with a fresh salt.
func hashPassword(pw string) string {
	salt := make([]byte, 16)
	rand.Read(salt)
	key := argon2.IDKey([]byte(pw), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding.EncodeToString
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads, b64(salt), b64(key))
}

// checkHash tells whether pw matches the PHC string h, with the parameters h states.
func checkHash(h, pw string) bool {
	parts := strings.Split(h, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var version int
	var m uint32
	var t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil || m > 1<<20 || t > 16 || p == 0 {
		return false
	}
	salt, err1 := base64.RawStdEncoding.DecodeString(parts[4])
	key, err2 := base64.RawStdEncoding.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(key) == 0 {
		return false
	}
	got := argon2.IDKey([]byte(pw), salt, t, m, p, uint32(len(key)))
	return subtle.ConstantTimeCompare(got, key) == 1
}
