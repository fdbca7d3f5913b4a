package translog

import (
	"crypto/sha256"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"
)

// Fetch reads one tile by its coordinates (t.L == -1 for an entry bundle), as the log serves
// it at TilePath(t).
type Fetch func(t tlog.Tile) ([]byte, error)

// tileReader is a tlog.TileReader over a Fetch.
type tileReader struct{ fetch Fetch }

func (tileReader) Height() int { return TileHeight }

func (r tileReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		b, err := r.fetch(t)
		if err != nil {
			return nil, fmt.Errorf("tile %s: %w", TilePath(t), err)
		}
		out[i] = b
	}
	return out, nil
}

func (tileReader) SaveTiles([]tlog.Tile, [][]byte) {}

// HashReader reads the stored hashes of tree through its tiles, each checked against the
// tree's root (tlog.TileHashReader).
func HashReader(tree tlog.Tree, fetch Fetch) tlog.HashReader {
	return tlog.TileHashReader(tree, tileReader{fetch})
}

// CheckInclusion proves that entry is the n-th of tree, with a proof read through its tiles.
func CheckInclusion(tree tlog.Tree, n int64, entry []byte, fetch Fetch) error {
	if n < 0 || n >= tree.N {
		return fmt.Errorf("entry %d is not in a tree of %d entries", n, tree.N)
	}
	p, err := tlog.ProveRecord(tree.N, n, HashReader(tree, fetch))
	if err != nil {
		return fmt.Errorf("inclusion proof of entry %d: %w", n, err)
	}
	if err := tlog.CheckRecord(p, tree.N, tree.Hash, n, tlog.RecordHash(entry)); err != nil {
		return fmt.Errorf("entry %d is not in the tree of %d entries: %w", n, tree.N, err)
	}
	return nil
}

// CheckConsistency proves that tree extends old: the log was only appended to in between.
func CheckConsistency(old, tree tlog.Tree, fetch Fetch) error {
	if old.N > tree.N {
		return fmt.Errorf("the log shrank from %d to %d entries", old.N, tree.N)
	}
	if old.N == 0 {
		return nil
	}
	if old.N == tree.N {
		if old.Hash != tree.Hash {
			return fmt.Errorf("two different trees of %d entries: %s and %s", tree.N, old.Hash, tree.Hash)
		}
		return nil
	}
	p, err := tlog.ProveTree(tree.N, old.N, HashReader(tree, fetch))
	if err != nil {
		return fmt.Errorf("consistency proof from %d to %d entries: %w", old.N, tree.N, err)
	}
	if err := tlog.CheckTree(p, tree.N, tree.Hash, old.N, old.Hash); err != nil {
		return fmt.Errorf("the tree of %d entries does not extend the one of %d seen before: %w", tree.N, old.N, err)
	}
	return nil
}

// Audit reads every entry of tree from its bundles, checks each (ParseEntry), that no signed
// transaction is the entry of two updates, that every signed transaction is for network, and
// that together they hash to the tree's root, and returns them in log order.
func Audit(tree tlog.Tree, network string, fetch Fetch) ([]*Entry, error) {
	signedBy := map[[sha256.Size]byte]string{} // a signed transaction's hash: the update it committed
	hashes := map[int64]tlog.Hash{}
	read := tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(indexes))
		for i, x := range indexes {
			out[i] = hashes[x]
		}
		return out, nil
	})
	var entries []*Entry
	for first := int64(0); first < tree.N; first += TileWidth {
		w := int(min(TileWidth, tree.N-first))
		bundle, err := fetch(tlog.Tile{H: TileHeight, L: -1, N: first / TileWidth, W: w})
		if err != nil {
			return nil, fmt.Errorf("entries from %d: %w", first, err)
		}
		raw, err := ParseBundle(bundle)
		if err != nil {
			return nil, fmt.Errorf("entries from %d: %w", first, err)
		}
		if len(raw) != w {
			return nil, fmt.Errorf("entries from %d: the bundle holds %d, want %d", first, len(raw), w)
		}
		for i, b := range raw {
			n := first + int64(i)
			e, err := ParseEntry(b)
			if err != nil {
				return nil, fmt.Errorf("entry %d: %w", n, err)
			}
			if e.CommittedBy == CommittedByParty {
				h := sha256.Sum256(e.PreparedTransaction)
				if first, ok := signedBy[h]; ok {
					return nil, fmt.Errorf("entry %d: update %s commits the transaction update %s committed: one signature, two updates", n, e.UpdateID, first)
				}
				signedBy[h] = e.UpdateID
				if s, _ := e.Signed(); s.Network != network {
					return nil, fmt.Errorf("entry %d: update %s was signed for network %q, not %q", n, e.UpdateID, s.Network, network)
				}
			}
			hs, err := tlog.StoredHashes(n, b, read)
			if err != nil {
				return nil, err
			}
			for j, h := range hs {
				hashes[tlog.StoredHashIndex(0, n)+int64(j)] = h
			}
			entries = append(entries, e)
		}
	}
	root := tlog.Hash(sha256.Sum256(nil))
	if tree.N > 0 {
		var err error
		if root, err = tlog.TreeHash(tree.N, read); err != nil {
			return nil, err
		}
	}
	if root != tree.Hash {
		return nil, fmt.Errorf("the %d entries hash to %s, the checkpoint says %s", tree.N, root, tree.Hash)
	}
	return entries, nil
}
