package rest

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"marketd/store"
	"marketd/store/storetest"
	"marketd/store/translog"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// logClient reads the log over HTTP the way any client would.
type logClient struct {
	t *testing.T
	a *testAPI
}

func (c logClient) get(path string) []byte {
	c.t.Helper()
	r := c.a.do("GET", path, nil)
	if r.status != http.StatusOK {
		c.t.Fatalf("GET %s: %d %s", path, r.status, r.body)
	}
	return r.body
}

func (c logClient) fetch(t tlog.Tile) ([]byte, error) {
	r := c.a.do("GET", "/log/"+translog.TilePath(t), nil)
	if r.status != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", translog.TilePath(t), r.status, r.body)
	}
	return r.body, nil
}

// checkpoint reads the key and the checkpoint and verifies one with the other.
func (c logClient) checkpoint() tlog.Tree {
	c.t.Helper()
	v, err := note.NewVerifier(strings.TrimSpace(string(c.get("/log/key"))))
	if err != nil {
		c.t.Fatal(err)
	}
	r := c.a.do("GET", "/log/checkpoint", nil)
	if r.status != http.StatusOK || r.header.Get("Cache-Control") != "no-store" {
		c.t.Fatalf("checkpoint: %d, Cache-Control %q", r.status, r.header.Get("Cache-Control"))
	}
	n, err := note.Open(r.body, note.VerifierList(v))
	if err != nil {
		c.t.Fatalf("checkpoint %q: %v", r.body, err)
	}
	tree, err := translog.ParseCheckpoint(n.Text, v.Name())
	if err != nil {
		c.t.Fatal(err)
	}
	return tree
}

func TestLog_AClientVerifiesAReceiptEveryEntryAndConsistencyAcrossARestart(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice := a.onboard("alice")
		tok := a.token(alice)
		prep := a.do("POST", "/api/wallet/tap/prepare", map[string]string{"instrument": "CC", "amount": "10"}, bearer(tok)).ok(t)
		hash := prep.str(t, "preparedTransactionHash")
		raw, _ := base64.StdEncoding.DecodeString(hash)
		receipt := a.do("POST", "/api/wallet/tap/execute", map[string]string{"preparedTransactionHash": hash, "signature": alice.SignBase64(raw)}, bearer(tok)).ok(t).obj(t)
		index, ok := receipt["logIndex"].(float64)
		if !ok {
			t.Fatalf("receipt without logIndex: %v", receipt)
		}
		n := int64(index)

		c := logClient{t, a}
		before := c.checkpoint()
		entries, err := translog.Audit(before, a.store.Config().Network, c.fetch) // every entry's signature, and the root
		if err != nil {
			t.Fatal(err)
		}
		e := entries[n]
		signed, _ := base64.StdEncoding.DecodeString(prep.str(t, "preparedTransaction"))
		if e.UpdateID != receipt["updateId"] || e.CommittedBy != translog.CommittedByParty || !bytes.Equal(e.PreparedTransaction, signed) {
			t.Fatalf("entry %d is %+v, the receipt %v", n, e, receipt)
		}
		first := n / translog.TileWidth * translog.TileWidth
		bundle, err := c.fetch(tlog.Tile{H: translog.TileHeight, L: -1, N: n / translog.TileWidth, W: int(min(translog.TileWidth, before.N-first))})
		if err != nil {
			t.Fatal(err)
		}
		raws, err := translog.ParseBundle(bundle)
		if err != nil {
			t.Fatal(err)
		}
		if err := translog.CheckInclusion(before, n, raws[n-first], c.fetch); err != nil {
			t.Fatal(err)
		}

		// Another instance of the service, on the same store, serves a tree that extends it.
		rc := Config{PublicURL: a.store.Config().PublicURL, Dev: true, Logger: slog.New(slog.DiscardHandler)}
		a.http.Close()
		a2 := serveAPI(t, b.Reopen(t, a.store.Config()), a.clock, rc)
		bob := a2.onboard("bob")
		a2.prepareExecute("/api/wallet/tap", map[string]string{"instrument": "USDCx", "amount": "5"}, bob, bearer(a2.token(bob)))
		c2 := logClient{t, a2}
		after := c2.checkpoint()
		if after.N <= before.N {
			t.Fatalf("the log did not grow: %d then %d", before.N, after.N)
		}
		if err := translog.CheckConsistency(before, after, c2.fetch); err != nil {
			t.Fatal(err)
		}
		if _, err := translog.Audit(after, a.store.Config().Network, c2.fetch); err != nil {
			t.Fatal(err)
		}
	})
}

func TestLog_MalformedTilePathsAre400AndTilesBeyondTheTree404(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		a.onboard("alice")
		for _, path := range []string{"/log/tile/8/0/000", "/log/tile/0/1", "/log/tile/0/000.p/0", "/log/tile/0/000.p/256", "/log/tile/entries/x000/001", "/log/tile/64/000", "/log/tile/probe"} {
			a.do("GET", path, nil).wantProblem(t, http.StatusBadRequest, store.CodeInvalidRequest)
		}
		// Far beyond the tree: N*256 overflows an int64 (2^55 * 256), and must not wrap to a
		// tile the log holds, full and cached for a year.
		far := "x036/x028/x797/x018/x963/968"
		for _, path := range []string{"/log/tile/0/001", "/log/tile/1/000.p/1", "/log/tile/entries/000.p/200",
			"/log/tile/0/" + far, "/log/tile/entries/" + far, "/log/tile/2/" + far, "/log/tile/0/" + far + ".p/1"} {
			r := a.do("GET", path, nil)
			r.wantProblem(t, http.StatusNotFound, store.CodeNotFound)
			if cc := r.header.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("%s: Cache-Control %q", path, cc)
			}
		}
		r := a.do("GET", "/log/tile/entries/000.p/1", nil)
		if r.status != http.StatusOK || r.header.Get("Cache-Control") != "public, max-age=1" {
			t.Fatalf("a partial bundle: %d, Cache-Control %q", r.status, r.header.Get("Cache-Control"))
		}
	})
}
