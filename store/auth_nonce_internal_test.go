package store

import (
	"crypto/rand"
	"testing"
	"time"

	"marketd/store/wallet"
)

func TestNonce_SealsItsPartyAndIssueTime(t *testing.T) {
	key := make([]byte, 32)
	rand.Read(key)
	const alice, bob = "alice::1220" + "00000000000000000000000000000000000000000000000000000000000000aa",
		"bob::1220" + "00000000000000000000000000000000000000000000000000000000000000bb"
	issued := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	seen := map[string]bool{}
	for range 1000 {
		n := sealNonce(key, alice, issued)
		if !wallet.ValidNonce(n) || seen[n] {
			t.Fatalf("nonce %q: want 32 fresh characters of [A-Za-z0-9]", n)
		}
		seen[n] = true
		if got, mine, ok := openNonce(key, alice, n); !ok || !mine || !got.Equal(issued) {
			t.Fatalf("open %q for its party: %v %v %v", n, got, mine, ok)
		}
		// Named with another party, it is still recognised as issued (so a verify naming it
		// spends it), but as not bob's.
		if got, mine, ok := openNonce(key, bob, n); !ok || mine || !got.Equal(issued) {
			t.Fatalf("nonce of alice named by bob: %v %v %v, want issued and not bob's", got, mine, ok)
		}
		other := make([]byte, 32)
		rand.Read(other)
		if _, _, ok := openNonce(other, alice, n); ok {
			t.Fatalf("nonce opens under another service key")
		}
		for i := range n { // any one character changed: not a nonce this service sealed
			b := []byte(n)
			b[i] = "0123456789"[(int(b[i])+1)%10]
			if b[i] == n[i] {
				b[i] = 'x'
			}
			if _, _, ok := openNonce(key, alice, string(b)); ok {
				t.Fatalf("nonce with character %d changed still opens", i)
			}
		}
	}
	if _, _, ok := openNonce(key, alice, "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"); ok {
		t.Fatal("an out-of-range nonce opens")
	}
}
