package wallet

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
)

var (
	hintPattern    = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	partyIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}::1220[0-9a-f]{64}$`)
)

// PartyIDFor derives the party id of a key: HINT::1220 followed by the lowercase hex of
// SHA-256(0x00 0x00 0x00 0x0C || the 32 raw public-key bytes).
func PartyIDFor(hint string, pub ed25519.PublicKey) string {
	h := sha256.New()
	h.Write([]byte{0x00, 0x00, 0x00, 0x0C})
	h.Write(pub)
	return hint + "::1220" + hex.EncodeToString(h.Sum(nil))
}

// ValidPartyID tells whether id has the form of a party id.
func ValidPartyID(id string) bool { return partyIDPattern.MatchString(id) }

// ValidHint tells whether hint can start a party id: 1 to 64 of [A-Za-z0-9_-].
func ValidHint(hint string) bool { return hintPattern.MatchString(hint) }

// HashingScheme names how preparedTransactionHash is computed from preparedTransaction.
const HashingScheme = "sha256-v1"

// PreparedHash is the hash a party signs for a prepared transaction: SHA-256 of its bytes.
func PreparedHash(preparedTransaction []byte) []byte {
	sum := sha256.Sum256(preparedTransaction)
	return sum[:]
}
