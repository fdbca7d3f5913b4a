package main

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"

	"marketd/store/translog"
	"marketd/store/wallet"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// The transparency log, checked as Go checks its checksum database: the log's key is pinned
// the first time walletctl sees a server's, and the last checkpoint seen is kept beside the
// key file (FILE.log); every later checkpoint must be signed by the pinned key and extend the
// kept one. Receipts of the executes walletctl made are kept in FILE.receipts, one JSON line each.

// keptReceipt is one line of FILE.receipts: the execute's receipt, and the hash of the
// prepared transaction this key signed for it (base64), so verify can tell the entry holds
// exactly those bytes. Lines kept before the hash was kept have none.
type keptReceipt struct {
	Server  string          `json:"server"`
	Receipt json.RawMessage `json:"receipt"`
	Signed  string          `json:"signed,omitempty"`
}

// logState is what walletctl keeps of one server's log in FILE.log.
type logState struct {
	Key        string `json:"key"`        // the note verifier key, pinned on first use
	Checkpoint string `json:"checkpoint"` // the last signed checkpoint seen
}

func (w *cli) receiptsPath() string { return w.keyPath + ".receipts" }
func (w *cli) logStatePath() string { return w.keyPath + ".log" }

// keepReceipt appends an execute's receipt, with the hash signed for it, to FILE.receipts,
// for walletctl verify.
func (w *cli) keepReceipt(receipt json.RawMessage, signedHash string) error {
	line, err := json.Marshal(keptReceipt{Server: w.server, Receipt: receipt, Signed: signedHash})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(w.receiptsPath(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// keptReceipts reads the receipts FILE.receipts keeps for this server.
func (w *cli) keptReceipts() ([]keptReceipt, error) {
	f, err := os.Open(w.receiptsPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []keptReceipt
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var k keptReceipt
		if err := json.Unmarshal(sc.Bytes(), &k); err != nil {
			return nil, fmt.Errorf("%s: %v", w.receiptsPath(), err)
		}
		if k.Server == w.server {
			out = append(out, k)
		}
	}
	return out, sc.Err()
}

// getLog reads a file of the server's log (a path under /log/); anything but 200 is an error.
func (w *cli) getLog(path string) ([]byte, error) {
	res, err := w.http.Get(w.server + "/log/" + path)
	if err != nil {
		return nil, &transportError{server: w.server, err: err}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /log/%s: %d %s", path, res.StatusCode, bytes.TrimSpace(b))
	}
	return b, nil
}

func (w *cli) fetchTile(t tlog.Tile) ([]byte, error) { return w.getLog(translog.TilePath(t)) }

// checkpoint reads the server's current checkpoint and checks it against what walletctl kept:
// signed by the pinned key (pinned now if this server is new), and extending the last
// checkpoint seen. It returns the tree and a function that keeps this checkpoint as the last seen.
func (w *cli) checkpoint() (tlog.Tree, func() error, error) {
	states := map[string]logState{}
	if b, err := os.ReadFile(w.logStatePath()); err == nil {
		if err := json.Unmarshal(b, &states); err != nil {
			return tlog.Tree{}, nil, fmt.Errorf("%s: %v", w.logStatePath(), err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return tlog.Tree{}, nil, err
	}
	st := states[w.server]
	served, err := w.getLog("key")
	if err != nil {
		return tlog.Tree{}, nil, err
	}
	vkey := strings.TrimSpace(string(served))
	switch {
	case st.Key == "":
		st.Key = vkey
		fmt.Fprintf(w.log, "pinned the log key of %s: %s\n", w.server, vkey)
	case vkey != st.Key:
		return tlog.Tree{}, nil, fmt.Errorf("LOG KEY CHANGED: %s now serves log key %s, the one pinned in %s is %s; this is not the log seen before", w.server, vkey, w.logStatePath(), st.Key)
	}
	v, err := note.NewVerifier(st.Key)
	if err != nil {
		return tlog.Tree{}, nil, fmt.Errorf("log key %q: %v", st.Key, err)
	}
	open := func(signed []byte) (tlog.Tree, error) {
		n, err := note.Open(signed, note.VerifierList(v))
		if err != nil {
			return tlog.Tree{}, fmt.Errorf("the checkpoint is not signed by the pinned log key %s: %v", st.Key, err)
		}
		return translog.ParseCheckpoint(n.Text, v.Name())
	}
	policy, err := w.witnesses.verifiers()
	if err != nil {
		return tlog.Tree{}, nil, err
	}
	path := "checkpoint"
	if policy != nil {
		path = "witnessed-checkpoint"
	}
	signed, err := w.getLog(path)
	if err != nil {
		return tlog.Tree{}, nil, err
	}
	tree, err := open(signed)
	if err != nil {
		return tlog.Tree{}, nil, fmt.Errorf("BAD CHECKPOINT: %v", err)
	}
	if policy != nil {
		if err := w.witnesses.check(signed, v, policy); err != nil {
			return tlog.Tree{}, nil, err
		}
	}
	if st.Checkpoint != "" {
		old, err := open([]byte(st.Checkpoint))
		if err != nil {
			return tlog.Tree{}, nil, fmt.Errorf("%s: %v", w.logStatePath(), err)
		}
		if err := translog.CheckConsistency(old, tree, w.fetchTile); err != nil {
			return tlog.Tree{}, nil, fmt.Errorf("LOG REWRITTEN: %v", err)
		}
	}
	keep := func() error {
		st.Checkpoint = string(signed)
		states[w.server] = st
		return writeJSONFile(w.logStatePath(), states, false)
	}
	return tree, keep, nil
}

// verify checks that each kept receipt (or the one given) is in the log: its entry is proved
// included in the current checkpoint, names the receipt's update and holds a transaction this
// key signed, whose signature verifies over the SHA-256 of its bytes; for a kept receipt, the
// very bytes this key signed for it. One signature commits one update, so no two receipts'
// entries may hold the same signed transaction.
func (w *cli) verify(args []string) error {
	k, priv, err := w.loadKey()
	if err != nil {
		return err
	}
	receipts := []keptReceipt{}
	if len(args) == 1 {
		receipts = append(receipts, keptReceipt{Receipt: json.RawMessage(args[0])})
	} else if receipts, err = w.keptReceipts(); err != nil {
		return err
	}
	tree, keep, err := w.checkpoint()
	if err != nil {
		return err
	}
	updateOf := map[string]string{} // a signed transaction's hash: the update whose entry holds it
	for _, r := range receipts {
		update, hash, err := w.verifyReceipt(tree, r, k.PartyID, priv.Public().(ed25519.PublicKey))
		if err != nil {
			return fmt.Errorf("NOT IN THE LOG AS SIGNED: %v", err)
		}
		if other, ok := updateOf[hash]; ok && other != update {
			return fmt.Errorf("NOT IN THE LOG AS SIGNED: the entries of updates %s and %s hold one signed transaction", other, update)
		}
		updateOf[hash] = update
	}
	if err := keep(); err != nil {
		return err
	}
	return printJSON(w.out, map[string]any{"verified": len(receipts), "treeSize": tree.N, "rootHash": tree.Hash.String()})
}

// verifyReceipt checks one receipt against tree, and returns its update and the hash (base64)
// of the signed transaction its entry holds.
func (w *cli) verifyReceipt(tree tlog.Tree, kept keptReceipt, partyID string, pub ed25519.PublicKey) (update, hash string, err error) {
	var r struct {
		UpdateID string `json:"updateId"`
		LogIndex *int64 `json:"logIndex"`
	}
	if err := json.Unmarshal(kept.Receipt, &r); err != nil || r.UpdateID == "" {
		return "", "", fmt.Errorf("not a receipt: %s", kept.Receipt)
	}
	if r.LogIndex == nil {
		return "", "", fmt.Errorf("receipt of update %s has no logIndex", r.UpdateID)
	}
	n := *r.LogIndex
	if n < 0 || n >= tree.N {
		hint := ""
		if len(w.witnesses.keys) > 0 || os.Getenv("WALLETCTL_WITNESSES") != "" {
			hint = " (the newest tree the witnesses cosigned: it is not witnessed yet; verify again once they cosign a newer one)"
		}
		return "", "", fmt.Errorf("update %s: entry %d is not in the checkpoint's %d entries%s", r.UpdateID, n, tree.N, hint)
	}
	first := n / translog.TileWidth * translog.TileWidth
	bundle, err := w.fetchTile(tlog.Tile{H: translog.TileHeight, L: -1, N: n / translog.TileWidth, W: int(min(translog.TileWidth, tree.N-first))})
	if err != nil {
		return "", "", err
	}
	entries, err := translog.ParseBundle(bundle)
	if err != nil || int64(len(entries)) <= n-first {
		return "", "", fmt.Errorf("entries from %d: a bundle without entry %d (%v)", first, n, err)
	}
	raw := entries[n-first]
	if err := translog.CheckInclusion(tree, n, raw, w.fetchTile); err != nil {
		return "", "", fmt.Errorf("update %s: %v", r.UpdateID, err)
	}
	e, err := translog.ParseEntry(raw)
	if err != nil {
		return "", "", fmt.Errorf("update %s: %v", r.UpdateID, err)
	}
	switch {
	case e.UpdateID != r.UpdateID:
		return "", "", fmt.Errorf("entry %d is update %s, the receipt says %s", n, e.UpdateID, r.UpdateID)
	case e.CommittedBy != translog.CommittedByParty || !bytes.Equal(e.PublicKey, pub):
		return "", "", fmt.Errorf("entry %d (update %s) is not signed by this key", n, r.UpdateID)
	}
	hash = base64.StdEncoding.EncodeToString(wallet.PreparedHash(e.PreparedTransaction))
	if kept.Signed != "" && hash != kept.Signed {
		return "", "", fmt.Errorf("entry %d (update %s) holds the transaction of hash %s; this key signed %s for it", n, r.UpdateID, hash, kept.Signed)
	}
	d, err := wallet.DecodePrepared(e.PreparedTransaction)
	if err != nil {
		return "", "", fmt.Errorf("entry %d (update %s): %v", n, r.UpdateID, err)
	}
	if d.Network != w.network {
		return "", "", fmt.Errorf("entry %d (update %s): the signed transaction is for network %s, not %s (--network)", n, r.UpdateID, d.Network, w.network)
	}
	if d.ActAs != partyID || d.Kind != e.Kind {
		return "", "", fmt.Errorf("entry %d (update %s): the signed transaction is %s as %s, the entry says %s as %s", n, r.UpdateID, d.Kind, d.ActAs, e.Kind, e.ActAs)
	}
	fmt.Fprintf(w.log, "entry %d of %d: update %s, signed by this key: %s\n", n, tree.N, r.UpdateID, headline(d))
	return r.UpdateID, hash, nil
}

// audit downloads the whole log and checks every entry's signature and the root hash.
func (w *cli) audit() error {
	tree, keep, err := w.checkpoint()
	if err != nil {
		return err
	}
	entries, err := translog.Audit(tree, w.network, w.fetchTile)
	if err != nil {
		return fmt.Errorf("AUDIT FAILED: %v", err)
	}
	committedBy := map[string]int{} // party, service, before-log
	for _, e := range entries {
		committedBy[e.CommittedBy]++
	}
	if err := keep(); err != nil {
		return err
	}
	return printJSON(w.out, map[string]any{"entries": len(entries), "committedBy": committedBy, "treeSize": tree.N, "rootHash": tree.Hash.String()})
}

// witnessPolicy is a client's witness policy: the witnesses' cosignature keys, and how many
// of them must have cosigned a checkpoint before walletctl trusts it. Under a policy, verify
// and audit check the newest tree the log's witnesses cosigned (/log/witnessed-checkpoint):
// an operator showing this client a fork would need K witnesses to cosign it, and a witness
// cosigns only a tree that extends the one it cosigned before, so a fork shown to one client
// and not another is refused by every honest witness. An update newer than that tree is not
// witnessed yet: verify it again later.
type witnessPolicy struct {
	keys   []string
	quorum int
}

// verifiers reads the policy's keys (with WALLETCTL_WITNESSES's); nil when there are none.
func (p *witnessPolicy) verifiers() ([]note.Verifier, error) {
	keys := append(strings.Fields(os.Getenv("WALLETCTL_WITNESSES")), p.keys...)
	if len(keys) == 0 {
		if p.quorum > 0 {
			return nil, errors.New("--witnesses needs the witnesses' keys: give each with --witness")
		}
		return nil, nil
	}
	var out []note.Verifier
	for _, k := range keys {
		v, err := translog.NewCosignatureVerifier(k)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if p.quorum == 0 {
		p.quorum = len(out)
	}
	if p.quorum < 1 || p.quorum > len(out) {
		return nil, fmt.Errorf("--witnesses %d: want 1 to the %d witness keys given", p.quorum, len(out))
	}
	return out, nil
}

// check refuses a signed checkpoint that fewer than quorum of the policy's witnesses cosigned,
// naming the witnesses whose cosignature is missing and any whose cosignature is bad.
func (p *witnessPolicy) check(signed []byte, logKey note.Verifier, witnesses []note.Verifier) error {
	var good, missing, bad []string
	for _, wv := range witnesses {
		// One witness at a time, so one bad cosignature does not hide the others.
		n, err := note.Open(signed, note.VerifierList(logKey, wv))
		var invalid *note.InvalidSignatureError
		switch {
		case errors.As(err, &invalid):
			bad = append(bad, wv.Name())
		case err != nil:
			return fmt.Errorf("BAD CHECKPOINT: %v", err)
		case slices.ContainsFunc(n.Sigs, func(s note.Signature) bool { return s.Name == wv.Name() && s.Hash == wv.KeyHash() }):
			good = append(good, wv.Name())
		default:
			missing = append(missing, wv.Name())
		}
	}
	if len(good) >= p.quorum {
		return nil
	}
	msg := fmt.Sprintf("WITNESS POLICY NOT MET: %d of the %d witnesses must have cosigned the log's checkpoint; %d did", p.quorum, len(witnesses), len(good))
	if len(missing) > 0 {
		msg += "; no cosignature of " + strings.Join(missing, ", ")
	}
	if len(bad) > 0 {
		msg += "; a bad cosignature of " + strings.Join(bad, ", ")
	}
	return errors.New(msg)
}
