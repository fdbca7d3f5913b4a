package storetest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// RedisURL is the shared Redis the tests use: TEST_REDIS_URL (.ci/run starts one and sets it),
// else the local default when it answers; without either the test is skipped, as the
// PostgreSQL tests are without TEST_DATABASE_URL. Tests sharing it keep to keys of their own.
func RedisURL(t testing.TB) string {
	t.Helper()
	if u := os.Getenv("TEST_REDIS_URL"); u != "" {
		return u
	}
	c, err := net.DialTimeout("tcp", "127.0.0.1:6379", time.Second)
	if err != nil {
		t.Skip("no Redis at 127.0.0.1:6379: set TEST_REDIS_URL (.ci/run starts one)")
	}
	c.Close()
	return "redis://127.0.0.1:6379/0"
}

// Redis is a private redis-server a test starts, stops and starts again on the same port,
// never the shared one.
type Redis struct {
	t    testing.TB
	Port int
	dir  string
	cmd  *exec.Cmd
}

// StartRedis runs a private redis-server on a free port, killed when the test ends.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("TEST_REDIS_URL") == "" {
			t.Skip("redis-server is not installed (apt-get install redis-server; .ci/run does)")
		}
		t.Fatal("redis-server is not installed (apt-get install redis-server)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Redis{t: t, Port: ln.Addr().(*net.TCPAddr).Port, dir: t.TempDir()}
	ln.Close()
	p.Start()
	t.Cleanup(p.Stop)
	return p
}

// URL is the server's redis:// URL.
func (p *Redis) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", p.Port) }

// Start starts the server (again) and waits until it accepts connections.
func (p *Redis) Start() {
	p.t.Helper()
	p.cmd = exec.Command("redis-server", "--bind", "127.0.0.1", "--port", strconv.Itoa(p.Port),
		"--save", "", "--appendonly", "no", "--dir", p.dir, "--logfile", filepath.Join(p.dir, "redis.log"))
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	for range 250 {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", p.Port)); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.t.Fatal("redis-server did not start")
}

// Stop kills the server.
func (p *Redis) Stop() {
	if p.cmd != nil && p.cmd.Process != nil {
		p.cmd.Process.Kill()
		p.cmd.Wait()
		p.cmd = nil
	}
}
