// Package translog is what a client and the service must agree on about the transparency log
// of ledger updates: the JSON of an entry and how to check its signature, the checkpoint text,
// the paths of hash tiles and entry bundles, and the bundle encoding. It follows the C2SP
// tlog-tiles, tlog-checkpoint and signed-note layouts with RFC 6962 hashes (Go's sumdb/tlog):
// tiles are 8 levels high, an entry bundle holds the entries of one level-0 tile, each as a
// big-endian uint16 length followed by its bytes.
//
// The store (package store) writes the log and the HTTP server serves it under /log/; walletctl
// reads it with nothing but this package, tlog and note.
package translog

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/tlog"

	"marketd/store/wallet"
)

// TileHeight is the height of every hash tile: a full tile holds 256 hashes.
const TileHeight = 8

// TileWidth is the number of hashes of a full tile, and of entries of a full bundle.
const TileWidth = 1 << TileHeight

// MaxEntrySize bounds an entry: a bundle writes its length in two bytes.
const MaxEntrySize = 1<<16 - 1

// Who committed an update.
const (
	CommittedByParty   = "party"   // executed with the party's signature over preparedTransaction
	CommittedByService = "service" // committed by the service itself (an expiry, an archive, a renewal)
	// CommittedBeforeLog is an update committed before the log began, appended when the store
	// was migrated to it: its signature, if it had one, was not kept.
	CommittedBeforeLog = "before-log"
)

// Entry is one log entry: one committed ledger update. An update a party signed carries the
// exact bytes the party signed the SHA-256 of, the signature and the party's key, so the entry
// alone shows that the party asked for it.
type Entry struct {
	UpdateID            string `json:"updateId"`
	Offset              int64  `json:"offset"`
	Kind                string `json:"kind"`
	ActAs               string `json:"actAs"`
	RecordedAt          string `json:"recordedAt"` // RFC 3339, UTC
	CommittedBy         string `json:"committedBy"`
	PreparedTransaction []byte `json:"preparedTransaction,omitempty"` // base64 on the wire
	Signature           []byte `json:"signature,omitempty"`           // Ed25519, base64
	PublicKey           []byte `json:"publicKey,omitempty"`           // raw Ed25519 key, base64
}

// Marshal is the entry's bytes as the log stores and hashes them: compact JSON, fields in the
// order of Entry.
func (e *Entry) Marshal() ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxEntrySize {
		return nil, fmt.Errorf("log entry of update %s: %d bytes, at most %d fit a bundle", e.UpdateID, len(b), MaxEntrySize)
	}
	return b, nil
}

// ParseEntry reads an entry and checks it: its fields, and for a party-signed update the
// signature over the SHA-256 of preparedTransaction against publicKey.
func ParseEntry(b []byte) (*Entry, error) {
	e := new(Entry)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(e); err != nil {
		return nil, fmt.Errorf("log entry: %w", err)
	}
	if e.UpdateID == "" || e.Kind == "" || e.ActAs == "" || e.RecordedAt == "" {
		return nil, errors.New("log entry: updateId, kind, actAs and recordedAt are required")
	}
	return e, e.Check()
}

// ServiceKinds are the kinds of update the service commits itself, with no party's signature:
// its own onboarding, the deprecated unsigned renewal, the releases of what expires (listings,
// offers, LP quotes and intents), fills of waiting intents, pools it creates. An entry of any
// other kind that says committedBy service is refused: the service cannot sign a party's
// transfer in the party's stead.
var ServiceKinds = map[string]bool{
	"party.onboard": true, "wallet.preapproval-renew": true, "nft.listing-expired": true, "offer-expiry": true,
	"swap.pool-create": true, "swap.fill": true, "swap.expire": true,
}

// Check verifies what the entry says of who committed it. A party-signed entry's signature
// must verify against its key, that key must be actAs's (a party id is its key's
// fingerprint), and the signed bytes must say the entry's kind and actAs; a service-committed
// entry must be of a kind the service commits itself (ServiceKinds).
func (e *Entry) Check() error {
	switch e.CommittedBy {
	case CommittedByService, CommittedBeforeLog:
		if e.PreparedTransaction != nil || e.Signature != nil || e.PublicKey != nil {
			return fmt.Errorf("log entry %s: committed by %s, yet carries a signature", e.UpdateID, e.CommittedBy)
		}
		if e.CommittedBy == CommittedByService && !ServiceKinds[e.Kind] {
			return fmt.Errorf("log entry %s: a %s that the service says it committed itself; only a party's signature commits one", e.UpdateID, e.Kind)
		}
		return nil
	case CommittedByParty:
		if len(e.PublicKey) != ed25519.PublicKeySize {
			return fmt.Errorf("log entry %s: publicKey is %d bytes, want %d", e.UpdateID, len(e.PublicKey), ed25519.PublicKeySize)
		}
		sum := sha256.Sum256(e.PreparedTransaction)
		if !ed25519.Verify(e.PublicKey, sum[:], e.Signature) {
			return fmt.Errorf("log entry %s: the signature does not verify over the SHA-256 of preparedTransaction", e.UpdateID)
		}
		hint, _, _ := strings.Cut(e.ActAs, "::")
		if wallet.PartyIDFor(hint, e.PublicKey) != e.ActAs {
			return fmt.Errorf("log entry %s: publicKey is not the key of actAs %s", e.UpdateID, e.ActAs)
		}
		env, err := e.Signed()
		if err != nil {
			return fmt.Errorf("log entry %s: %w", e.UpdateID, err)
		}
		if env.Kind != e.Kind || env.ActAs != e.ActAs {
			return fmt.Errorf("log entry %s: says %s by %s, the signed transaction %s by %s", e.UpdateID, e.Kind, e.ActAs, env.Kind, env.ActAs)
		}
		return nil
	}
	return fmt.Errorf("log entry %s: committedBy %q, want %q, %q or %q", e.UpdateID, e.CommittedBy, CommittedByParty, CommittedByService, CommittedBeforeLog)
}

// Signed is what a party-signed entry's prepared transaction says of itself: its kind, the
// party it acts as and the network it is for.
type Signed struct {
	Network string `json:"network"`
	Kind    string `json:"kind"`
	ActAs   string `json:"actAs"`
}

// Signed reads the envelope of the entry's prepared transaction.
func (e *Entry) Signed() (Signed, error) {
	var s Signed
	if err := json.Unmarshal(e.PreparedTransaction, &s); err != nil {
		return s, fmt.Errorf("preparedTransaction is not a prepared transaction: %w", err)
	}
	return s, nil
}

// FormatCheckpoint is the body of a checkpoint note: the origin line, the tree size and the
// base64 root hash, each ending in a newline.
func FormatCheckpoint(origin string, tree tlog.Tree) []byte {
	return fmt.Appendf(nil, "%s\n%d\n%s\n", origin, tree.N, base64.StdEncoding.EncodeToString(tree.Hash[:]))
}

// ParseCheckpoint reads the body of a checkpoint note (its text, after note.Open verified the
// signature) and checks that its origin is origin. Extension lines after the root are allowed.
func ParseCheckpoint(text, origin string) (tlog.Tree, error) {
	lines := strings.SplitN(text, "\n", 4)
	if len(lines) < 4 {
		return tlog.Tree{}, errors.New("checkpoint: want an origin line, a size line and a root hash line")
	}
	if lines[0] != origin {
		return tlog.Tree{}, fmt.Errorf("checkpoint: origin %q, want %q", lines[0], origin)
	}
	n, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != lines[1] {
		return tlog.Tree{}, fmt.Errorf("checkpoint: size %q is not a decimal count", lines[1])
	}
	root, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(root) != tlog.HashSize {
		return tlog.Tree{}, fmt.Errorf("checkpoint: root %q is not a base64 SHA-256 hash", lines[2])
	}
	return tlog.Tree{N: n, Hash: tlog.Hash(root)}, nil
}

// TilePath is a tile's path under the log's URL: "tile/<L>/<N>[.p/<W>]" for hashes,
// "tile/entries/<N>[.p/<W>]" for an entry bundle (t.L == -1), N written in groups of three
// digits, all but the last with an x prefix.
func TilePath(t tlog.Tile) string {
	// sumdb/tlog writes "tile/<H>/<L>/..." and "tile/<H>/data/...".
	p := strings.TrimPrefix(t.Path(), "tile/"+strconv.Itoa(t.H)+"/")
	if rest, ok := strings.CutPrefix(p, "data/"); ok {
		return "tile/entries/" + rest
	}
	return "tile/" + p
}

// ParseTilePath reads a path TilePath writes; it accepts only the one spelling of each tile.
func ParseTilePath(path string) (tlog.Tile, error) {
	rest, ok := strings.CutPrefix(path, "tile/")
	if !ok {
		return tlog.Tile{}, fmt.Errorf("tile path %q: want tile/<L>/<N>[.p/<W>] or tile/entries/<N>[.p/<W>]", path)
	}
	if n, ok := strings.CutPrefix(rest, "entries/"); ok {
		rest = "data/" + n
	}
	t, err := tlog.ParseTilePath("tile/" + strconv.Itoa(TileHeight) + "/" + rest)
	if err != nil || TilePath(t) != path || t.L > 63 {
		return tlog.Tile{}, fmt.Errorf("tile path %q: want tile/<L>/<N>[.p/<W>] or tile/entries/<N>[.p/<W>], N in groups of three digits (x001/234), 0 < W < 256", path)
	}
	return t, nil
}

// AppendBundle appends entry to an entry bundle.
func AppendBundle(bundle, entry []byte) []byte {
	bundle = binary.BigEndian.AppendUint16(bundle, uint16(len(entry)))
	return append(bundle, entry...)
}

// ParseBundle splits an entry bundle into its entries.
func ParseBundle(bundle []byte) ([][]byte, error) {
	var out [][]byte
	for len(bundle) > 0 {
		if len(bundle) < 2 {
			return nil, errors.New("entry bundle: a length cut short")
		}
		n := int(binary.BigEndian.Uint16(bundle))
		if len(bundle) < 2+n {
			return nil, errors.New("entry bundle: an entry cut short")
		}
		out = append(out, bundle[2:2+n])
		bundle = bundle[2+n:]
	}
	return out, nil
}
