package rest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"marketd/store"
	"marketd/store/storetest"
	"marketd/store/translog"
)

// witnessedLog is another service's store whose transparency log the witness follows.
type witnessedLog struct {
	t testing.TB
	s *store.Store
	p *storetest.Party
}

// grow commits n updates to the log.
func (l *witnessedLog) grow(n int) {
	for range n {
		l.p.Tap(l.t, l.s, store.CC, "1")
	}
}

// submission is an add-checkpoint body of the log now, from old.
func (l *witnessedLog) submission(old int64) []byte {
	ctx := context.Background()
	cp, err := l.s.LogCheckpoint(ctx)
	if err != nil {
		l.t.Fatal(err)
	}
	tree, err := l.s.LogTree(ctx)
	if err != nil {
		l.t.Fatal(err)
	}
	a := &translog.AddCheckpoint{OldSize: old, Checkpoint: cp}
	if old > 0 && old < tree.N {
		hr := translog.HashReader(tree, func(t tlog.Tile) ([]byte, error) { return l.s.LogTile(ctx, t) })
		if a.Proof, err = tlog.ProveTree(tree.N, old, hr); err != nil {
			l.t.Fatal(err)
		}
	}
	return a.Marshal()
}

// newWitnessPair is a log and a witness API following it, on backend b.
func newWitnessPair(t testing.TB, b storetest.Backend) (*witnessedLog, *testAPI) {
	clock := storetest.NewClock(storetest.Epoch)
	ls := b.Open(t, storetest.Config(clock))
	vkey, err := ls.LogVerifierKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wl, err := translog.NewWitnessedLog(vkey)
	if err != nil {
		t.Fatal(err)
	}
	api := newTestAPI(t, b, func(_ *store.Config, rc *Config) {
		rc.WitnessLogs = map[string]*translog.WitnessedLog{wl.Origin: wl}
	})
	return &witnessedLog{t: t, s: ls, p: storetest.Onboard(t, ls, "alice")}, api
}

// submit posts body to the witness: its status, Content-Type and body.
func submit(t *testing.T, api *testAPI, body []byte) (int, string, string) {
	resp, err := http.Post(api.http.URL+"/witness/add-checkpoint", "text/plain", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// The witness door cosigns a checkpoint of a log it follows that extends what it cosigned
// last, with a cosignature that verifies under the key /witness/key publishes; it answers
// 409 with the size it holds (text/x.tlog.size) for another old size, 404 for a log it does
// not follow, 403 for a checkpoint not signed by the log's key, 400 for a bad body, 422 for a
// proof that does not verify.
func TestWitness_CosignsWhatExtendsAndRefusesWithTheSpecificationsStatuses(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		lg, api := newWitnessPair(t, b)
		lg.grow(3)
		key := api.do("GET", "/witness/key", nil)
		if key.status != http.StatusOK {
			t.Fatalf("/witness/key: %d", key.status)
		}
		v, err := translog.NewCosignatureVerifier(strings.TrimSpace(string(key.body)))
		if err != nil {
			t.Fatal(err)
		}
		logKey, _ := lg.s.LogVerifierKey(context.Background())
		logV, _ := note.NewVerifier(logKey)
		cosigned := func(body []byte, sigs string) {
			t.Helper()
			_, cp, _ := bytes.Cut(body, []byte("\n\n"))
			if _, err := note.Open(append(append([]byte{}, cp...), sigs...), note.VerifierList(v, logV)); err != nil {
				t.Fatalf("the cosignature does not verify under /witness/key: %v\n%s", err, sigs)
			}
		}

		first := lg.submission(0)
		status, _, sigs := submit(t, api, first)
		if status != http.StatusOK {
			t.Fatalf("the first checkpoint: %d %s", status, sigs)
		}
		cosigned(first, sigs)
		held, _ := lg.s.LogTree(context.Background())

		lg.grow(2)
		if status, ctype, body := submit(t, api, lg.submission(1)); status != http.StatusConflict || ctype != "text/x.tlog.size" || body != fmt.Sprintf("%d\n", held.N) {
			t.Fatalf("an old size the witness does not hold: %d %s %q", status, ctype, body)
		}
		broken := lg.submission(held.N)
		broken[len(fmt.Sprintf("old %d\n", held.N))] ^= 1 // a proof line's first character
		if status, _, body := submit(t, api, broken); status != http.StatusUnprocessableEntity && status != http.StatusBadRequest {
			t.Fatalf("a broken proof: %d %s", status, body)
		}
		next := lg.submission(held.N)
		if status, _, sigs := submit(t, api, next); status != http.StatusOK {
			t.Fatalf("a checkpoint extending the last: %d %s", status, sigs)
		} else {
			cosigned(next, sigs)
		}

		stranger, _ := newWitnessPair(t, b) // another log, not followed
		stranger.grow(1)
		if status, _, _ := submit(t, api, stranger.submission(0)); status != http.StatusNotFound && status != http.StatusForbidden {
			t.Fatalf("a log the witness does not follow: %d", status)
		}
		skey, _, _ := note.GenerateKey(nil, logV.Name())
		forger, _ := note.NewSigner(skey)
		text, _, _ := strings.Cut(string(next[strings.Index(string(next), "\n\n")+2:]), "\n\n")
		forged, _ := note.Sign(&note.Note{Text: text + "\n"}, forger)
		if status, _, _ := submit(t, api, append([]byte("old 0\n\n"), forged...)); status != http.StatusForbidden {
			t.Fatalf("a checkpoint signed by another key: %d", status)
		}
		if status, _, _ := submit(t, api, []byte("old x\n\n")); status != http.StatusBadRequest {
			t.Fatalf("a malformed body: %d", status)
		}
		if status, _, _ := submit(t, api, bytes.Repeat([]byte("x"), translog.MaxAddCheckpointBody+1)); status != http.StatusRequestEntityTooLarge {
			t.Fatalf("an oversized body: %d", status)
		}
	})
}

// Submissions racing from one size: exactly one moves the witness and is cosigned; every
// other is answered 409 with the size it moved to, never a second cosignature from the old
// size (the compare-and-swap).
func TestWitness_RacingSubmissionsMoveItOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		lg, api := newWitnessPair(t, b)
		lg.grow(2)
		if status, _, body := submit(t, api, lg.submission(0)); status != http.StatusOK {
			t.Fatalf("%d %s", status, body)
		}
		held, _ := lg.s.LogTree(context.Background())
		// Eight checkpoints of growing sizes, each with a proof from the size held.
		var bodies [][]byte
		for range 8 {
			lg.grow(1)
			bodies = append(bodies, lg.submission(held.N))
		}
		statuses := make([]int, len(bodies))
		answers := make([]string, len(bodies))
		var wg sync.WaitGroup
		for i, body := range bodies {
			wg.Go(func() { statuses[i], _, answers[i] = submit(t, api, body) })
		}
		wg.Wait()
		won := -1
		for i, s := range statuses {
			switch s {
			case http.StatusOK:
				if won >= 0 {
					t.Fatalf("two submissions from size %d were cosigned: %d and %d", held.N, won, i)
				}
				won = i
			case http.StatusConflict:
			default:
				t.Fatalf("submission %d: %d %s", i, s, answers[i])
			}
		}
		if won < 0 {
			t.Fatalf("no submission was cosigned: %v", statuses)
		}
		want := fmt.Sprintf("%d\n", held.N+int64(won)+1)
		for i, s := range statuses {
			if s == http.StatusConflict && answers[i] != want {
				t.Errorf("submission %d: 409 naming %q, want %q", i, answers[i], want)
			}
		}
	})
}

// The log asks a witness to cosign: the witnessed checkpoint it then serves carries a
// cosignature that verifies under the witness's key, for a tree the log's key signed; it
// follows the log as it grows; a log whose record of the witness is behind resumes from the
// size the witness's 409 names; a witness that is down is reported, and the log's writes and
// its last witnessed checkpoint are untouched.
func TestWitnesses_TheLogCollectsCosignaturesAndServesThem(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		lg, witness := newWitnessPair(t, b)
		logAPI := serveAPI(t, lg.s, nil, Config{PublicURL: "http://localhost:8080", Dev: true, Logger: witness.srv.log})
		key := strings.TrimSpace(string(witness.do("GET", "/witness/key", nil).body))
		w, err := store.ParseWitness(key + "@" + witness.http.URL + "/witness")
		if err != nil {
			t.Fatal(err)
		}
		if r := logAPI.do("GET", "/log/witnessed-checkpoint", nil); r.status != http.StatusNotFound {
			t.Fatalf("before any cosignature: %d", r.status)
		}
		logKey, _ := lg.s.LogVerifierKey(ctx)
		logV, _ := note.NewVerifier(logKey)
		witnessed := func(want int64) {
			t.Helper()
			r := logAPI.do("GET", "/log/witnessed-checkpoint", nil)
			n, err := note.Open(r.body, note.VerifierList(logV, w.Verifier))
			if r.status != http.StatusOK || err != nil || len(n.Sigs) != 2 {
				t.Fatalf("the witnessed checkpoint: %d %v\n%s", r.status, err, r.body)
			}
			if tree, err := translog.ParseCheckpoint(n.Text, logV.Name()); err != nil || tree.N != want {
				t.Fatalf("the witnessed checkpoint's size: %v %v, want %d", tree, err, want)
			}
		}
		ask := func() store.WitnessReport {
			t.Helper()
			rs := lg.s.AskWitnesses(ctx, http.DefaultClient, []store.Witness{w})
			if len(rs) != 1 {
				t.Fatalf("reports: %v", rs)
			}
			return rs[0]
		}
		lg.grow(3)
		size := func() int64 { tr, _ := lg.s.LogTree(ctx); return tr.N }
		if r := ask(); r.Err != nil || r.Size != size() {
			t.Fatalf("the first round: %+v", r)
		}
		witnessed(size())
		lg.grow(4)
		if r := ask(); r.Err != nil || r.Size != size() {
			t.Fatalf("after the log grew: %+v", r)
		}
		witnessed(size())

		// Someone else moves the witness on (another instance of the log, say): the log's
		// next submission, from the size it recorded, hears 409 and resumes from there.
		recorded := size()
		lg.grow(2)
		if status, _, body := submit(t, witness, lg.submission(recorded)); status != http.StatusOK {
			t.Fatalf("moving the witness on: %d %s", status, body)
		}
		lg.grow(1)
		if r := ask(); r.Err != nil || r.Size != size() {
			t.Fatalf("resuming from the witness's 409: %+v", r)
		}
		witnessed(size())

		held := size()
		witness.http.Close() // down
		lg.grow(2)
		if r := ask(); r.Err == nil {
			t.Fatalf("a witness that is down: %+v", r)
		}
		witnessed(held)
	})
}
