// Package partykey is the Ed25519 key a test party signs with, and the encodings the doors
// take it in. It imports nothing of the store, so the store's own internal tests (which
// storetest cannot serve: storetest imports the store) sign with the same key as every other
// test; everyone else reaches it as storetest.Key.
package partykey

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"testing"

	"marketd/store/wallet"
)

// Key is a fresh Ed25519 key pair, known to no ledger until a test onboards it.
type Key struct {
	Private ed25519.PrivateKey
}

// New returns a key made from a random seed.
func New() Key {
	seed := make([]byte, ed25519.SeedSize)
	rand.Read(seed) // crypto/rand.Read never returns an error
	return Key{Private: ed25519.NewKeyFromSeed(seed)}
}

// Public is the key's public half, the bytes onboarding registers.
func (k Key) Public() ed25519.PublicKey { return k.Private.Public().(ed25519.PublicKey) }

// PublicBase64 is the public key as the onboarding door takes it: standard base64.
func (k Key) PublicBase64() string { return base64.StdEncoding.EncodeToString(k.Public()) }

// PartyID is the id the ledger gives this key onboarded with hint.
func (k Key) PartyID(hint string) string { return wallet.PartyIDFor(hint, k.Public()) }

// Sign signs msg: a prepared transaction's hash, or a sign-in challenge's text.
func (k Key) Sign(msg []byte) []byte { return ed25519.Sign(k.Private, msg) }

// SignBase64 is Sign as the doors take a signature: standard base64.
func (k Key) SignBase64(msg []byte) string { return base64.StdEncoding.EncodeToString(k.Sign(msg)) }

// SignHash signs the hash a door's prepare answers (standard base64) and returns the signature
// in base64, as its execute takes it. A hash that is not base64 fails the test.
func (k Key) SignHash(tb testing.TB, hash64 string) string {
	tb.Helper()
	raw, err := base64.StdEncoding.DecodeString(hash64)
	if err != nil {
		tb.Fatalf("prepared hash %q: %v", hash64, err)
	}
	return k.SignBase64(raw)
}
