package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"marketd/store"
	"marketd/store/storetest"
)

// TestMain gives every marketd the tests start, and every store they open in this process,
// storetest's key-encryption key through MARKETD_KEK_FILE: PostgreSQL outside dev mode wants
// one, and an in-process store opened with storetest.Config reads what a process sealed.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "marketd-kek")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	path := writeKEK(dir, "test.kek", storetest.KEK[:])
	os.Setenv("MARKETD_KEK_FILE", path)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// writeKEK writes key to dir/name as MARKETD_KEK_FILE wants it and returns the file's path.
func writeKEK(dir, name string, key []byte) string {
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		panic(err)
	}
	return path
}

func TestKeys_TheEmbeddedStoreMakesItsKEKOnceInItsFolder(t *testing.T) {
	dir := t.TempDir()
	env := []string{"MARKETD_KEK_FILE=", "MARKETD_DB=sqlite://" + filepath.Join(dir, "m.db")}
	_, errOut, code := runBinary(t, env, "migrate", "up")
	if code != 0 || !strings.Contains(errOut, "made a key-encryption key") {
		t.Fatalf("first start: exit %d, stderr %q", code, errOut)
	}
	path := filepath.Join(dir, kekFileName)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the key file: %v %v, want mode 0600", fi, err)
	}
	key, err := store.ReadKEKFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, store.KEKID(key)) {
		t.Errorf("the log does not name the key made: %q", errOut)
	}
	_, errOut, code = runBinary(t, env, "migrate", "up")
	if code != 0 || strings.Contains(errOut, "made a key-encryption key") {
		t.Fatalf("second start: exit %d, stderr %q", code, errOut)
	}
	if again, err := store.ReadKEKFile(path); err != nil || string(again) != string(key) {
		t.Errorf("the key file changed: %v", err)
	}
}

func TestKeys_AKEKFileOthersMayReadIsWarnedOfButNotOneItsOwnGroupMay(t *testing.T) {
	path := writeKEK(t.TempDir(), "k.kek", storetest.KEK[:])
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if int(fi.Sys().(*syscall.Stat_t).Gid) != os.Getgid() {
		t.Skip("the temporary folder gives its files another group than this process's")
	}
	cases := []struct {
		mode  os.FileMode
		other bool // the file's group is not this process's
		warn  bool
	}{
		{0o600, false, false},
		{0o400, false, false},
		{0o440, false, false}, // a Kubernetes Secret's file, read through the pod's fsGroup
		{0o640, false, false},
		{0o644, false, true},
		{0o604, false, true},
		{0o440, true, true},
	}
	for _, tc := range cases {
		gid := os.Getgid()
		if tc.other {
			gid++
		}
		if err := os.Chown(path, -1, gid); err != nil {
			t.Logf("mode %#o in another group: %v (only root may give a file away)", tc.mode, err)
			continue
		}
		if err := os.Chmod(path, tc.mode); err != nil {
			t.Fatal(err)
		}
		var logged bytes.Buffer
		warnLoose(slog.New(slog.NewTextHandler(&logged, nil)), path)
		if warned := strings.Contains(logged.String(), "readable by others"); warned != tc.warn {
			t.Errorf("mode %#o, another group %v: warned %v, want %v (%q)", tc.mode, tc.other, warned, tc.warn, logged.String())
		}
	}
}

func TestKeys_PostgreSQLWithoutAKEKIsRefusedOutsideDevMode(t *testing.T) {
	env := []string{"MARKETD_KEK_FILE=", "MARKETD_DB=postgres://marketd@127.0.0.1:1/none"}
	for _, args := range [][]string{{"migrate", "up"}, {"admin", "list"}} {
		out, errOut, code := runBinary(t, env, args...)
		if code != 1 || out != "" || !strings.Contains(errOut, "MARKETD_KEK_FILE is not set") || !strings.Contains(errOut, "head -c 32 /dev/urandom | base64") {
			t.Errorf("marketd %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, out, errOut)
		}
	}
	_, errOut, code := runBinary(t, append(env, "MARKETD_ADDR=256.0.0.1:1", "MARKETD_KEK_FILE=/nonexistent/marketd.kek"), "serve")
	if code != 1 || !strings.Contains(errOut, "MARKETD_KEK_FILE") || !strings.Contains(errOut, "/nonexistent/marketd.kek") {
		t.Errorf("serve with a missing key file: exit %d, stderr %q", code, errOut)
	}
}

func TestKeys_RotateKEKSealsEverySecretUnderTheNewKeyOnly(t *testing.T) {
	dir := t.TempDir()
	db := "MARKETD_DB=sqlite://" + filepath.Join(dir, "m.db")
	oldKEK := writeKEK(dir, "old.kek", []byte(strings.Repeat("o", 32)))
	newKEK := writeKEK(dir, "new.kek", []byte(strings.Repeat("n", 32)))
	if _, errOut, code := runBinary(t, []string{db, "MARKETD_KEK_FILE=" + oldKEK}, "migrate", "up"); code != 0 {
		t.Fatalf("migrate: exit %d, stderr %q", code, errOut)
	}
	out, errOut, code := runBinary(t, []string{db, "MARKETD_KEK_FILE=" + oldKEK}, "keys", "rotate-kek")
	if code == 0 || !strings.Contains(errOut, "--new-kek-file is required") {
		t.Errorf("rotate-kek without --new-kek-file: exit %d, stderr %q", code, errOut)
	}
	out, errOut, code = runBinary(t, []string{db, "MARKETD_KEK_FILE=" + oldKEK}, "keys", "rotate-kek", "--new-kek-file", newKEK)
	if code != 0 {
		t.Fatalf("rotate-kek: exit %d, stderr %q", code, errOut)
	}
	var res struct {
		Resealed    int
		KEK         string
		PreviousKEK string `json:"previousKek"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Resealed < 1 || res.KEK != store.KEKID([]byte(strings.Repeat("n", 32))) ||
		res.PreviousKEK != store.KEKID([]byte(strings.Repeat("o", 32))) {
		t.Fatalf("rotate-kek printed %q (%v)", out, err)
	}
	_, errOut, code = runBinary(t, []string{db, "MARKETD_KEK_FILE=" + oldKEK}, "migrate", "up")
	if code != 1 || !strings.Contains(errOut, "wrong key-encryption key") || !strings.Contains(errOut, oldKEK) || !strings.Contains(errOut, res.KEK) {
		t.Errorf("the old key after the rotation: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := runBinary(t, []string{db, "MARKETD_KEK_FILE=" + newKEK}, "admin", "list"); code != 0 {
		t.Errorf("the new key after the rotation: exit %d, stderr %q", code, errOut)
	}
}

func TestKeys_RotateJWTAddsASigningKeyAndNamesTheOneItReplaces(t *testing.T) {
	env := []string{"MARKETD_DB=sqlite://" + filepath.Join(t.TempDir(), "m.db")}
	if _, errOut, code := runBinary(t, env, "migrate", "up"); code != 0 {
		t.Fatalf("migrate: exit %d, stderr %q", code, errOut)
	}
	var first, second store.JWTRotation
	for _, rot := range []*store.JWTRotation{&first, &second} {
		out, errOut, code := runBinary(t, env, "keys", "rotate", "--token-ttl", "1h", "jwt")
		if code != 0 {
			t.Fatalf("keys rotate jwt: exit %d, stderr %q", code, errOut)
		}
		if err := json.Unmarshal([]byte(out), rot); err != nil || rot.KID == "" {
			t.Fatalf("keys rotate jwt printed %q (%v)", out, err)
		}
	}
	if second.PreviousKID != first.KID || second.PreviousServedUntil == nil {
		t.Errorf("the second rotation %+v does not name the first's key %s and when it leaves", second, first.KID)
	}
	if _, errOut, code := runBinary(t, env, "keys", "rotate", "kek"); code != 2 || !strings.Contains(errOut, "jwt") {
		t.Errorf("keys rotate kek: exit %d, stderr %q", code, errOut)
	}
}
