package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
	"marketd/store/wallet"
)

// A relay that forwards to the real service gets a challenge naming the service: walletctl
// refuses it before it signs, so the relay never gets a session (the security read's row 5).
func TestLogin_RefusesARelayedChallengeBeforeItSigns(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		w := newCtlWorld(t, b)
		w.must("alice", "keygen", "--hint", "alice")
		w.must("alice", "onboard")
		var verifies atomic.Int32
		relay := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/api/auth/verify" {
				verifies.Add(1)
			}
			forward(rw, r, w.server)
		}))
		defer relay.Close()
		var out, log bytes.Buffer
		err := run([]string{"--server", relay.URL, "--key", filepath.Join(w.dir, "alice.key"), "login"}, &out, &log)
		if err == nil || !strings.Contains(err.Error(), "refusing to sign") || !strings.Contains(err.Error(), "domain localhost:8080") {
			t.Fatalf("login through a relay: %v (%s)", err, log.String())
		}
		if n := verifies.Load(); n != 0 {
			t.Fatalf("%d verify requests reached the relay: walletctl signed", n)
		}
	})
}

// Each field of the challenge is checked on its own, every mismatch named; an override names
// the one domain and URI it accepts.
func TestLogin_ChecksEachFieldOfTheChallenge(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	const party = "alice::1220aa"
	good := wallet.Challenge{Domain: "market.example", PartyID: party, URI: "https://market.example", Version: "1", Network: "devnet",
		Nonce: "abcdefghijklmnopqrstuvwxyz012345", IssuedAt: now, ExpiresAt: now.Add(10 * time.Minute)}
	w := &cli{server: "https://market.example", network: "devnet"}
	if err := w.checkChallenge(good, party, good.Nonce, now); err != nil {
		t.Fatalf("the challenge asked for: %v", err)
	}
	for _, c := range []struct {
		name   string
		change func(*wallet.Challenge)
		says   string
	}{
		{"domain", func(c *wallet.Challenge) { c.Domain = "evil.example" }, "domain evil.example"},
		{"URI", func(c *wallet.Challenge) { c.URI = "https://evil.example" }, "URI https://evil.example"},
		{"network", func(c *wallet.Challenge) { c.Network = "mainnet" }, "network mainnet"},
		{"party", func(c *wallet.Challenge) { c.PartyID = "mallory::1220bb" }, "party mallory::1220bb"},
		{"nonce", func(c *wallet.Challenge) { c.Nonce = "ZYXWVUTSRQPONMLKJIHGFEDCBA543210" }, "nonce ZYXW"},
		{"expired", func(c *wallet.Challenge) { c.ExpiresAt = now.Add(-time.Second) }, "not a challenge issued now"},
		{"far expiry", func(c *wallet.Challenge) { c.ExpiresAt = now.Add(24 * time.Hour) }, "not a challenge issued now"},
	} {
		ch := good
		c.change(&ch)
		err := w.checkChallenge(ch, party, good.Nonce, now)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want a refusal naming %q", c.name, err, c.says)
		}
		if c.name == "domain" || c.name == "URI" { // one field wrong: one mismatch named
			if n := strings.Count(err.Error(), ";"); n != 0 {
				t.Errorf("%s: %v names more than the one field", c.name, err)
			}
		}
	}
	// The user's own proxy: the service's domain and URI named explicitly.
	proxied := &cli{server: "http://127.0.0.1:9999", network: "devnet", acceptDomain: "market.example", acceptURI: "https://market.example"}
	if err := proxied.checkChallenge(good, party, good.Nonce, now); err != nil {
		t.Errorf("with --accept-domain and --accept-uri: %v", err)
	}
	bad := good
	bad.Domain, bad.PartyID = "evil.example", "mallory::1220bb"
	if err := proxied.checkChallenge(bad, party, good.Nonce, now); err == nil || !strings.Contains(err.Error(), "domain evil.example") || !strings.Contains(err.Error(), "party mallory") {
		t.Errorf("two fields wrong, both named: %v", err)
	}
}

// A proxy that answers a collection's slug with a look-alike's id gets a mint (or an offer)
// of the look-alike prepared; its effects carry the look-alike's slug, so walletctl refuses it
// before any execute, and --max-price bounds what one NFT may cost (the security read's row 4).
func TestMintSweepAndOffer_RefuseALookAlikeCollectionBeforeSigning(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		w := newCtlWorld(t, b)
		creator := w.party("creator")
		w.apes(creator, "2")
		fake, err := w.store.CreateCollection(ctx, store.CollectionSpec{Slug: "apes-x", Name: "Apes", Creator: creator, Currency: store.CC, Supply: 10})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		if _, err := w.store.AddPhase(ctx, store.PhaseSpec{Collection: fake.ID, Name: "public", Price: "900", Start: now.Add(-time.Hour), End: now.Add(time.Hour), PerPartyLimit: 5}); err != nil {
			t.Fatal(err)
		}
		real := w.server
		var executes atomic.Int32
		proxy := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/api/nft/slug/apes" { // the look-alike's answer for the real slug
				rw.Header().Set("Content-Type", "application/json")
				json.NewEncoder(rw).Encode(map[string]any{"id": fake.ID, "slug": "apes", "currency": "CC"})
				return
			}
			if strings.HasSuffix(r.URL.Path, "/execute") {
				executes.Add(1)
			}
			forward(rw, r, real)
		}))
		defer proxy.Close()
		w.party("alice")
		w.must("alice", "tap", "CC", "1000")
		w.server = proxy.URL
		w.must("alice", "login")
		w.refused("alice", []string{"slug", "apes-x"}, "mint", "apes")
		w.refused("alice", []string{"slug", "apes-x"}, "offer", "apes", "1")
		if n := executes.Load(); n != 0 {
			t.Fatalf("%d executes reached the server: walletctl signed a look-alike's mint or offer", n)
		}
		w.server = real // a session is kept per server URL
		w.must("alice", "login")
		w.refused("alice", []string{"more than the 1 you allowed"}, "mint", "--max-price", "1", "apes")
		w.must("alice", "mint", "--max-price", "2", "apes")
	})
}

// forward relays r to the server at target and copies its answer back, as a proxy does.
func forward(rw http.ResponseWriter, r *http.Request, target string) {
	body, _ := io.ReadAll(r.Body)
	req, _ := http.NewRequest(r.Method, target+r.URL.RequestURI(), bytes.NewReader(body))
	req.Header = r.Header.Clone()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		rw.WriteHeader(http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	for k, v := range res.Header {
		rw.Header()[k] = v
	}
	rw.WriteHeader(res.StatusCode)
	io.Copy(rw, res.Body)
}
