package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

func TestProgressLine_RedrawsOnATerminalAtMostEveryFifthOfASecondAndAlwaysTheLast(t *testing.T) {
	var b bytes.Buffer
	now := time.Unix(1_800_000_000, 0)
	p := &progressLine{w: &b, terminal: true, format: "seeded %s / %s NFTs", now: func() time.Time { return now }, start: now}
	p.report(500, 1_000_000) // the first is drawn
	now = now.Add(100 * time.Millisecond)
	p.report(1000, 1_000_000) // too soon
	now = now.Add(42 * time.Second)
	p.report(250_000, 1_000_000)
	p.report(1_000_000, 1_000_000) // the last, however soon
	p.end()
	want := "\rseeded 500 / 1,000,000 NFTs, 0 s\x1b[K" +
		"\rseeded 250,000 / 1,000,000 NFTs, 42 s\x1b[K" +
		"\rseeded 1,000,000 / 1,000,000 NFTs, 42 s\x1b[K\n"
	if b.String() != want {
		t.Errorf("drew %q, want %q", b.String(), want)
	}
}

func TestProgressLine_WritesNothingWhereStderrIsNoTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := newProgress(f, "seeded %s / %s NFTs")
	p.report(1, 2)
	p.report(2, 2)
	p.end()
	if st, _ := f.Stat(); st.Size() != 0 {
		t.Errorf("wrote %d bytes to a file", st.Size())
	}
}

func TestThousands_PutsACommaEveryThreeDigits(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 250_000: "250,000", 1_000_000: "1,000,000", -12_345: "-12,345"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// seedRun runs marketd seed --demo on a fresh SQLite store, with stderr as given; it returns
// standard output.
func seedRun(t *testing.T, stderr *os.File) string {
	t.Helper()
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "seed", "--demo", "--nfts", "1200", "--seed", "7")
	cmd.Env = append(os.Environ(), "MARKETD_DB=sqlite://"+filepath.Join(t.TempDir(), "m.db"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("marketd seed: %v; stdout %q", err, out.String())
	}
	return out.String()
}

// oneJSONObject fails unless out is exactly one JSON object on one line.
func oneJSONObject(t *testing.T, out string) {
	t.Helper()
	var v map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&v); err != nil || v["seeded"] == nil {
		t.Fatalf("stdout %q: %v", out, err)
	}
	if rest, _ := io.ReadAll(dec.Buffered()); strings.TrimSpace(string(rest)) != "" || strings.Count(out, "\n") != 1 {
		t.Errorf("stdout has more than one JSON object: %q", out)
	}
}

func TestSeed_ShowsProgressOnATerminalAndOnlyItsJSONElsewhere(t *testing.T) {
	t.Run("terminal", func(t *testing.T) {
		ptm, tty, err := pty.Open()
		if err != nil {
			t.Skipf("no pseudo-terminal here: %v", err)
		}
		defer ptm.Close()
		drawn := make(chan string)
		go func() {
			b, _ := io.ReadAll(ptm) // ends in EIO once every copy of tty is closed
			drawn <- string(b)
		}()
		out := seedRun(t, tty)
		tty.Close()
		screen := <-drawn
		for _, w := range []string{"applied ", " migrations, ", "seeded 1,200 / 1,200 NFTs, ", "made 1,200 / 1,200 offers, "} {
			if !strings.Contains(screen, w) {
				t.Errorf("the terminal shows no %q: %q", w, screen)
			}
		}
		if strings.Contains(screen, "{") {
			t.Errorf("the JSON went to the terminal's stderr: %q", screen)
		}
		oneJSONObject(t, out)
	})
	t.Run("pipe", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		got := make(chan string)
		go func() {
			b, _ := io.ReadAll(r)
			got <- string(b)
		}()
		out := seedRun(t, w)
		w.Close()
		if stderr := <-got; stderr != "" {
			t.Errorf("stderr, a pipe, got %q", stderr)
		}
		oneJSONObject(t, out)
	})
}
