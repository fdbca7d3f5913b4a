package store

// The service's own log asks witnesses to cosign its checkpoints (c2sp.org/tlog-witness).
// AskWitnesses, run in the background by serve, submits the current tree to each configured
// witness with a consistency proof from the size that witness last cosigned, resumes from the
// size a 409 names, verifies each cosignature against the witness's configured key and keeps
// the latest per witness in log_cosignatures. A witness that is down or slow delays no write
// and no read: only this loop waits for it, each request within a timeout.
//
// WitnessedCheckpoint serves the newest tree that at least one witness cosigned, as the log's
// signed checkpoint followed by the cosignature lines of every witness that cosigned that very
// tree: every instance rebuilds the same bytes (the log's Ed25519 signature is deterministic),
// so every instance serves the same cosigned checkpoint.

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"marketd/store/translog"
)

// Witness is a witness the log asks for cosignatures: its verifier key and where its
// add-checkpoint is.
type Witness struct {
	Verifier note.Verifier
	URL      string // the submission prefix: URL+"/add-checkpoint"
}

// ParseWitness reads "<verifier key>@<URL>", the form MARKETD_WITNESSES lists.
func ParseWitness(s string) (Witness, error) {
	vkey, url, ok := strings.Cut(s, "@")
	if !ok || !(strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://")) {
		return Witness{}, fmt.Errorf("witness %q: want <verifier key>@<http(s) URL>", truncate(s, 80))
	}
	v, err := translog.NewCosignatureVerifier(vkey)
	if err != nil {
		return Witness{}, err
	}
	return Witness{Verifier: v, URL: strings.TrimSuffix(url, "/")}, nil
}

// cosignatureRow is a witness's latest cosignature of the log.
type cosignatureRow struct {
	bun.BaseModel `bun:"table:log_cosignatures"`

	Witness   string `bun:"witness,pk"`
	Size      int64  `bun:"size"`
	Root      string `bun:"root"`
	Line      string `bun:"line"`
	UpdatedAt int64  `bun:"updated_at"`
}

// WitnessReport is what one round of AskWitnesses did with one witness.
type WitnessReport struct {
	Witness string
	Size    int64 // the size it cosigned, or holds (after a 409)
	Err     error // nil when it cosigned the current tree, or had already
}

// witnessTimeout bounds one add-checkpoint request.
const witnessTimeout = 5 * time.Second

// AskWitnesses submits the log's current tree to each witness that has not cosigned it,
// through client, and keeps the cosignatures that verify.
func (s *Store) AskWitnesses(ctx context.Context, client *http.Client, witnesses []Witness) []WitnessReport {
	if len(witnesses) == 0 {
		return nil
	}
	tree, err := s.LogTree(ctx)
	if err != nil {
		return []WitnessReport{{Err: err}}
	}
	var rows []cosignatureRow
	if err := s.db.NewSelect().Model(&rows).Scan(ctx); err != nil {
		return []WitnessReport{{Err: err}}
	}
	held := map[string]int64{}
	for _, r := range rows {
		held[r.Witness] = r.Size
	}
	out := make([]WitnessReport, len(witnesses))
	var cp []byte // signed once a witness needs it: an idle log's round signs nothing
	for i, w := range witnesses {
		name := w.Verifier.Name()
		out[i] = WitnessReport{Witness: name, Size: held[name]}
		if held[name] == tree.N && tree.N > 0 {
			continue
		}
		if cp == nil {
			if cp, err = s.checkpointOf(ctx, tree); err != nil {
				out[i].Err = err
				continue
			}
		}
		out[i].Size, out[i].Err = s.askWitness(ctx, client, w, tree, cp, held[name])
	}
	return out
}

// askWitness submits tree's checkpoint cp to w from old, once more from the size a 409
// names; it returns the size w now holds.
func (s *Store) askWitness(ctx context.Context, client *http.Client, w Witness, tree tlog.Tree, cp []byte, old int64) (int64, error) {
	for attempt := 0; ; attempt++ {
		a := &translog.AddCheckpoint{OldSize: old, Checkpoint: cp}
		if old > 0 && old < tree.N {
			proof, err := tlog.ProveTree(tree.N, old, tlog.HashReaderFunc(func(ix []int64) ([]tlog.Hash, error) { return s.readLogHashes(ctx, ix) }))
			if err != nil {
				return old, err
			}
			a.Proof = proof
		}
		rctx, cancel := context.WithTimeout(ctx, witnessTimeout)
		req, _ := http.NewRequestWithContext(rctx, http.MethodPost, w.URL+"/add-checkpoint", bytes.NewReader(a.Marshal()))
		req.Header.Set("Content-Type", "text/plain; charset=utf-8")
		resp, err := client.Do(req)
		if err != nil {
			cancel()
			return old, fmt.Errorf("witness %s: %w", w.Verifier.Name(), err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		cancel()
		switch {
		case resp.StatusCode == http.StatusConflict && attempt == 0:
			n, err := strconv.ParseInt(strings.TrimSpace(string(body)), 10, 64)
			if err != nil || n < 0 || n > tree.N {
				return old, fmt.Errorf("witness %s: 409 naming %q, not a size up to %d", w.Verifier.Name(), truncate(string(body), 40), tree.N)
			}
			old = n
			continue
		case resp.StatusCode != http.StatusOK:
			return old, fmt.Errorf("witness %s: %d %s", w.Verifier.Name(), resp.StatusCode, truncate(strings.TrimSpace(string(body)), 200))
		}
		line, err := cosignatureLine(cp, body, w.Verifier)
		if err != nil {
			return old, fmt.Errorf("witness %s: %w", w.Verifier.Name(), err)
		}
		row := &cosignatureRow{Witness: w.Verifier.Name(), Size: tree.N, Root: base64.StdEncoding.EncodeToString(tree.Hash[:]), Line: line, UpdatedAt: s.Now().Unix()}
		// Only forward: another instance may have kept a larger tree's already.
		_, err = s.wdb.NewInsert().Model(row).
			On("CONFLICT (witness) DO UPDATE").
			Set("size = EXCLUDED.size, root = EXCLUDED.root, line = EXCLUDED.line, updated_at = EXCLUDED.updated_at").
			Where("?TableAlias.size < EXCLUDED.size").Exec(ctx)
		return tree.N, err
	}
}

// cosignatureLine is the line of w's answer body that cosigns cp and verifies with w's key.
func cosignatureLine(cp, body []byte, v note.Verifier) (string, error) {
	n, err := note.Open(append(append([]byte{}, cp...), body...), note.VerifierList(v))
	if err != nil {
		return "", fmt.Errorf("its answer holds no cosignature of this checkpoint that its key verifies: %w", err)
	}
	for _, sig := range n.Sigs {
		if sig.Name == v.Name() && sig.Hash == v.KeyHash() {
			return "— " + sig.Name + " " + sig.Base64 + "\n", nil
		}
	}
	return "", errors.New("its cosignature was not among those verified")
}

// checkpointOf is the log's signed checkpoint of tree.
func (s *Store) checkpointOf(ctx context.Context, tree tlog.Tree) ([]byte, error) {
	k, err := s.serviceKeys(ctx)
	if err != nil {
		return nil, err
	}
	return note.Sign(&note.Note{Text: string(translog.FormatCheckpoint(k.log.signer.Name(), tree))}, k.log.signer)
}

// WitnessedCheckpoint is the newest tree of the log a witness cosigned, signed by the log and
// followed by the cosignature of every witness that cosigned that tree; not_found while no
// witness has cosigned any.
func (s *Store) WitnessedCheckpoint(ctx context.Context) ([]byte, error) {
	var rows []cosignatureRow
	if err := s.db.NewSelect().Model(&rows).Order("size DESC", "witness").Scan(ctx); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, Errorf(CodeNotFound, "no witness has cosigned this log's checkpoint yet")
	}
	top := rows[0]
	h, err := base64.StdEncoding.DecodeString(top.Root)
	if err != nil || len(h) != tlog.HashSize {
		return nil, fmt.Errorf("witness %s: the stored root is not a hash", top.Witness)
	}
	cp, err := s.checkpointOf(ctx, tlog.Tree{N: top.Size, Hash: tlog.Hash(h)})
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if r.Size == top.Size && r.Root == top.Root {
			cp = append(cp, r.Line...)
		}
	}
	return cp, nil
}
