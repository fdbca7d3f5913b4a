package translog

import (
	"bytes"
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

// Tile paths are C2SP's: no height segment, N in groups of three digits with x prefixes,
// entries under tile/entries, and one spelling per tile.
func TestTilePath_SpellsC2SPPathsAndReadsOnlyThose(t *testing.T) {
	for path, want := range map[string]tlog.Tile{
		"tile/0/x001/x234/067":      {H: 8, L: 0, N: 1234067, W: 256},
		"tile/1/000.p/3":            {H: 8, L: 1, N: 0, W: 3},
		"tile/entries/x001/234.p/5": {H: 8, L: -1, N: 1234, W: 5},
		"tile/entries/017":          {H: 8, L: -1, N: 17, W: 256},
	} {
		if got := TilePath(want); got != path {
			t.Errorf("TilePath(%+v) = %q, want %q", want, got, path)
		}
		if got, err := ParseTilePath(path); err != nil || got != want {
			t.Errorf("ParseTilePath(%q) = %+v, %v; want %+v", path, got, err, want)
		}
	}
	for _, bad := range []string{"tile/8/0/000", "tile/0/1", "tile/0/0001", "tile/0/000.p/256", "tile/0/000.p/0", "tile/data/000", "tile/64/000", "tile/0/x000/001", "0/000", "tile/entries/000/"} {
		if _, err := ParseTilePath(bad); err == nil {
			t.Errorf("ParseTilePath(%q) accepted it", bad)
		}
	}
}

func TestBundle_EachEntryIsALengthAndItsBytes(t *testing.T) {
	entries := [][]byte{[]byte(`{"a":1}`), {}, bytes.Repeat([]byte("x"), 300)}
	var b []byte
	for _, e := range entries {
		b = AppendBundle(b, e)
	}
	if !bytes.HasPrefix(b, []byte{0, 7, '{'}) {
		t.Fatalf("bundle starts %x", b[:3])
	}
	got, err := ParseBundle(b)
	if err != nil || len(got) != len(entries) || !bytes.Equal(got[2], entries[2]) {
		t.Fatalf("ParseBundle: %d entries, %v", len(got), err)
	}
	if _, err := ParseBundle(b[:len(b)-1]); err == nil {
		t.Fatal("a bundle cut short parsed")
	}
}
