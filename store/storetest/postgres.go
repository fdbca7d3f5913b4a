package storetest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Postgres is a private PostgreSQL server a test starts on a data directory of its own, stops
// and starts again on the same port, never the shared one. PostgreSQL refuses to run as root,
// so as root the server runs as the postgres user.
type Postgres struct {
	t    testing.TB
	Port int
	bin  string // the cluster's binaries: initdb, postgres, pg_isready
	dir  string
	cred *syscall.Credential
	cmd  *exec.Cmd
	done chan struct{}
}

// postgresBin finds the binaries of an installed PostgreSQL (Debian keeps them out of PATH).
func postgresBin() string {
	for _, pattern := range []string{"/usr/lib/postgresql/*/bin", "/usr/local/pgsql/bin"} {
		dirs, _ := filepath.Glob(pattern)
		for i := len(dirs) - 1; i >= 0; i-- { // the newest version first
			if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
				return dirs[i]
			}
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	return ""
}

// StartPostgres makes a cluster in a fresh directory (trust authentication, user postgres)
// and runs it on a free port; it is stopped and removed when the test ends. The test is
// skipped where PostgreSQL's server binaries are not installed (apt-get install postgresql;
// .ci/run does).
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	p := newPostgres(t)
	initdb := p.command("initdb", "-D", filepath.Join(p.dir, "data"), "-U", "postgres", "--auth=trust",
		"--no-locale", "-E", "UTF8", "--no-sync", "--no-instructions")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v: %s", err, out)
	}
	p.Start()
	t.Cleanup(p.Stop)
	return p
}

// StartStandby makes a streaming standby of primary (a base backup of it, which follows its
// WAL from then on) and runs it on a free port of its own; it is stopped and removed when the
// test ends. It is asynchronous until the primary's synchronous_standby_names names it.
func StartStandby(t testing.TB, primary *Postgres) *Postgres {
	t.Helper()
	p := newPostgres(t)
	backup := p.command("pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(primary.Port), "-U", "postgres",
		"-D", filepath.Join(p.dir, "data"), "-R", "-X", "stream", "-c", "fast")
	if out, err := backup.CombinedOutput(); err != nil {
		t.Fatalf("pg_basebackup: %v: %s", err, out)
	}
	p.Start()
	t.Cleanup(p.Stop)
	return p
}

// newPostgres prepares a server's directory, owned by the postgres user when the test is
// root, and picks its port.
func newPostgres(t testing.TB) *Postgres {
	t.Helper()
	bin := postgresBin()
	if bin == "" {
		t.Skip("PostgreSQL's server binaries (initdb, postgres) are not installed: apt-get install postgresql")
	}
	dir, err := os.MkdirTemp("", "marketd-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := &Postgres{t: t, bin: bin, dir: dir}
	if os.Getuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root, PostgreSQL needs the postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.Port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return p
}

// command runs one of the cluster's binaries, as the postgres user when the test is root.
func (p *Postgres) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(p.bin, name), args...)
	cmd.Dir = p.dir
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	}
	return cmd
}

// DSN is the URL of the server's postgres database.
func (p *Postgres) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.Port)
}

// Start starts the server (again) and waits until it accepts queries.
func (p *Postgres) Start() {
	p.t.Helper()
	p.cmd = p.command("postgres", "-D", filepath.Join(p.dir, "data"), "-p", strconv.Itoa(p.Port), "-k", p.dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=50")
	log, err := os.OpenFile(filepath.Join(p.dir, "postgres.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	defer log.Close()
	p.cmd.Stdout, p.cmd.Stderr = log, log
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { cmd.Wait(); close(done) }(p.cmd, p.done)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ready := exec.Command(filepath.Join(p.bin, "pg_isready"), "-q", "-h", "127.0.0.1", "-p", strconv.Itoa(p.Port), "-U", "postgres")
		if ready.Run() == nil {
			return
		}
		select {
		case <-p.done:
			out, _ := os.ReadFile(filepath.Join(p.dir, "postgres.log"))
			p.t.Fatalf("postgres exited at start: %s", out)
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatal("postgres did not accept connections within 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop shuts the server down as an operator's fast shutdown does: sessions are ended, new
// connections refused, and it returns once the server has exited.
func (p *Postgres) Stop() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
	p.cmd = nil
}

// Kill ends the server as a crash does: SIGKILL to the postmaster, whose sessions end as they
// notice it gone. It returns once the postmaster has exited.
func (p *Postgres) Kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	p.cmd.Process.Kill()
	<-p.done
	p.cmd = nil
}

// Promote ends a standby's recovery (pg_ctl promote) and returns once it accepts writes.
func (p *Postgres) Promote() {
	p.t.Helper()
	promote := p.command("pg_ctl", "promote", "-w", "-D", filepath.Join(p.dir, "data"))
	if out, err := promote.CombinedOutput(); err != nil {
		p.t.Fatalf("pg_ctl promote: %v: %s", err, out)
	}
}
