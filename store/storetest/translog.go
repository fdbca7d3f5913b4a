package storetest

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/translog"

	"golang.org/x/mod/sumdb/tlog"
)

// LogTiles reads s's transparency log tiles as a client reads them over HTTP.
func LogTiles(s *store.Store) translog.Fetch {
	return func(t tlog.Tile) ([]byte, error) { return s.LogTile(context.Background(), t) }
}

// CheckLog checks s's transparency log against its ledger and returns the tree: one entry per
// committed update, in offset order, each naming its update and checking out (a party's
// signature over what it signed); the entries hash to the root; inclusion proofs through the
// tiles check with tlog's verifier; each update's row names its entry's index.
func CheckLog(t testing.TB, s *store.Store) tlog.Tree {
	t.Helper()
	ctx := context.Background()
	var updates []store.Update
	for {
		after := int64(0)
		if len(updates) > 0 {
			after = updates[len(updates)-1].Offset
		}
		page, err := s.UpdatesAfter(ctx, after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		updates = append(updates, page...)
	}
	tree, err := s.LogTree(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tree.N != int64(len(updates)) {
		t.Fatalf("the log holds %d entries, the ledger %d updates", tree.N, len(updates))
	}
	entries, err := translog.Audit(tree, s.Config().Network, LogTiles(s))
	if err != nil {
		t.Fatalf("audit: %v", err)
	}
	for i, e := range entries {
		u := updates[i]
		at := u.RecordedAt.UTC().Format(time.RFC3339Nano)
		if e.UpdateID != u.UpdateID || e.Offset != u.Offset || e.Kind != u.Kind || e.ActAs != u.ActAs || e.RecordedAt != at {
			t.Fatalf("entry %d is %+v, the update at offset %d is %s %s %s %s %s", i, e, u.Offset, u.UpdateID, u.Kind, u.ActAs, at, e.CommittedBy)
		}
		if u.LogIndex == nil || *u.LogIndex != int64(i) {
			t.Fatalf("entry %d is update %s, whose row names log index %v", i, u.UpdateID, fmtIndex(u.LogIndex))
		}
	}
	step := max(1, tree.N/50)
	for n := int64(0); n < tree.N; n += step {
		entry, err := translog.ParseBundle(mustTile(t, s, tlog.Tile{H: translog.TileHeight, L: -1, N: n / translog.TileWidth, W: int(min(translog.TileWidth, tree.N-n/translog.TileWidth*translog.TileWidth))}))
		if err != nil {
			t.Fatal(err)
		}
		if err := translog.CheckInclusion(tree, n, entry[n%translog.TileWidth], LogTiles(s)); err != nil {
			t.Fatal(err)
		}
	}
	return tree
}

// fmtIndex shows a log index an update's row may lack.
func fmtIndex(n *int64) string {
	if n == nil {
		return "none"
	}
	return strconv.FormatInt(*n, 10)
}

func mustTile(t testing.TB, s *store.Store, tile tlog.Tile) []byte {
	t.Helper()
	b, err := s.LogTile(context.Background(), tile)
	if err != nil {
		t.Fatalf("tile %s: %v", translog.TilePath(tile), err)
	}
	return b
}

// LogIndexes checks s's log (CheckLog) and returns the index of each entry by its update's id.
func LogIndexes(t testing.TB, s *store.Store) map[string]int64 {
	t.Helper()
	entries, err := translog.Audit(CheckLog(t, s), s.Config().Network, LogTiles(s))
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]int64, len(entries))
	for i, e := range entries {
		out[e.UpdateID] = int64(i)
	}
	return out
}

// ReceiptLogIndex reads an execute's receipt: its updateId and logIndex, which it must have.
func ReceiptLogIndex(t testing.TB, r store.Receipt) (updateID string, logIndex int64) {
	t.Helper()
	var head struct {
		UpdateID string `json:"updateId"`
		LogIndex *int64 `json:"logIndex"`
	}
	if err := json.Unmarshal(r, &head); err != nil || head.LogIndex == nil {
		t.Fatalf("receipt %s: no logIndex (%v)", r, err)
	}
	return head.UpdateID, *head.LogIndex
}

// WantLogIndex fails unless view shows update updateID at logIndex, the index of its entry in
// the log (indexes, from LogIndexes) and, where the test kept the update's receipt
// (receipts, by update id), the receipt's logIndex.
func WantLogIndex(t testing.TB, indexes, receipts map[string]int64, view, updateID string, logIndex *int64) {
	t.Helper()
	want, ok := indexes[updateID]
	switch {
	case !ok:
		t.Fatalf("%s shows update %s, which has no entry in the log", view, updateID)
	case logIndex == nil:
		t.Fatalf("%s shows update %s without its logIndex %d", view, updateID, want)
	case *logIndex != want:
		t.Fatalf("%s shows update %s at logIndex %d, its log entry is %d", view, updateID, *logIndex, want)
	}
	if r, ok := receipts[updateID]; ok && r != *logIndex {
		t.Fatalf("%s shows update %s at logIndex %d, its receipt %d", view, updateID, *logIndex, r)
	}
}
