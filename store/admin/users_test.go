package admin_test

import (
	"context"
	"strings"
	"testing"

	"marketd/store"
	"marketd/store/admin"
	"marketd/store/storetest"
)

// cli is who the command-line tool acts as in tests.
var cli = admin.AuditEntry{Actor: "cli:root", Addr: "local"}

func TestUsers_CreateChecksInputAndStoresOnlyAnArgon2idHash(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
		con := admin.New(s)
		const pw = "correct horse battery"
		for _, tc := range []struct {
			name, user string
			role       admin.Role
			pw         string
			code       store.Code
		}{
			{"bad name", "Ada Lovelace", admin.RoleOperator, pw, store.CodeInvalidRequest},
			{"empty name", "", admin.RoleOperator, pw, store.CodeInvalidRequest},
			{"bad role", "ada", "root", pw, store.CodeInvalidRequest},
			{"short password", "ada", admin.RoleOperator, "short", store.CodeInvalidRequest},
			{"two-line password", "ada", admin.RoleOperator, "first line\nsecond line", store.CodeInvalidRequest},
		} {
			if _, err := con.CreateUser(ctx, tc.user, tc.role, tc.pw, cli); store.ErrorCode(err) != tc.code {
				t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
			}
		}
		if us, _ := con.Users(ctx); len(us) != 0 {
			t.Fatalf("refused input created users: %v", us)
		}
		u, err := con.CreateUser(ctx, "ada", admin.RoleOperator, pw, cli)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(u.PasswordHash, "$argon2id$v=19$m=19456,t=2,p=1$") || strings.Contains(u.PasswordHash, pw) {
			t.Errorf("stored hash %q", u.PasswordHash)
		}
		if _, err := con.CreateUser(ctx, "ada", admin.RoleViewer, pw, cli); store.ErrorCode(err) != store.CodeConflict {
			t.Errorf("a taken name: %v, want conflict", err)
		}
		if got, err := con.Login(ctx, "ada", pw); err != nil || got.Role != admin.RoleOperator {
			t.Errorf("login: %v %v", got, err)
		}
		for _, wrong := range []string{"", pw + " ", "correct horse batterY"} {
			if _, err := con.Login(ctx, "ada", wrong); store.ErrorCode(err) != store.CodeUnauthenticated {
				t.Errorf("login with %q: %v, want unauthenticated", wrong, err)
			}
		}
		if err := con.DisableUser(ctx, "ada", cli); err != nil {
			t.Fatal(err)
		}
		if err := con.ResetPassword(ctx, "ada", "another long password", cli); err != nil {
			t.Fatal(err)
		}
		es, err := con.AuditLog(ctx, "cli:root", 10)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range es {
			got = append(got, e.Action+" "+e.Target+" "+e.Addr)
		}
		if want := []string{"reset-user ada local", "disable-user ada local", "create-user ada local"}; strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("audit of user management: %q, want %q", got, want)
		}
		if err := con.ResetPassword(ctx, "nobody", pw, cli); store.ErrorCode(err) != store.CodeNotFound {
			t.Errorf("reset of nobody: %v", err)
		}
		if err := con.DisableUser(ctx, "nobody", cli); store.ErrorCode(err) != store.CodeNotFound {
			t.Errorf("disable of nobody: %v", err)
		}
	})
}
