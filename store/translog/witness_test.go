package translog

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// memLog is a log in memory: its entries' stored hashes and its signing key.
type memLog struct {
	t      *testing.T
	hashes []tlog.Hash
	n      int64
	signer note.Signer
	vkey   string
}

func newMemLog(t *testing.T, origin string) *memLog {
	skey, vkey, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	return &memLog{t: t, signer: signer, vkey: vkey}
}

func (l *memLog) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		out[i] = l.hashes[x]
	}
	return out, nil
}

// grow appends n entries, each naming what it is (prefix tells two forks apart).
func (l *memLog) grow(n int, prefix string) {
	for range n {
		hs, err := tlog.StoredHashes(l.n, fmt.Appendf(nil, "%s entry %d", prefix, l.n), l)
		if err != nil {
			l.t.Fatal(err)
		}
		l.hashes = append(l.hashes, hs...)
		l.n++
	}
}

func (l *memLog) tree() tlog.Tree {
	h, err := tlog.TreeHash(l.n, l)
	if err != nil {
		l.t.Fatal(err)
	}
	return tlog.Tree{N: l.n, Hash: h}
}

// checkpoint is the log's signed checkpoint now.
func (l *memLog) checkpoint() []byte {
	b, err := note.Sign(&note.Note{Text: string(FormatCheckpoint(l.signer.Name(), l.tree()))}, l.signer)
	if err != nil {
		l.t.Fatal(err)
	}
	return b
}

// request is an add-checkpoint of the log now, from old with the log's own proof.
func (l *memLog) request(old int64) *AddCheckpoint {
	var proof tlog.TreeProof
	if old > 0 && old < l.n {
		var err error
		if proof, err = tlog.ProveTree(l.n, old, l); err != nil {
			l.t.Fatal(err)
		}
	}
	return &AddCheckpoint{OldSize: old, Proof: proof, Checkpoint: l.checkpoint()}
}

func (l *memLog) witnessed() *WitnessedLog {
	w, err := NewWitnessedLog(l.vkey)
	if err != nil {
		l.t.Fatal(err)
	}
	return w
}

// roundTrip sends a through its body, as a witness receives it.
func roundTrip(t *testing.T, a *AddCheckpoint) *AddCheckpoint {
	got, err := ParseAddCheckpoint(a.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func statusOf(err error) (int, int64) {
	if we, ok := err.(*WitnessError); ok {
		return we.Status, we.Size
	}
	return 0, 0
}

// Each answer the specification names: 200 and the tree to record for a checkpoint that
// extends the last cosigned; 404 for an origin the witness does not follow; 403 when no
// signature of the log's key verifies; 400 for a malformed body or an old size past the
// checkpoint; 409, with the size held, for another old size or another root at the same size;
// 422 for a proof that does not verify, or any proof from 0.
func TestWitness_AnswersEachStatusTheSpecificationNames(t *testing.T) {
	lg := newMemLog(t, "example.com/log")
	lg.grow(10, "a")
	first := roundTrip(t, lg.request(0))
	tree, err := CheckAddCheckpoint(first, lg.witnessed(), tlog.Tree{})
	if err != nil || tree != lg.tree() {
		t.Fatalf("the first checkpoint: %v %v", tree, err)
	}
	last := tree
	lg.grow(7, "a")
	if next, err := CheckAddCheckpoint(roundTrip(t, lg.request(10)), lg.witnessed(), last); err != nil || next.N != 17 {
		t.Fatalf("a checkpoint extending the last: %v %v", next, err)
	}
	if again, err := CheckAddCheckpoint(roundTrip(t, lg.request(10)), lg.witnessed(), tlog.Tree{N: 17, Hash: lg.tree().Hash}); err == nil || again.N != 0 {
		t.Fatalf("an old size behind the witness's: %v", err)
	}

	other := newMemLog(t, "example.com/log") // another key of the same name
	other.grow(17, "a")
	proofFrom10 := lg.request(10)
	broken := lg.request(10)
	broken.Proof = append(tlog.TreeProof{}, broken.Proof...)
	broken.Proof[0][0] ^= 1
	for _, c := range []struct {
		name   string
		a      *AddCheckpoint
		log    *WitnessedLog
		last   tlog.Tree
		status int
		size   int64
	}{
		{"an origin the witness does not follow", proofFrom10, nil, last, http.StatusNotFound, 0},
		{"a checkpoint signed by another key", other.request(0), lg.witnessed(), tlog.Tree{}, http.StatusForbidden, 0},
		{"an old size past the checkpoint", &AddCheckpoint{OldSize: 18, Checkpoint: lg.checkpoint()}, lg.witnessed(), tlog.Tree{N: 18}, http.StatusBadRequest, 0},
		{"an old size the witness does not hold", lg.request(5), lg.witnessed(), last, http.StatusConflict, 10},
		{"the size held with another root", &AddCheckpoint{OldSize: 17, Checkpoint: lg.checkpoint()}, lg.witnessed(), tlog.Tree{N: 17, Hash: last.Hash}, http.StatusConflict, 17},
		{"a proof that does not verify", broken, lg.witnessed(), last, http.StatusUnprocessableEntity, 0},
		{"a proof from size 0", &AddCheckpoint{OldSize: 0, Proof: proofFrom10.Proof, Checkpoint: lg.checkpoint()}, lg.witnessed(), tlog.Tree{}, http.StatusUnprocessableEntity, 0},
	} {
		_, err := CheckAddCheckpoint(roundTrip(t, c.a), c.log, c.last)
		if status, size := statusOf(err); status != c.status || size != c.size {
			t.Errorf("%s: %v (status %d, size %d), want %d and size %d", c.name, err, status, size, c.status, c.size)
		}
	}
	for _, body := range []string{
		"",
		"old 01\n\n" + string(lg.checkpoint()),
		"old -1\n\n" + string(lg.checkpoint()),
		"old 3\nnot base64!\n\n" + string(lg.checkpoint()),
		"old 3\n" + strings.Repeat(base64.StdEncoding.EncodeToString(make([]byte, 32))+"\n", 64) + "\n" + string(lg.checkpoint()),
		"old 3\n" + base64.StdEncoding.EncodeToString(make([]byte, 32)),
	} {
		if _, err := ParseAddCheckpoint([]byte(body)); err == nil {
			t.Errorf("the body %q was read", truncate(body, 40))
		} else if status, _ := statusOf(err); status != http.StatusBadRequest {
			t.Errorf("the body %q: status %d, want 400", truncate(body, 40), status)
		}
	}
}

// A fork is refused: after the witness cosigned size 12 of the log, the operator rolls the
// log back to 8 and grows another history from there; its checkpoint of size 14, with a proof
// from 12 computed over the forked hashes, does not extend what the witness holds.
func TestWitness_RefusesAFork(t *testing.T) {
	lg := newMemLog(t, "example.com/log")
	lg.grow(12, "a")
	held, err := CheckAddCheckpoint(roundTrip(t, lg.request(0)), lg.witnessed(), tlog.Tree{})
	if err != nil {
		t.Fatal(err)
	}
	fork := &memLog{t: t, signer: lg.signer, vkey: lg.vkey}
	fork.hashes = append(fork.hashes, lg.hashes[:tlog.StoredHashIndex(0, 8)]...)
	fork.n = 8
	fork.grow(6, "b")
	_, err = CheckAddCheckpoint(roundTrip(t, fork.request(12)), lg.witnessed(), held)
	if status, _ := statusOf(err); status != http.StatusUnprocessableEntity {
		t.Fatalf("the fork's checkpoint: %v, want 422", err)
	}
	// Rolled back to 12 entries of another history: same size, another root.
	fork2 := &memLog{t: t, signer: lg.signer, vkey: lg.vkey}
	fork2.hashes = append(fork2.hashes, lg.hashes[:tlog.StoredHashIndex(0, 8)]...)
	fork2.n = 8
	fork2.grow(4, "c")
	_, err = CheckAddCheckpoint(roundTrip(t, fork2.request(12)), lg.witnessed(), held)
	if status, size := statusOf(err); status != http.StatusConflict || size != 12 {
		t.Fatalf("the fork's checkpoint of the size held: %v, want 409 with 12", err)
	}
}

// Cosignatures made by the witness (through torchwood's signer) verify with our own
// cosignature/v1 verifier read from its verifier key, and with the specification's message
// rebuilt by hand; a cosignature made by torchwood for another witness verifies with ours too,
// and one over another checkpoint does not.
func TestCosigner_CosignaturesVerifyAcrossImplementations(t *testing.T) {
	lg := newMemLog(t, "example.com/log")
	lg.grow(3, "a")
	cp := lg.checkpoint()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	c, err := NewCosigner("witness.example/w1", priv)
	if err != nil {
		t.Fatal(err)
	}
	sigs, err := c.Cosign(cp)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(sigs, []byte("— witness.example/w1 ")) || !bytes.HasSuffix(sigs, []byte("\n")) || bytes.Count(sigs, []byte("\n")) != 1 {
		t.Fatalf("the answer %q is not one signature line", sigs)
	}
	ours, err := NewCosignatureVerifier(c.VerifierKey())
	if err != nil {
		t.Fatal(err)
	}
	logV, _ := note.NewVerifier(lg.vkey)
	n, err := note.Open(append(append([]byte{}, cp...), sigs...), note.VerifierList(ours, logV))
	if err != nil || len(n.Sigs) != 2 {
		t.Fatalf("the cosigned checkpoint with our verifier: %v", err)
	}
	// By hand, from the specification: 4 bytes of key hash, 8 of timestamp, 64 of Ed25519
	// over "cosignature/v1\ntime <t>\n" and the checkpoint's text.
	line := strings.TrimSuffix(strings.TrimPrefix(string(sigs), "— witness.example/w1 "), "\n")
	raw, _ := base64.StdEncoding.DecodeString(line)
	text, _, _ := bytes.Cut(cp, []byte("\n\n"))
	ts := binary.BigEndian.Uint64(raw[4:12])
	msg := fmt.Appendf(nil, "cosignature/v1\ntime %d\n%s\n", ts, text)
	if len(raw) != 76 || binary.BigEndian.Uint32(raw[:4]) != ours.KeyHash() || !ed25519.Verify(priv.Public().(ed25519.PublicKey), msg, raw[12:]) {
		t.Fatalf("the cosignature does not verify as the specification builds it")
	}

	// The reverse: torchwood cosigns for another witness; our verifier checks it.
	_, priv2, _ := ed25519.GenerateKey(rand.Reader)
	tw, err := torchwood.NewCosignatureSigner("witness.example/w2", priv2)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := NewCosignatureVerifier(tw.Verifier().String())
	if err != nil {
		t.Fatal(err)
	}
	signed, err := note.Sign(&note.Note{Text: string(text) + "\n"}, tw)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open(signed, note.VerifierList(theirs)); err != nil {
		t.Fatalf("torchwood's cosignature with our verifier: %v", err)
	}
	lg.grow(1, "a")
	_, sigs2, _ := bytes.Cut(signed, []byte("\n\n"))
	if _, err := note.Open(append(lg.checkpoint(), sigs2...), note.VerifierList(theirs, logV)); err == nil {
		t.Fatalf("a cosignature of another checkpoint verified")
	}
	if _, err := NewCosignatureVerifier(lg.vkey); err == nil {
		t.Fatalf("a log's Ed25519 key read as a witness's cosignature key")
	}
}
