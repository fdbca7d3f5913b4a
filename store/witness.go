package store

// The service as a witness of other transparency logs (c2sp.org/tlog-witness): for each log
// it follows it keeps the tree it last cosigned, and cosigns a checkpoint only when it extends
// that tree (translog.CheckAddCheckpoint). The check and the move to the new tree are one
// compare-and-swap on the stored size and root: of two submissions racing from one size, one
// moves the row and is cosigned, the other finds the row moved and is answered 409 with the
// size now held, so the witness never cosigns two trees that do not extend each other.
//
// The witness's key is derived from the transparency log's own key (an HMAC of its seed
// under a fixed label), so it is kept, sealed and backed up with the service's other keys and
// needs no row of its own; its name is the service's authority followed by "/witness".

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"

	"github.com/uptrace/bun"
	"golang.org/x/mod/sumdb/tlog"

	"marketd/store/translog"
)

// witnessedRow is a log's row of witness_logs.
type witnessedRow struct {
	bun.BaseModel `bun:"table:witness_logs"`

	Origin     string `bun:"origin,pk"`
	Size       int64  `bun:"size"`
	Root       string `bun:"root"`
	Checkpoint string `bun:"checkpoint"`
	UpdatedAt  int64  `bun:"updated_at"`
}

func (r *witnessedRow) tree() (tlog.Tree, error) {
	h, err := base64.StdEncoding.DecodeString(r.Root)
	if err != nil || len(h) != tlog.HashSize {
		return tlog.Tree{}, fmt.Errorf("witness: the stored root of %s is not a hash", r.Origin)
	}
	return tlog.Tree{N: r.Size, Hash: tlog.Hash(h)}, nil
}

// WitnessName is the name this service cosigns under as a witness.
func (s *Store) WitnessName() string { return s.domain + "/witness" }

// WitnessCosigner is the service's cosigner as a witness.
func (s *Store) WitnessCosigner(ctx context.Context) (*translog.Cosigner, error) {
	k, err := s.serviceKeys(ctx)
	if err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, k.log.seed)
	mac.Write([]byte("marketd witness cosignature/v1 key"))
	return translog.NewCosigner(s.WitnessName(), ed25519.NewKeyFromSeed(mac.Sum(nil)))
}

// WitnessedTree is the tree the witness last cosigned for origin, read where it is written;
// ok is false when it never cosigned one.
func (s *Store) WitnessedTree(ctx context.Context, origin string) (tree tlog.Tree, ok bool, err error) {
	r := new(witnessedRow)
	err = s.wdb.NewSelect().Model(r).Where("origin = ?", origin).Scan(ctx)
	if isNoRows(err) {
		return tlog.Tree{}, false, nil
	}
	if err != nil {
		return tlog.Tree{}, false, err
	}
	tree, err = r.tree()
	return tree, err == nil, err
}

// AddCheckpoint answers an add-checkpoint request body for the logs the witness follows (by
// origin): the cosignature lines of the checkpoint, or a *translog.WitnessError carrying the
// status the specification names.
func (s *Store) AddCheckpoint(ctx context.Context, logs map[string]*translog.WitnessedLog, body []byte) ([]byte, error) {
	if len(body) > translog.MaxAddCheckpointBody {
		return nil, &translog.WitnessError{Status: http.StatusRequestEntityTooLarge, Reason: fmt.Sprintf("the body is larger than %d bytes", translog.MaxAddCheckpointBody)}
	}
	a, err := translog.ParseAddCheckpoint(body)
	if err != nil {
		return nil, err
	}
	lg := logs[translog.CheckpointOrigin(a.Checkpoint)]
	var last tlog.Tree
	held := false
	if lg != nil {
		if last, held, err = s.WitnessedTree(ctx, lg.Origin); err != nil {
			return nil, err
		}
	}
	next, err := translog.CheckAddCheckpoint(a, lg, last)
	if err != nil {
		return nil, err
	}
	cosigner, err := s.WitnessCosigner(ctx)
	if err != nil {
		return nil, err
	}
	row := &witnessedRow{Origin: lg.Origin, Size: next.N, Root: base64.StdEncoding.EncodeToString(next.Hash[:]), Checkpoint: string(a.Checkpoint), UpdatedAt: s.Now().Unix()}
	var res interface{ RowsAffected() (int64, error) }
	if held {
		res, err = s.wdb.NewUpdate().Model(row).Column("size", "root", "checkpoint", "updated_at").
			Where("origin = ?", lg.Origin).Where("size = ?", last.N).Where("root = ?", base64.StdEncoding.EncodeToString(last.Hash[:])).Exec(ctx)
	} else {
		res, err = s.wdb.NewInsert().Model(row).On("CONFLICT (origin) DO NOTHING").Exec(ctx)
	}
	if err != nil {
		return nil, err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		// Another submission moved the row first: answer with what it holds now.
		now, _, rerr := s.WitnessedTree(ctx, lg.Origin)
		if err == nil && rerr != nil {
			err = rerr
		}
		if err != nil {
			return nil, errors.Join(errors.New("witness: the compare-and-swap's outcome"), err)
		}
		return nil, &translog.WitnessError{Status: http.StatusConflict, Size: now.N, Reason: fmt.Sprintf("another submission moved this witness to size %d first", now.N)}
	}
	return cosigner.Cosign(a.Checkpoint)
}
