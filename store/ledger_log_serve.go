package store

// The transparency log as it is served: its signing key, its head (one row on PostgreSQL, read
// off the log on SQLite), the signed checkpoint, hash tiles and entry bundles, and the stored
// hashes they are read from. How it is written is in ledger_log.go.

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"

	"marketd/store/translog"

	"github.com/uptrace/bun"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// logKey is the transparency log's note signing key; its name is the log's origin.
type logKey struct {
	signer      note.Signer
	verifierKey string
	seed        []byte // the Ed25519 seed, from which the witness key is derived (witness.go)
}

// newLogKey makes the log's signing key, named after the service's public authority.
func (s *Store) newLogKey() (string, error) {
	skey, _, err := note.GenerateKey(rand.Reader, s.domain+"/log")
	return skey, err
}

// parseLogKey reads a note signer key (note.GenerateKey's format) and derives its verifier key.
func parseLogKey(skey string) (*logKey, error) {
	signer, err := note.NewSigner(skey)
	if err != nil {
		return nil, fmt.Errorf("transparency log key: %w", err)
	}
	f := strings.SplitN(skey, "+", 5) // PRIVATE+KEY+<name>+<hash>+<base64 of 1 and the seed>
	key, err := base64.StdEncoding.DecodeString(f[len(f)-1])
	if err != nil || len(key) != 1+ed25519.SeedSize {
		return nil, fmt.Errorf("transparency log key: not an Ed25519 signer key")
	}
	pub := ed25519.NewKeyFromSeed(key[1:]).Public().(ed25519.PublicKey)
	vkey, err := note.NewEd25519VerifierKey(signer.Name(), pub)
	if err != nil {
		return nil, fmt.Errorf("transparency log key: %w", err)
	}
	return &logKey{signer: signer, verifierKey: vkey, seed: key[1:]}, nil
}

// LogVerifierKey is the note verifier key of the log's checkpoints: "<origin>+<hash>+<key>".
func (s *Store) LogVerifierKey(ctx context.Context) (string, error) {
	k, err := s.serviceKeys(ctx)
	if err != nil {
		return "", err
	}
	return k.log.verifierKey, nil
}

// readLogHead reads the log's head. On PostgreSQL it first takes into the tree every entry
// the ledger has committed (integrateLog), when there are any: the head then covers every
// update committed before it was read.
func (s *Store) readLogHead(ctx context.Context) (*logHead, error) {
	if s.dialect != Postgres {
		return s.readHead(ctx, s.db)
	}
	h := &logHead{ID: 1}
	var committed int64
	err := s.db.NewRaw("SELECT h.size, h.frontier, q.next FROM log_head AS h, log_sequence AS q WHERE h.id = 1").
		Scan(ctx, &h.Size, &h.Frontier, &committed)
	if err != nil {
		return nil, fmt.Errorf("transparency log: read the head: %w", err)
	}
	if committed == h.Size {
		return h, nil
	}
	if err := s.integrateLog(ctx); err != nil {
		return nil, err
	}
	return s.readHead(ctx, s.db)
}

// readHead reads the log's head through db. PostgreSQL keeps it in its row, which the COMMIT's
// append reads and writes. SQLite keeps no such row (an append would write one more page
// for it): the size is one past the last entry's index, and the frontier the stored hashes at
// frontierIndexes(size), which the appends that completed those subtrees wrote and nothing
// rewrites.
func (s *Store) readHead(ctx context.Context, db bun.IDB) (*logHead, error) {
	h := &logHead{ID: 1, Frontier: []byte{}}
	if s.dialect == Postgres {
		if err := db.NewSelect().Model(h).Where("id = 1").Scan(ctx); err != nil {
			return nil, fmt.Errorf("transparency log: read the head: %w", err)
		}
		return h, nil
	}
	if err := db.NewRaw(logSizeSQL).Scan(ctx, &h.Size); err != nil {
		return nil, fmt.Errorf("transparency log: read the size: %w", err)
	}
	idx := frontierIndexes(h.Size)
	if len(idx) == 0 {
		return h, nil
	}
	hs, err := readStoredHashes(ctx, db, idx)
	if err != nil {
		return nil, fmt.Errorf("transparency log: read the head of %d entries: %w", h.Size, err)
	}
	for _, x := range hs {
		h.Frontier = append(h.Frontier, x[:]...)
	}
	return h, nil
}

// LogTree is the log's current size and root hash.
func (s *Store) LogTree(ctx context.Context) (tlog.Tree, error) {
	h, err := s.readLogHead(ctx)
	if err != nil {
		return tlog.Tree{}, err
	}
	return h.tree()
}

// LogCheckpoint is the log's current checkpoint, signed as a note by the log's key.
func (s *Store) LogCheckpoint(ctx context.Context) ([]byte, error) {
	tree, err := s.LogTree(ctx)
	if err != nil {
		return nil, err
	}
	return s.checkpointOf(ctx, tree)
}

// LogTile is a hash tile (t.L >= 0) or an entry bundle (t.L == -1) of height
// translog.TileHeight; not_found when the tree does not cover it yet.
func (s *Store) LogTile(ctx context.Context, t tlog.Tile) ([]byte, error) {
	if t.H != translog.TileHeight || t.L < -1 || t.L > 63 || t.N < 0 || t.W < 1 || t.W > translog.TileWidth {
		return nil, Errorf(CodeInvalidRequest, "a tile is %d levels high, at level -1 to 63, 1 to %d wide", translog.TileHeight, translog.TileWidth)
	}
	full := t.W == translog.TileWidth
	if full {
		if b, ok := s.fullTiles.get(t); ok {
			return b, nil
		}
	}
	h, err := s.readLogHead(ctx)
	if err != nil {
		return nil, err
	}
	beyond := Errorf(CodeNotFound, "the log holds %d entries: tile %s is beyond it", h.Size, translog.TilePath(t))
	// A tile's first hash covers entries from N*256 * 256^level on: one of N past size/256 starts
	// beyond the log, whatever its level, and N*256 might not fit an int64 (a path may name any N).
	if t.N > h.Size/translog.TileWidth {
		return nil, beyond
	}
	level := max(t.L, 0)
	// The tile's last hash covers 256^level entries ending at (N*256+W) * 256^level.
	end := t.N*translog.TileWidth + int64(t.W)
	for range level {
		if end > h.Size {
			break
		}
		end *= translog.TileWidth
	}
	if end > h.Size {
		return nil, beyond
	}
	var b []byte
	if t.L == -1 {
		b, err = s.logBundle(ctx, t)
	} else {
		b, err = tlog.ReadTileData(t, tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
			return s.readLogHashes(ctx, indexes)
		}))
	}
	if err == nil && full {
		s.fullTiles.put(t, b)
	}
	return b, err
}

// maxCachedTiles bounds the full tiles kept in memory: hash tiles are 8 KiB, bundles a few
// hundred KiB at most.
const maxCachedTiles = 256

// tileCache keeps full tiles, which never change once the tree covers them.
type tileCache struct {
	mu    sync.Mutex
	tiles map[tlog.Tile][]byte
}

// forget drops every kept tile: the history they were cut from may be gone (ledger_failover.go).
func (c *tileCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tiles = nil
}

func (c *tileCache) get(t tlog.Tile) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.tiles[t]
	return b, ok
}

func (c *tileCache) put(t tlog.Tile, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tiles == nil {
		c.tiles = map[tlog.Tile][]byte{}
	}
	if len(c.tiles) >= maxCachedTiles {
		for k := range c.tiles { // drop one at random: map order
			delete(c.tiles, k)
			break
		}
	}
	c.tiles[t] = b
}

// logBundle is the entry bundle of data tile t.
func (s *Store) logBundle(ctx context.Context, t tlog.Tile) ([]byte, error) {
	first := t.N * translog.TileWidth
	var rows []logEntryRow
	err := s.db.NewSelect().Model(&rows).Column("log_index", "entry").
		Where("log_index >= ?", first).Where("log_index < ?", first+int64(t.W)).Order("log_index").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("transparency log: read entries: %w", err)
	}
	if len(rows) != t.W {
		return nil, fmt.Errorf("transparency log: %d of the %d entries from %d are stored", len(rows), t.W, first)
	}
	var bundle []byte
	for _, r := range rows {
		bundle = translog.AppendBundle(bundle, r.Entry)
	}
	return bundle, nil
}

// readLogHashes reads stored hashes by index, in the order asked.
func (s *Store) readLogHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error) {
	return readStoredHashes(ctx, s.db, indexes)
}

// readStoredHashes reads stored hashes by index through db, in the order asked, from the rows
// of the entries whose appends added them (storedAt).
func readStoredHashes(ctx context.Context, db bun.IDB, indexes []int64) ([]tlog.Hash, error) {
	entries := make([]int64, len(indexes))
	for i, x := range indexes {
		entries[i], _ = storedAt(x)
	}
	var rows []logEntryRow
	if err := db.NewSelect().Model(&rows).Column("log_index", "hashes").Where("log_index IN (?)", bun.In(entries)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("transparency log: read hashes: %w", err)
	}
	by := make(map[int64][]byte, len(rows))
	for _, r := range rows {
		by[r.LogIndex] = r.Hashes
	}
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		n, level := storedAt(x)
		hs := by[n]
		if len(hs) < (level+1)*tlog.HashSize {
			return nil, fmt.Errorf("transparency log: stored hash %d is missing", x)
		}
		out[i] = tlog.Hash(hs[level*tlog.HashSize:])
	}
	return out, nil
}
