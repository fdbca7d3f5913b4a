package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for checking the store directly

	"marketd/store/storetest"
)

// binary is marketd built once for every process test in the package.
var binary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "marketd-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "marketd")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v: %s", err, out)
	}
	return bin, nil
})

// postgresDSN is a fresh PostgreSQL schema for the test (dropped afterwards); the fleet
// needs a store every process shares, so the test is skipped without TEST_DATABASE_URL.
func postgresDSN(t testing.TB) string {
	for _, b := range storetest.Backends() {
		if b.Postgres {
			return b.DSN(t)
		}
	}
	t.Skip("the fleet runs on PostgreSQL: set TEST_DATABASE_URL (.ci/run does)")
	return ""
}

// instance is one marketd process.
type instance struct {
	t    testing.TB
	url  string
	cmd  *exec.Cmd
	logs *syncBuffer
	done chan struct{}
}

// syncBuffer collects a process's output, copied in by exec's goroutine while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startInstance runs `marketd serve` with env on a free port (or the MARKETD_ADDR env names) and
// waits until it is ready.
func startInstance(t testing.TB, env ...string) *instance {
	t.Helper()
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	return startInstanceOf(t, bin, env...)
}

// startInstanceOf is startInstance of the marketd binary at bin (another build, for a
// benchmark against the code before).
func startInstanceOf(t testing.TB, bin string, env ...string) *instance {
	t.Helper()
	port := freePort(t)
	for _, e := range env { // an address the test chose, to start again where it was
		if a, ok := strings.CutPrefix(e, "MARKETD_ADDR=127.0.0.1:"); ok {
			port, _ = strconv.Atoi(a)
		}
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), append([]string{
		fmt.Sprintf("MARKETD_ADDR=127.0.0.1:%d", port),
		"MARKETD_PUBLIC_URL=http://marketd.fleet.test", "MARKETD_DEV=1", "MARKETD_LOG_LEVEL=warn",
		// Tests and benchmarks play many parties from one address: the per-address sign-in
		// and execute limits are off unless a test sets them.
		"MARKETD_DRAIN_DELAY=0s", "MARKETD_RATE_PREPARE=0", "MARKETD_RATE_PREPARE_ADDRESS=0", "MARKETD_RATE_SIGNIN=0", "MARKETD_RATE_EXECUTE=0",
	}, env...)...)
	in := &instance{t: t, url: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd, logs: new(syncBuffer), done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = in.logs, in.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(in.done) }()
	t.Cleanup(func() {
		in.cmd.Process.Kill()
		<-in.done
		if t.Failed() {
			t.Logf("logs of %s:\n%s", in.url, in.logs)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if res, err := http.Get(in.url + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return in
			}
		}
		select {
		case <-in.done:
			t.Fatalf("marketd exited: %s", in.logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("marketd not ready after 30 s: %s", in.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// client sends requests from one loopback address, so the fleet sees one client host; each
// test picks an address of its own, so windows in the shared Redis are never another run's.
type client struct {
	t    testing.TB
	ip   string
	http *http.Client
}

func newClient(t testing.TB) *client {
	ip := fmt.Sprintf("127.%d.%d.%d", 1+mrand.IntN(250), mrand.IntN(256), 1+mrand.IntN(250))
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 64}
	return &client{t: t, ip: ip, http: &http.Client{Transport: tr, Timeout: 20 * time.Second}}
}

type reply struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

func (r reply) str(k string) string { s, _ := r.body[k].(string); return s }

// try sends one request; err is a transport error (the instance is gone).
func (c *client) try(method, url, tok string, body any) (reply, error) {
	return c.tryWith(method, url, tok, nil, body)
}

// tryWith is try with the headers h besides.
func (c *client) tryWith(method, url, tok string, h http.Header, body any) (reply, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	for k, v := range h {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return reply{}, err
	}
	r := reply{status: res.StatusCode, header: res.Header, raw: raw}
	json.Unmarshal(raw, &r.body)
	return r, nil
}

func (c *client) do(method, url, tok string, body any) reply {
	c.t.Helper()
	r, err := c.try(method, url, tok, body)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, url, err)
	}
	return r
}

func (c *client) ok(method, url, tok string, body any) reply {
	c.t.Helper()
	r := c.do(method, url, tok, body)
	if r.status/100 != 2 {
		c.t.Fatalf("%s %s: %d %s", method, url, r.status, r.raw)
	}
	return r
}

// party is a party made by storetest and signed in through a door, with its bearer token.
type party struct {
	*storetest.Party
	tok string
}

// onboard creates a party through base and signs it in there.
func (c *client) onboard(base, hint string) *party {
	c.t.Helper()
	p := &party{Party: storetest.NewParty(hint)}
	prep := c.ok("POST", base+"/api/parties/onboard/prepare", "", map[string]string{"publicKey": p.PublicBase64(), "hint": hint})
	c.ok("POST", base+"/api/parties/onboard/execute", "", map[string]string{"preparedTransactionHash": prep.str("preparedTransactionHash"), "signature": p.SignHash(c.t, prep.str("preparedTransactionHash"))})
	n := c.ok("POST", base+"/api/auth/nonce", "", map[string]string{"partyId": p.ID})
	v := c.ok("POST", base+"/api/auth/verify", "", map[string]string{"partyId": p.ID, "nonce": n.str("nonce"), "signature": p.SignBase64([]byte(n.str("message")))})
	p.tok = v.str("token")
	return p
}

// prepare runs path/prepare as p through base and returns the hash to sign.
func (c *client) prepare(base, path string, p *party, body any) string {
	c.t.Helper()
	return c.ok("POST", base+path+"/prepare", p.tok, body).str("preparedTransactionHash")
}

func (c *client) tap(base string, p *party, amount string) {
	c.t.Helper()
	h := c.prepare(base, "/api/wallet/tap", p, map[string]string{"instrument": "CC", "amount": amount})
	c.ok("POST", base+"/api/wallet/tap/execute", p.tok, map[string]string{"preparedTransactionHash": h, "signature": p.SignHash(c.t, h)})
}

func ccBalance(c *client, base string, p *party) string {
	c.t.Helper()
	r := c.ok("GET", base+"/api/wallet/balance/"+p.ID, p.tok, nil)
	for _, b := range r.body["balances"].([]any) {
		if m := b.(map[string]any); m["instrument"] == "CC" {
			return m["amount"].(string)
		}
	}
	c.t.Fatalf("no CC balance: %s", r.raw)
	return ""
}

// TestFleet runs three marketd processes on one PostgreSQL database and the shared Redis, as
// behind a load balancer, and shows they behave as one service.
func TestFleet(t *testing.T) {
	dsn := postgresDSN(t)
	env := []string{"MARKETD_DB=" + dsn, "MARKETD_REDIS=" + storetest.RedisURL(t), "MARKETD_RATE_READ=300"}
	fleet := []*instance{startInstance(t, env...)} // the first applies the migrations
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := startInstance(t, env...)
			mu.Lock()
			fleet = append(fleet, in)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(fleet) != 3 {
		t.FailNow()
	}

	t.Run("ReadLimitHoldsAcrossTheFleet", func(t *testing.T) {
		c := newClient(t)
		var passed, limited, other atomic.Int64
		var wg sync.WaitGroup
		for w := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 60 { // 360 reads, spread over the three instances
					r := c.do("GET", fleet[(w+i)%3].url+"/api/auth/me", "", nil)
					switch r.status {
					case http.StatusUnauthorized:
						passed.Add(1)
					case http.StatusTooManyRequests:
						limited.Add(1)
					default:
						other.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		for _, in := range fleet {
			if strings.Contains(in.logs.String(), "Redis unreachable") {
				t.Fatalf("%s fell back to memory (Redis too slow on this machine?): %s", in.url, in.logs)
			}
		}
		// Each instance may admit a few reads on its own before it reports them (at most a
		// thirty-second of the 300 left: 9), so the fleet admits 300, and at most 3 x 9 more.
		if p := passed.Load(); p < 300 || p > 300+3*9 || p+limited.Load() != 360 || other.Load() != 0 {
			t.Fatalf("%d reads passed, %d limited, %d other; want 300 to 327 passed across the fleet, the rest limited", passed.Load(), limited.Load(), other.Load())
		}
		t.Logf("%d of 360 reads passed through three instances for a limit of 300", passed.Load())
	})

	c := newClient(t)
	t.Run("LogoutOnOneIsRefusedOnTheOthers", func(t *testing.T) {
		c := newClient(t)
		alice := c.onboard(fleet[1].url, "alice")
		for _, in := range fleet {
			c.ok("GET", in.url+"/api/auth/me", alice.tok, nil)
		}
		if r := c.do("POST", fleet[1].url+"/api/auth/logout", alice.tok, nil); r.status != http.StatusNoContent {
			t.Fatalf("logout: %d %s", r.status, r.raw)
		}
		for _, in := range []*instance{fleet[0], fleet[2]} {
			// The others learn of it by NOTIFY, within milliseconds.
			deadline := time.Now().Add(3 * time.Second)
			var r reply
			for {
				r = c.do("GET", in.url+"/api/auth/me", alice.tok, nil)
				if r.status == http.StatusUnauthorized || time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if r.status != http.StatusUnauthorized || r.str("code") != "token_revoked" {
				t.Fatalf("%s after logout elsewhere: %d %s", in.url, r.status, r.raw)
			}
		}
	})

	t.Run("OneHoldingSpentThroughThreeInstancesCommitsOnce", func(t *testing.T) {
		alice, bob := c.onboard(fleet[0].url, "alice"), c.onboard(fleet[0].url, "bob")
		c.tap(fleet[0].url, alice, "100") // one holding of 100
		hashes := make([]string, 3)
		for i, in := range fleet {
			hashes[i] = c.prepare(in.url, "/api/wallet/cc-transfer", alice, map[string]string{"receiver": bob.ID, "amount": "60"})
		}
		replies := make([]reply, 3)
		var wg sync.WaitGroup
		for i, in := range fleet {
			wg.Add(1)
			go func() {
				defer wg.Done()
				replies[i] = c.do("POST", in.url+"/api/wallet/cc-transfer/execute", alice.tok, map[string]string{"preparedTransactionHash": hashes[i], "signature": alice.SignHash(c.t, hashes[i])})
			}()
		}
		wg.Wait()
		committed := 0
		for _, r := range replies {
			switch {
			case r.status == 200:
				committed++
			case r.status == http.StatusConflict && r.str("code") == "stale":
			default:
				t.Fatalf("execute: %d %s", r.status, r.raw)
			}
		}
		if committed != 1 {
			t.Fatalf("%d of three transfers spending one holding committed, want 1", committed)
		}
		if a, b := ccBalance(c, fleet[2].url, alice), ccBalance(c, fleet[1].url, bob); a != "40" || b != "60" {
			t.Fatalf("alice %s, bob %s; want 40 and 60", a, b)
		}
	})

	t.Run("SIGKILLDuringTransfersLosesNoAcknowledgedOne", func(t *testing.T) {
		const parties = 6
		ps := make([]*party, parties)
		for i := range ps {
			ps[i] = c.onboard(fleet[i%3].url, fmt.Sprintf("p%d", i))
			c.tap(fleet[0].url, ps[i], "1000")
		}
		var (
			ackMu     sync.Mutex
			acked     []string
			afterKill atomic.Int64
			killed    atomic.Bool
			stop      atomic.Bool
		)
		alive := func(i int) bool { return !(killed.Load() && i == 2) }
		var wg sync.WaitGroup
		for w := range parties {
			wg.Add(1)
			go func() {
				defer wg.Done()
				me, to := ps[w], ps[(w+1)%parties]
				for n := 0; !stop.Load(); n++ {
					i := (w + n) % 3
					if !alive(i) {
						i = n % 2
					}
					base := fleet[i].url
					r, err := c.try("POST", base+"/api/wallet/cc-transfer/prepare", me.tok, map[string]string{"receiver": to.ID, "amount": "0.5"})
					if err != nil || r.status != 200 {
						if err == nil && !killed.Load() {
							t.Errorf("prepare on %s: %d %s", base, r.status, r.raw)
						}
						continue
					}
					h := r.str("preparedTransactionHash")
					r, err = c.try("POST", base+"/api/wallet/cc-transfer/execute", me.tok, map[string]string{"preparedTransactionHash": h, "signature": me.SignHash(c.t, h)})
					if err != nil {
						continue // no answer: not acknowledged
					}
					if r.status != 200 {
						if r.status != http.StatusConflict { // a stale pick under load is a refusal, not a loss
							t.Errorf("execute on %s: %d %s", base, r.status, r.raw)
						}
						continue
					}
					ackMu.Lock()
					acked = append(acked, r.str("updateId"))
					ackMu.Unlock()
					if killed.Load() {
						afterKill.Add(1)
					}
				}
			}()
		}
		time.Sleep(1500 * time.Millisecond)
		fleet[2].cmd.Process.Signal(syscall.SIGKILL)
		<-fleet[2].done
		killed.Store(true)
		time.Sleep(1500 * time.Millisecond)
		stop.Store(true)
		wg.Wait()

		if afterKill.Load() == 0 {
			t.Fatal("no transfer was acknowledged after the kill: the survivors stopped serving")
		}
		for _, in := range fleet[:2] {
			c.ok("GET", in.url+"/readyz", "", nil)
		}
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var found int
		if err := db.QueryRow("SELECT count(*) FROM updates WHERE kind = 'wallet.cc-transfer' AND update_id = ANY($1)", acked).Scan(&found); err != nil {
			t.Fatal(err)
		}
		if found != len(acked) {
			t.Fatalf("%d of %d acknowledged transfers are in the store", found, len(acked))
		}
		// Conservation: the CC held is exactly what was tapped (100 + 6 x 1000), whatever
		// committed unacknowledged when the instance died.
		var held, tapped string
		if err := db.QueryRow("SELECT COALESCE(sum(amount), 0)::text FROM holdings WHERE instrument = 'CC' AND consumed_update IS NULL").Scan(&held); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(`SELECT count(*)::text FROM updates WHERE kind = 'wallet.tap'`).Scan(&tapped); err != nil {
			t.Fatal(err)
		}
		if strings.TrimRight(strings.TrimRight(held, "0"), ".") != "6100" || tapped != "7" {
			t.Fatalf("CC held %s after %s taps, want 6100 (100 + 6 x 1000)", held, tapped)
		}
		t.Logf("%d transfers acknowledged, %d after the SIGKILL, all durable; CC conserved", len(acked), afterKill.Load())
	})
}

// TestFleet_RedisStoppedServesOnTheFallbackAndComesBack runs marketd on a Redis the test
// starts itself, stops it, and starts it again.
func TestFleet_RedisStoppedServesOnTheFallbackAndComesBack(t *testing.T) {
	rds := storetest.StartRedis(t)
	in := startInstance(t, "MARKETD_DB=sqlite://"+filepath.Join(t.TempDir(), "m.db"), "MARKETD_REDIS="+rds.URL(), "MARKETD_RATE_READ=5")
	c := newClient(t)
	ready := func() map[string]any {
		t.Helper()
		lim, _ := c.ok("GET", in.url+"/readyz", "", nil).body["limiter"].(map[string]any)
		return lim
	}
	gauge := func() string {
		t.Helper()
		r := c.ok("GET", in.url+"/metrics", "", nil)
		for _, line := range strings.Split(string(r.raw), "\n") {
			if v, ok := strings.CutPrefix(line, "marketd_ratelimit_fallback "); ok {
				return v
			}
		}
		t.Fatal("no marketd_ratelimit_fallback in /metrics")
		return ""
	}
	reads := func(n int) (passed, limited int) {
		for range n {
			switch r := c.do("GET", in.url+"/api/auth/me", "", nil); r.status {
			case http.StatusUnauthorized:
				passed++
			case http.StatusTooManyRequests:
				limited++
			default:
				t.Fatalf("read: %d %s", r.status, r.raw)
			}
		}
		return
	}
	if lim := ready(); lim["backend"] != "redis" || lim["fallback"] != false || gauge() != "0" {
		t.Fatalf("readyz limiter %v", lim)
	}
	reads(3)

	rds.Stop()
	// Served on the fallback, which limits on its own: 5 then 429s.
	if p, l := reads(7); p != 5 || l != 2 {
		t.Fatalf("on the fallback: %d passed, %d limited; want 5 and 2", p, l)
	}
	if lim := ready(); lim["fallback"] != true || lim["error"] == "" || gauge() != "1" {
		t.Fatalf("readyz limiter while Redis is down: %v", lim)
	}
	if n := strings.Count(in.logs.String(), "Redis unreachable"); n != 1 {
		t.Fatalf("the fallback was logged %d times, want once:\n%s", n, in.logs)
	}

	rds.Start() // empty: windows start again in Redis
	deadline := time.Now().Add(10 * time.Second)
	for ready()["fallback"] != false {
		if time.Now().After(deadline) {
			t.Fatal("still on the fallback 10 s after Redis came back")
		}
		c.do("GET", in.url+"/api/auth/me", "", nil) // a request is what tries Redis again
		time.Sleep(100 * time.Millisecond)
	}
	if gauge() != "0" {
		t.Fatal("the fallback gauge stayed up")
	}
	// The limit is counted in Redis again: the window is there, and it holds.
	key := "marketd:ratelimit:read:" + c.ip
	out, err := exec.Command("redis-cli", "-p", fmt.Sprint(rds.Port), "HGET", key, "used").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("no window for %s in Redis after it came back: %q %v", key, out, err)
	}
	_, l := reads(6)
	if l == 0 {
		t.Fatal("no limit after Redis came back")
	}
}

// On SIGTERM readiness fails first, for MARKETD_DRAIN_DELAY, while requests are still served;
// then the process finishes and exits 0.
func TestServe_SIGTERMFailsReadinessFirstThenExitsCleanly(t *testing.T) {
	in := startInstance(t, "MARKETD_DB=sqlite://"+filepath.Join(t.TempDir(), "m.db"), "MARKETD_DRAIN_DELAY=1500ms")
	c := newClient(t)
	c.ok("GET", in.url+"/readyz", "", nil)
	if err := in.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Second)
	for {
		r := c.do("GET", in.url+"/readyz", "", nil)
		if r.status == http.StatusServiceUnavailable && r.str("code") == "unavailable" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz after SIGTERM: %d %s", r.status, r.raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := c.do("GET", in.url+"/api/auth/me", "", nil); r.status != http.StatusUnauthorized {
		t.Fatalf("a request while draining: %d %s", r.status, r.raw)
	}
	select {
	case <-in.done:
	case <-time.After(10 * time.Second):
		t.Fatal("marketd did not exit 10 s after SIGTERM")
	}
	if code := in.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM: %s", code, in.logs)
	}
}
