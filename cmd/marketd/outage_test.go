package main

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"marketd/store/storetest"
)

// A PostgreSQL of the test's own is stopped for four seconds under a load of transfers and
// reads through a marketd process, then started again: every answer meanwhile is a 503 with
// Retry-After and the request id (never a 500, never a dropped connection), what needs no
// database (JWKS, /healthz, NFT pages from the index) keeps answering, /readyz names the
// store, the service recovers by itself within five seconds of the database coming back, and
// /metrics counts the outage.
func TestOutage_PostgresStoppedUnderLoadIs503ThenRecoversByItself(t *testing.T) {
	pg := storetest.StartPostgres(t)
	in := startInstance(t, "MARKETD_DB="+pg.DSN(), "MARKETD_RATE_READ=0")
	c := newClient(t)
	traders := make([]*party, 4)
	for i := range traders {
		traders[i] = c.onboard(in.url, fmt.Sprintf("outage%d", i))
		c.tap(in.url, traders[i], "1000")
	}
	col := createCrashCollection(t, pg.DSN(), traders[0].ID)
	nftPages := []string{
		"/api/nft/collection/" + col + "/nfts?limit=20",
		"/api/nft/collection/" + col + "/nfts?trait=Hat:Crown&limit=10",
	}
	for _, p := range append(nftPages, "/.well-known/jwks.json") {
		c.ok("GET", in.url+p, "", nil) // the collection's identity and the keys are kept after one read
	}

	// Every answer is tallied; one that is neither a success nor a well-formed 503 fails the test.
	var (
		mu       sync.Mutex
		statuses = map[int]int{}
		codes    = map[string]int{}
		lastOK   atomic.Int64 // when a request that needs the database last succeeded
		down     atomic.Bool
	)
	check := func(what string, r reply, err error) bool {
		if err != nil {
			t.Errorf("%s: no answer: %v", what, err)
			return false
		}
		mu.Lock()
		statuses[r.status]++
		mu.Unlock()
		if r.status/100 == 2 {
			return true
		}
		if r.status != http.StatusServiceUnavailable {
			t.Errorf("%s: %d %s, want 2xx or 503", what, r.status, r.raw)
			return false
		}
		id := r.header.Get("X-Request-Id")
		if r.header.Get("Retry-After") != "1" || id == "" || r.str("requestId") != id || r.header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: a 503 without Retry-After 1, the request id or the problem shape: %v %s", what, r.header, r.raw)
		}
		if code := r.str("code"); code != "unavailable" && code != "outcome_unknown" {
			t.Errorf("%s: 503 with code %q", what, code)
		}
		mu.Lock()
		codes[r.str("code")]++
		mu.Unlock()
		return false
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for i, p := range traders {
		to := traders[(i+1)%len(traders)]
		wg.Go(func() {
			for !stop.Load() {
				r, err := c.try("POST", in.url+"/api/wallet/cc-transfer/prepare", p.tok, map[string]string{"receiver": to.ID, "amount": "0.01"})
				if check("transfer prepare", r, err) {
					h := r.str("preparedTransactionHash")
					r, err = c.try("POST", in.url+"/api/wallet/cc-transfer/execute", p.tok, map[string]string{"preparedTransactionHash": h, "signature": p.SignHash(c.t, h)})
					if check("transfer execute", r, err) {
						lastOK.Store(time.Now().UnixNano())
					}
				}
				r, err = c.try("GET", in.url+"/api/wallet/balance/"+p.ID, p.tok, nil)
				if check("balance", r, err) {
					lastOK.Store(time.Now().UnixNano())
				}
				if down.Load() {
					time.Sleep(5 * time.Millisecond) // 503s come back at once: keep the count readable
				}
			}
		})
	}
	time.Sleep(time.Second)

	pg.Stop()
	down.Store(true)
	stopped := time.Now()
	t.Logf("PostgreSQL stopped")
	var servedFromMemory int
	for time.Since(stopped) < 4*time.Second {
		for _, p := range append(nftPages, "/.well-known/jwks.json", "/healthz") {
			r, err := c.try("GET", in.url+p, "", nil)
			if err != nil || r.status != http.StatusOK {
				t.Fatalf("GET %s while the database is down: %d %s %v", p, r.status, r.raw, err)
			}
			servedFromMemory++
		}
		r, err := c.try("GET", in.url+"/readyz", "", nil)
		if check("readyz", r, err) || !strings.Contains(r.str("detail"), "store") {
			t.Fatalf("/readyz while the database is down: %d %s, want 503 naming the store", r.status, r.raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if last := time.Unix(0, lastOK.Load()); last.After(stopped.Add(500 * time.Millisecond)) {
		t.Errorf("a request that needs the database succeeded %v after PostgreSQL stopped", last.Sub(stopped))
	}

	pg.Start()
	restarted := time.Now()
	down.Store(false)
	var recovered time.Duration
	for {
		r, err := c.try("GET", in.url+"/readyz", "", nil)
		if err == nil && r.status == http.StatusOK && time.Unix(0, lastOK.Load()).After(restarted) {
			recovered = time.Since(restarted)
			break
		}
		if time.Since(restarted) > 5*time.Second {
			t.Fatalf("5 s after PostgreSQL came back: /readyz %d %s, last success %v after the restart",
				r.status, r.raw, time.Unix(0, lastOK.Load()).Sub(restarted))
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	stop.Store(true)
	wg.Wait()

	metrics := string(c.ok("GET", in.url+"/metrics", "", nil).raw)
	var counted int
	for _, code := range []string{"unavailable", "outcome_unknown"} {
		var n int
		for _, line := range strings.Split(metrics, "\n") {
			if v, ok := strings.CutPrefix(line, `marketd_database_faults_total{code="`+code+`"} `); ok {
				fmt.Sscan(v, &n)
			}
		}
		if n != codes[code] {
			t.Errorf("marketd_database_faults_total{code=%q} is %d; the clients got %d such 503s", code, n, codes[code])
		}
		counted += n
	}
	if statuses[http.StatusServiceUnavailable] == 0 || statuses[http.StatusInternalServerError] != 0 {
		t.Errorf("answers by status %v: want 503s and no 500", statuses)
	}
	t.Logf("answers by status %v, 503 codes %v, %d reads served from memory while down; recovered %v after PostgreSQL came back; metric counted %d",
		statuses, codes, servedFromMemory, recovered.Round(time.Millisecond), counted)
}
