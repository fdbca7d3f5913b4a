package translog

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"marketd/store/wallet"
)

// forgery is a log a test builds entry by entry, served from memory.
type forgery struct {
	entries [][]byte
}

// signedEntry is an entry of a transaction of kind that key signs as actAs for network.
func signedEntry(t *testing.T, id, kind, actAs, network string, priv ed25519.PrivateKey, nonce string) *Entry {
	t.Helper()
	tx, _ := json.Marshal(map[string]any{"scheme": wallet.HashingScheme, "network": network, "kind": kind, "actAs": actAs, "nonce": nonce,
		"preparedAt": 1, "expiresAt": 2, "effects": map[string]any{}})
	sum := sha256.Sum256(tx)
	return &Entry{UpdateID: id, Kind: kind, ActAs: actAs, RecordedAt: "2026-11-28T00:00:00Z", CommittedBy: CommittedByParty,
		PreparedTransaction: tx, Signature: ed25519.Sign(priv, sum[:]), PublicKey: priv.Public().(ed25519.PublicKey)}
}

func (f *forgery) add(t *testing.T, e *Entry) {
	t.Helper()
	b, err := json.Marshal(e) // as an attacker would write it: Check is not run here
	if err != nil {
		t.Fatal(err)
	}
	f.entries = append(f.entries, b)
}

// tree is the forged log's tree and a Fetch of its one bundle.
func (f *forgery) tree(t *testing.T) (tlog.Tree, Fetch) {
	t.Helper()
	hashes := map[int64]tlog.Hash{}
	read := tlog.HashReaderFunc(func(xs []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(xs))
		for i, x := range xs {
			out[i] = hashes[x]
		}
		return out, nil
	})
	var bundle []byte
	for n, b := range f.entries {
		hs, err := tlog.StoredHashes(int64(n), b, read)
		if err != nil {
			t.Fatal(err)
		}
		for j, h := range hs {
			hashes[tlog.StoredHashIndex(0, int64(n))+int64(j)] = h
		}
		bundle = AppendBundle(bundle, b)
	}
	root, err := tlog.TreeHash(int64(len(f.entries)), read)
	if err != nil {
		t.Fatal(err)
	}
	return tlog.Tree{N: int64(len(f.entries)), Hash: root}, func(tile tlog.Tile) ([]byte, error) {
		if tile.L != -1 || tile.N != 0 {
			return nil, fmt.Errorf("no tile %s", TilePath(tile))
		}
		return bundle, nil
	}
}

// The log ties each entry to its signer: a log whose entries all verify against the keys they
// carry, as one built to deceive would, is refused when an entry's key is not its party's,
// when the signed bytes say another kind, when one signed transaction is the entry of two
// updates, when the service claims a party's transfer, or when a transaction was signed for
// another network (the security read's row 7).
func TestAudit_RefusesAnEntryNotTiedToItsSigner(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	alice := wallet.PartyIDFor("alice", pub)
	genuine := func(t *testing.T) *forgery {
		f := &forgery{}
		f.add(t, signedEntry(t, "u1", "wallet.tap", alice, "devnet", priv, "n1"))
		f.add(t, signedEntry(t, "u2", "wallet.cc-transfer", alice, "devnet", priv, "n2"))
		f.add(t, &Entry{UpdateID: "u3", Kind: "nft.listing-expired", ActAs: "operator::1220ab", RecordedAt: "2026-11-28T00:00:01Z", CommittedBy: CommittedByService})
		return f
	}
	tree, fetch := genuine(t).tree(t)
	if entries, err := Audit(tree, "devnet", fetch); err != nil || len(entries) != 3 {
		t.Fatalf("the genuine log: %d entries, %v", len(entries), err)
	}
	for _, c := range []struct {
		name  string
		forge func(t *testing.T, f *forgery)
		says  string
	}{
		{"one signed transaction under two updates", func(t *testing.T, f *forgery) {
			e := signedEntry(t, "u2", "wallet.cc-transfer", alice, "devnet", priv, "n2")
			e.UpdateID = "u4"
			f.add(t, e)
		}, "two updates"},
		{"a made-up key", func(t *testing.T, f *forgery) {
			f.add(t, signedEntry(t, "u4", "wallet.cc-transfer", alice, "devnet", other, "n4"))
		}, "not the key of actAs"},
		{"a kind the signed bytes do not say", func(t *testing.T, f *forgery) {
			e := signedEntry(t, "u4", "wallet.tap", alice, "devnet", priv, "n4")
			e.Kind = "wallet.cc-transfer"
			f.add(t, e)
		}, "the signed transaction wallet.tap"},
		{"a service cc-transfer for alice", func(t *testing.T, f *forgery) {
			f.add(t, &Entry{UpdateID: "u4", Kind: "wallet.cc-transfer", ActAs: alice, RecordedAt: "2026-11-28T00:00:02Z", CommittedBy: CommittedByService})
		}, "only a party's signature commits one"},
		{"another network", func(t *testing.T, f *forgery) {
			f.add(t, signedEntry(t, "u4", "wallet.tap", alice, "mainnet", priv, "n4"))
		}, "network"},
	} {
		f := genuine(t)
		c.forge(t, f)
		tree, fetch := f.tree(t)
		if _, err := Audit(tree, "devnet", fetch); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want a refusal saying %q", c.name, err, c.says)
		}
	}
}
