package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Dev mode (the tap faucet, cookies over plain http) does not start behind an https public
// URL: a clear message and a non-zero exit, before anything listens or opens the store.
func TestServe_DevModeWithAnHTTPSPublicURLRefusesToStart(t *testing.T) {
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve")
	cmd.Env = append(os.Environ(), "MARKETD_DEV=1", "MARKETD_PUBLIC_URL=https://market.example", "MARKETD_DB=sqlite://:memory:",
		"MARKETD_ADDR=127.0.0.1:0", "MARKETD_METRICS_ADDR=")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("marketd started in dev mode behind an https URL:\n%s", out)
	}
	if err == nil || !strings.Contains(string(out), "MARKETD_DEV=1 with an https MARKETD_PUBLIC_URL") {
		t.Fatalf("exit %v, output %q: want a non-zero exit naming MARKETD_DEV and the https URL", err, out)
	}
}

// On PostgreSQL, dev mode starts but says, in the log, that the tap gives coins to anyone.
func TestServe_DevModeOnPostgreSQLLogsAWarning(t *testing.T) {
	in := startInstance(t, "MARKETD_DB="+postgresDSN(t))
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(in.logs.String(), "dev mode on PostgreSQL") {
		if time.Now().After(deadline) {
			t.Fatalf("no dev-mode warning in the log:\n%s", in.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(in.logs.String(), `"level":"WARN"`) {
		t.Errorf("the dev-mode line is not a warning:\n%s", in.logs)
	}
}

// /metrics on the API's address answers the machine's own scraper, and is an unknown path to a
// request a proxy relayed (X-Forwarded-For or Forwarded).
func TestServe_MetricsOnTheAPIsAddressAnswerOnlyUnproxiedLocalPeers(t *testing.T) {
	in := startInstance(t, "MARKETD_DB=sqlite://:memory:")
	for _, h := range []struct{ name, value string }{{"", ""}, {"X-Forwarded-For", "203.0.113.9"}, {"Forwarded", "for=203.0.113.9"}} {
		req, _ := http.NewRequest("GET", in.url+"/metrics", nil)
		if h.name != "" {
			req.Header.Set(h.name, h.value)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		want := http.StatusOK
		if h.name != "" {
			want = http.StatusNotFound
		}
		if res.StatusCode != want {
			t.Errorf("/metrics with %s %q: %d, want %d", h.name, h.value, res.StatusCode, want)
		}
	}
}
