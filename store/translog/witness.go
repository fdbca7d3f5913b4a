package translog

// A witness cosigns a log's checkpoint only when it extends the last one the witness cosigned
// for that log (c2sp.org/tlog-witness, with c2sp.org/tlog-cosignature's cosignature/v1), so
// two forks of one log cannot both collect its cosignature. This file is the protocol: the
// add-checkpoint request, the checks a witness makes of it, in the order the specification
// names them, and the cosignature it answers with. Where the witness keeps what it cosigned is
// the caller's (store.Store's witness state).

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// MaxProofLines is the most consistency-proof lines an add-checkpoint request may carry.
const MaxProofLines = 63

// MaxAddCheckpointBody bounds an add-checkpoint body: the old size, 63 proof lines and a
// checkpoint with a few signatures fit many times over.
const MaxAddCheckpointBody = 16 << 10

// AddCheckpoint is an add-checkpoint request: the size of the checkpoint the submitter
// believes the witness last cosigned, a consistency proof from it to the checkpoint, and the
// checkpoint, a signed note.
type AddCheckpoint struct {
	OldSize    int64
	Proof      tlog.TreeProof
	Checkpoint []byte
}

// Marshal is the request's body.
func (a *AddCheckpoint) Marshal() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "old %d\n", a.OldSize)
	for _, h := range a.Proof {
		b.WriteString(base64.StdEncoding.EncodeToString(h[:]))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.Write(a.Checkpoint)
	return b.Bytes()
}

// WitnessError is a witness's refusal with the HTTP status the specification gives it; Size
// is the size the witness holds, for a 409.
type WitnessError struct {
	Status int
	Size   int64
	Reason string
}

func (e *WitnessError) Error() string { return e.Reason }

func refuse(status int, format string, args ...any) *WitnessError {
	return &WitnessError{Status: status, Reason: fmt.Sprintf(format, args...)}
}

// ParseAddCheckpoint reads an add-checkpoint body; a malformed one is a 400.
func ParseAddCheckpoint(body []byte) (*AddCheckpoint, error) {
	line, rest, ok := bytes.Cut(body, []byte("\n"))
	size, found := strings.CutPrefix(string(line), "old ")
	if !ok || !found {
		return nil, refuse(http.StatusBadRequest, "the body does not begin with an old size line")
	}
	old, err := strconv.ParseInt(size, 10, 64)
	if err != nil || old < 0 || strconv.FormatInt(old, 10) != size {
		return nil, refuse(http.StatusBadRequest, "the old size %q is not a decimal size", truncate(size, 24))
	}
	a := &AddCheckpoint{OldSize: old}
	for {
		line, rest, ok = bytes.Cut(rest, []byte("\n"))
		if !ok {
			return nil, refuse(http.StatusBadRequest, "the body has no empty line before the checkpoint")
		}
		if len(line) == 0 {
			break
		}
		if len(a.Proof) == MaxProofLines {
			return nil, refuse(http.StatusBadRequest, "more than %d consistency proof lines", MaxProofLines)
		}
		h, err := base64.StdEncoding.DecodeString(string(line))
		if err != nil || len(h) != tlog.HashSize {
			return nil, refuse(http.StatusBadRequest, "proof line %d is not a base64 hash", len(a.Proof)+1)
		}
		a.Proof = append(a.Proof, tlog.Hash(h))
	}
	a.Checkpoint = rest
	return a, nil
}

// WitnessedLog is a log a witness follows: its origin and the keys its checkpoints are
// signed with.
type WitnessedLog struct {
	Origin    string
	Verifiers []note.Verifier
}

// NewWitnessedLog reads a log's note verifier keys ("<origin>+<hash>+<key>"); each must name
// the same origin.
func NewWitnessedLog(vkeys ...string) (*WitnessedLog, error) {
	if len(vkeys) == 0 {
		return nil, errors.New("a witnessed log needs a verifier key")
	}
	l := &WitnessedLog{}
	for _, k := range vkeys {
		v, err := note.NewVerifier(k)
		if err != nil {
			return nil, fmt.Errorf("log verifier key %q: %w", truncate(k, 60), err)
		}
		if l.Origin != "" && v.Name() != l.Origin {
			return nil, fmt.Errorf("log verifier keys name two origins, %s and %s", l.Origin, v.Name())
		}
		l.Origin = v.Name()
		l.Verifiers = append(l.Verifiers, v)
	}
	return l, nil
}

// CheckpointOrigin is the first line of a signed checkpoint: the origin it claims, before any
// signature is checked.
func CheckpointOrigin(checkpoint []byte) string {
	origin, _, _ := strings.Cut(string(checkpoint), "\n")
	return origin
}

// CheckAddCheckpoint makes a witness's checks of a, in the specification's order, against
// the log (nil when the witness does not follow the checkpoint's origin: 404) and the tree
// it last cosigned for it (size 0 when it never did). It returns the checkpoint's tree,
// which the witness then records in place of last, if last is still what it holds.
func CheckAddCheckpoint(a *AddCheckpoint, log *WitnessedLog, last tlog.Tree) (tlog.Tree, error) {
	origin := CheckpointOrigin(a.Checkpoint)
	if log == nil {
		return tlog.Tree{}, refuse(http.StatusNotFound, "this witness follows no log %q", truncate(origin, 80))
	}
	n, err := note.Open(a.Checkpoint, note.VerifierList(log.Verifiers...))
	if err != nil {
		return tlog.Tree{}, refuse(http.StatusForbidden, "no signature of the log's key verifies: %v", err)
	}
	tree, err := ParseCheckpoint(n.Text, log.Origin)
	if err != nil {
		return tlog.Tree{}, refuse(http.StatusBadRequest, "%v", err)
	}
	if a.OldSize > tree.N {
		return tlog.Tree{}, refuse(http.StatusBadRequest, "the old size %d is past the checkpoint's %d", a.OldSize, tree.N)
	}
	if a.OldSize != last.N {
		return tlog.Tree{}, &WitnessError{Status: http.StatusConflict, Size: last.N, Reason: fmt.Sprintf("this witness last cosigned size %d, not %d", last.N, a.OldSize)}
	}
	switch {
	case a.OldSize == tree.N:
		if tree.Hash != last.Hash {
			return tlog.Tree{}, &WitnessError{Status: http.StatusConflict, Size: last.N, Reason: fmt.Sprintf("size %d was cosigned with another root hash", tree.N)}
		}
		if len(a.Proof) != 0 {
			return tlog.Tree{}, refuse(http.StatusUnprocessableEntity, "a proof between two trees of one size must be empty")
		}
	case a.OldSize == 0:
		if len(a.Proof) != 0 {
			return tlog.Tree{}, refuse(http.StatusUnprocessableEntity, "a proof from size 0 must be empty")
		}
	default:
		if err := tlog.CheckTree(a.Proof, tree.N, tree.Hash, last.N, last.Hash); err != nil {
			return tlog.Tree{}, refuse(http.StatusUnprocessableEntity, "the consistency proof from %d to %d does not verify", last.N, tree.N)
		}
	}
	if tree.N == 0 && tree.Hash != emptyTree {
		return tlog.Tree{}, refuse(http.StatusUnprocessableEntity, "an empty tree's root must be the hash of nothing")
	}
	return tree, nil
}

// emptyTree is the root hash of a tree of no entries, RFC 6962's hash of the empty string.
var emptyTree = tlog.Hash(sha256.Sum256(nil))

// Cosigner makes a witness's cosignatures (cosignature/v1, Ed25519) under its name.
type Cosigner struct{ signer *torchwood.CosignatureSigner }

// NewCosigner is the cosigner of name with key.
func NewCosigner(name string, key ed25519.PrivateKey) (*Cosigner, error) {
	s, err := torchwood.NewCosignatureSigner(name, key)
	if err != nil {
		return nil, fmt.Errorf("witness key %q: %w", name, err)
	}
	return &Cosigner{signer: s}, nil
}

// VerifierKey is the cosigner's verifier key, "<name>+<hash>+<key>", which a log and a
// client configure to check its cosignatures.
func (c *Cosigner) VerifierKey() string { return c.signer.Verifier().String() }

// Cosign is the witness's answer to a checkpoint it accepted: its cosignature lines, each
// "— <name> <base64>\n".
func (c *Cosigner) Cosign(checkpoint []byte) ([]byte, error) {
	text, _, ok := bytes.Cut(checkpoint, []byte("\n\n"))
	if !ok {
		return nil, errors.New("witness: a checkpoint without signatures")
	}
	signed, err := note.Sign(&note.Note{Text: string(text) + "\n"}, c.signer)
	if err != nil {
		return nil, err
	}
	_, sigs, _ := bytes.Cut(signed, []byte("\n\n"))
	return sigs, nil
}

// NewCosignatureVerifier reads a witness's verifier key (VerifierKey's format:
// "<name>+<hash>+<base64 of 0x04 and the Ed25519 public key>") into a note verifier of its
// cosignatures: a signature of 8 bytes of timestamp, then Ed25519 over "cosignature/v1",
// "time <timestamp>" and the checkpoint, each line ending in a newline.
func NewCosignatureVerifier(vkey string) (note.Verifier, error) {
	name, rest, _ := strings.Cut(vkey, "+")
	hash, b64, _ := strings.Cut(rest, "+")
	h, err1 := strconv.ParseUint(hash, 16, 32)
	key, err2 := base64.StdEncoding.DecodeString(b64)
	if name == "" || len(hash) != 8 || err1 != nil || err2 != nil || len(key) != 1+ed25519.PublicKeySize || key[0] != algCosignatureV1 {
		return nil, fmt.Errorf("witness key %q: not a cosignature/v1 verifier key", truncate(vkey, 60))
	}
	if keyHash(name, key) != uint32(h) {
		return nil, fmt.Errorf("witness key %q: its hash is not its name's and key's", truncate(vkey, 60))
	}
	return &cosignatureVerifier{name: name, hash: uint32(h), key: ed25519.PublicKey(key[1:])}, nil
}

// algCosignatureV1 is the signature type byte of cosignature/v1 keys.
const algCosignatureV1 = 0x04

// keyHash is a note key's hash: the first 4 bytes of SHA-256 of its name, a newline, its
// type byte and key.
func keyHash(name string, typedKey []byte) uint32 {
	h := sha256.New()
	h.Write([]byte(name + "\n"))
	h.Write(typedKey)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// cosignatureVerifier checks cosignature/v1 signatures of one witness key.
type cosignatureVerifier struct {
	name string
	hash uint32
	key  ed25519.PublicKey
}

func (v *cosignatureVerifier) Name() string    { return v.name }
func (v *cosignatureVerifier) KeyHash() uint32 { return v.hash }

func (v *cosignatureVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	t := binary.BigEndian.Uint64(sig)
	signed := fmt.Appendf(nil, "cosignature/v1\ntime %d\n%s", t, msg)
	return ed25519.Verify(v.key, signed, sig[8:])
}

// CosignedAt is when a cosignature/v1 signature says it was made, in Unix seconds.
func CosignedAt(sig note.Signature) (int64, error) {
	return torchwood.CosignatureTimestamp(sig)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
