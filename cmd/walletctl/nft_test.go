package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"marketd/rest"
	"marketd/store"
	"marketd/store/storetest"
)

// testPublicURL is the tests' services' public URL, which their challenges name.
const testPublicURL = "http://localhost:8080"

// ctlWorld is a real marketd (REST over a store on one backend) and walletctl keys for it.
type ctlWorld struct {
	t      *testing.T
	store  *store.Store
	server string
	dir    string
}

func newCtlWorld(t *testing.T, b storetest.Backend) *ctlWorld {
	t.Helper()
	// walletctl judges its token's expiry by the wall clock, so the service's clock starts now.
	clock := storetest.NewClock(time.Now().Truncate(time.Second))
	s := b.Open(t, storetest.Config(clock))
	srv, err := rest.New(s, rest.Config{PublicURL: testPublicURL, Dev: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &ctlWorld{t: t, store: s, server: hs.URL, dir: t.TempDir()}
}

// ctl runs walletctl with key's file against the service and returns what it printed.
func (w *ctlWorld) ctl(key string, args ...string) (string, error) {
	w.t.Helper()
	var out, log bytes.Buffer
	if len(args) > 0 && args[0] == "login" {
		// The service's public URL is not the test server's address: the user names it.
		args = append(args, "--accept-domain", "localhost:8080", "--accept-uri", testPublicURL)
	}
	args = append([]string{"--server", w.server, "--key", filepath.Join(w.dir, key+".key")}, args...)
	err := run(args, &out, &log)
	return out.String(), err
}

// must runs walletctl and decodes its JSON output; any error fails the test.
func (w *ctlWorld) must(key string, args ...string) map[string]any {
	w.t.Helper()
	out, err := w.ctl(key, args...)
	if err != nil {
		w.t.Fatalf("walletctl %s: %v", strings.Join(args, " "), err)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		w.t.Fatalf("walletctl %s printed %q: %v", strings.Join(args, " "), out, err)
	}
	return v
}

// party creates, onboards and signs in a key and returns its party id.
func (w *ctlWorld) party(hint string) string {
	w.t.Helper()
	id := w.must(hint, "keygen", "--hint", hint)["partyId"].(string)
	w.must(hint, "onboard")
	w.must(hint, "login")
	return id
}

// refused runs walletctl and wants an error that mentions every word.
func (w *ctlWorld) refused(key string, words []string, args ...string) {
	w.t.Helper()
	out, err := w.ctl(key, args...)
	if err == nil {
		w.t.Fatalf("walletctl %s succeeded: %s", strings.Join(args, " "), out)
	}
	for _, word := range words {
		if !strings.Contains(err.Error(), word) {
			w.t.Errorf("walletctl %s: error %q does not mention %q", strings.Join(args, " "), err, word)
		}
	}
}

// apes creates the collection "apes" of creator (10 NFTs, 5% royalty, in CC) with a public
// phase open now at price, 5 per party.
func (w *ctlWorld) apes(creator, price string) *store.Collection {
	w.t.Helper()
	ctx := context.Background()
	col, err := w.store.CreateCollection(ctx, store.CollectionSpec{Slug: "apes", Name: "Apes", Creator: creator, Currency: store.CC, RoyaltyBps: 500, Supply: 10})
	if err != nil {
		w.t.Fatal(err)
	}
	now := time.Now()
	if _, err := w.store.AddPhase(ctx, store.PhaseSpec{Collection: col.ID, Name: "public", Price: price, Start: now.Add(-time.Hour), End: now.Add(time.Hour), PerPartyLimit: 5}); err != nil {
		w.t.Fatal(err)
	}
	return col
}

func ids(v map[string]any, field string) []string {
	raw, _ := v[field].([]any)
	out := make([]string, len(raw))
	for i, x := range raw {
		out[i], _ = x.(string)
	}
	return out
}

func TestNFTShortcuts_MintListBuySweepCancelTransferBurn(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		w := newCtlWorld(t, b)
		ctx := context.Background()
		creator, alice, bob := w.party("creator"), w.party("alice"), w.party("bob")
		col := w.apes(creator, "2")
		for _, k := range []string{"alice", "bob"} {
			w.must(k, "tap", "CC", "100")
		}
		w.must("bob", "preapprove", "nft")

		// Mint by slug, then a batch by id.
		one := ids(w.must("alice", "mint", "apes"), "contractIds")
		more := ids(w.must("alice", "mint", col.ID, "3"), "contractIds")
		if len(one) != 1 || len(more) != 3 {
			t.Fatalf("minted %v and %v", one, more)
		}

		// List three, one with an expiry; bob buys one and sweeps the cheapest other.
		l1 := w.must("alice", "list", one[0], "10")["cid"].(string)
		w.must("alice", "list", more[0], "4", "24h")
		l3 := w.must("alice", "list", more[1], "6")["cid"].(string)
		bought := w.must("bob", "buy", l1)
		st := bought["settlement"].(map[string]any)
		if st["price"] != "10" || st["fee"].(map[string]any)["amount"] != "0.25" || st["royalty"].(map[string]any)["amount"] != "0.5" ||
			st["seller"].(map[string]any)["amount"] != "9.25" {
			t.Errorf("buy settlement %v", st)
		}
		swept := w.must("bob", "sweep", "apes", "5", "1")
		if got := ids(swept, "contractIds"); len(got) != 1 || swept["settlement"].(map[string]any)["price"] != "4" {
			t.Errorf("a sweep of the cheapest one answered %v", swept)
		}

		// Cancel one by cid, then two at once.
		w.must("alice", "cancel", l3)
		l4 := w.must("alice", "list", more[1], "7")["cid"].(string)
		l5 := w.must("alice", "list", more[2], "8")["cid"].(string)
		w.must("alice", "cancel", l4, l5)

		// Transfer one to bob, who burns it.
		moved := w.must("alice", "transfer", more[1], bob)["contractId"].(string)
		w.must("bob", "burn", moved)

		// What the ledger says now: bob owns the bought and the swept NFT, alice one unlisted.
		page, err := w.store.NFTs(ctx, col.ID, store.NFTFilter{}, store.SortSerial, store.PageRequest{})
		if err != nil {
			t.Fatal(err)
		}
		owners := map[string]int{}
		for _, n := range page.Items {
			owners[n.Owner]++
			if n.Listing != nil {
				t.Errorf("NFT #%d is still listed: %+v", n.Serial, n.Listing)
			}
		}
		if len(page.Items) != 3 || owners[bob] != 2 || owners[alice] != 1 {
			t.Errorf("after it all: %d NFTs, owners %v", len(page.Items), owners)
		}
		bal := w.must("alice", "balance")["balances"].([]any)[0].(map[string]any)
		if bal["amount"] != "104.95" { // 100 - 4 mints of 2 + 9.25 + 3.7 (4 less 0.1 fee and 0.2 royalty)
			t.Errorf("alice's CC after it all: %v", bal)
		}

		// The server's refusals come back as errors that say what it said; bad arguments are
		// refused before any request.
		w.refused("bob", []string{"409", "conflict"}, "buy", l1)
		w.refused("alice", []string{"403", "party_mismatch"}, "burn", ids(bought, "contractIds")[0])
		w.refused("alice", []string{"409", "preapproval_required"}, "transfer", more[2], creator)
		w.refused("bob", []string{"409", "conflict"}, "sweep", "apes", "100", "1")
		w.refused("alice", []string{"404", "not_found"}, "mint", "no-such-slug")
		w.refused("alice", []string{"usage"}, "mint")
		w.refused("alice", []string{"usage"}, "list", more[2])
		w.refused("alice", []string{"EXPIRY"}, "list", more[2], "1", "soon")
		w.refused("alice", []string{"QUANTITY"}, "mint", "apes", "many")
		w.refused("alice", []string{"usage"}, "cancel")
		w.refused("alice", []string{"usage"}, "sweep", "apes", "5")
		w.refused("alice", []string{"usage"}, "transfer", more[2])
	})
}

func TestNFTShortcuts_ExpiryIsUnixSecondsOrADurationFromNow(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1800003600", 1800003600, true},
		{"1h", 1800003600, true},
		{"90m", 1800005400, true},
		{"-1h", 0, false},
		{"tomorrow", 0, false},
	} {
		got, err := expiry(tc.in, now)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("expiry(%q) = %d, %v; want %d (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
