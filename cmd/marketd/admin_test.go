package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"marketd/store"
	"marketd/store/admin"
	"marketd/store/storetest"
)

// withStdin runs fn with standard input reading text from a pipe (not a terminal).
func withStdin(t *testing.T, text string, fn func()) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	w.WriteString(text)
	w.Close()
	old := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = old; r.Close() }()
	fn()
}

func TestReadPassword_FromAPipeIsOneLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a long passphrase\n", "a long passphrase"},
		{"a long passphrase\r\nignored second line\n", "a long passphrase"},
		{"no newline at the end", "no newline at the end"},
	} {
		withStdin(t, tc.in, func() {
			got, err := readPassword(os.Stdin, os.Stderr, "ada")
			if err != nil || got != tc.want {
				t.Errorf("%q: %q %v, want %q", tc.in, got, err, tc.want)
			}
		})
	}
	withStdin(t, "", func() {
		if _, err := readPassword(os.Stdin, os.Stderr, "ada"); err == nil {
			t.Errorf("empty input: no error")
		}
	})
}

func TestAdminCmd_CreateDisableResetOnTheStore(t *testing.T) {
	db := "sqlite://" + filepath.Join(t.TempDir(), "m.db")
	run := func(stdin string, args ...string) error {
		var err error
		withStdin(t, stdin, func() { err = adminCmd(append(args[:1:1], append([]string{"--db", db}, args[1:]...)...)) })
		return err
	}
	if err := run("a long passphrase\n", "create-user", "--role", "operator", "ada"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{
		{"create-user", "--role", "root", "bob"},
		{"create-user", "--role", "viewer"},
		{"create-user", "--role", "viewer", "ada"}, // taken
		{"disable", "nobody"},
		{"rename", "ada"},
	} {
		if err := run("a long passphrase\n", bad...); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	if err := run("short\n", "create-user", "--role", "viewer", "bob"); err == nil {
		t.Errorf("a short password: no error")
	}
	if err := run("", "disable", "ada"); err != nil {
		t.Fatal(err)
	}
	if err := run("another passphrase\n", "reset", "ada"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cfg := store.DefaultConfig()
	cfg.DB, cfg.KEK = db, storetest.KEK[:] // the key TestMain gives marketd
	s, err := store.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	us, err := admin.New(s).Users(ctx)
	if err != nil || len(us) != 1 || us[0].Name != "ada" || us[0].DisabledAt != nil {
		t.Fatalf("users: %+v %v", us, err)
	}
	if _, err := admin.New(s).Login(ctx, "ada", "another passphrase"); err != nil {
		t.Errorf("login with the reset password: %v", err)
	}
	es, _ := admin.New(s).AuditLog(ctx, "", 10)
	if len(es) != 3 || es[0].Action != "reset-user" || es[2].Action != "create-user" || es[0].Actor[:4] != "cli:" {
		t.Errorf("audit: %+v", es)
	}
}
