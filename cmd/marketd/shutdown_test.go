package main

import (
	"bufio"
	"fmt"
	"marketd/store/storetest"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// On SIGTERM, readiness fails first; a request already in flight (here one whose body is still
// arriving) finishes with its answer after the listener has closed, and a new connection is
// refused; the process then exits cleanly.
func TestServe_SIGTERMFinishesRequestsInFlightAndRefusesNewOnes(t *testing.T) {
	in := startInstance(t, "MARKETD_DB=sqlite://"+filepath.Join(t.TempDir(), "m.db"), "MARKETD_DRAIN_DELAY=500ms")
	c := newClient(t)
	addr := strings.TrimPrefix(in.url, "http://")

	// A request in flight: its headers and half its body are sent before the signal.
	body := fmt.Sprintf(`{"publicKey":%q,"hint":"inflight"}`, storetest.NewKey().PublicBase64())
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/parties/onboard/prepare HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body[:len(body)/2])
	time.Sleep(100 * time.Millisecond) // the server is reading the body

	if err := in.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(400 * time.Millisecond)
	for { // readiness fails first, while the listener still accepts
		r := c.do("GET", in.url+"/readyz", "", nil)
		if r.status == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz after SIGTERM: %d %s", r.status, r.raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// After the drain delay the listener closes: new connections are refused.
	deadline = time.Now().Add(3 * time.Second)
	for {
		nc, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			break
		}
		nc.Close()
		if time.Now().After(deadline) {
			t.Fatal("the listener still accepts 3 s after SIGTERM")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The request in flight finishes and is answered.
	if _, err := fmt.Fprint(conn, body[len(body)/2:]); err != nil {
		t.Fatalf("the rest of the in-flight body: %v", err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the in-flight request got no answer: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the in-flight request: %s", res.Status)
	}
	select {
	case <-in.done:
	case <-time.After(10 * time.Second):
		t.Fatal("marketd did not exit after its last request")
	}
	if code := in.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM: %s", code, in.logs)
	}
}
