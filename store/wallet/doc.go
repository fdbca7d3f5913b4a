// Package wallet is what a wallet and the service must agree on byte for byte: party ids
// (PartyIDFor, ValidPartyID, ValidHint), the sign-in challenge (Challenge, ParseChallenge,
// ValidNonce), how a prepared transaction is hashed (PreparedHash, HashingScheme), and the
// prepared transaction's format: its envelope (Envelope), the prepared kinds (KindTap,
// KindCCTransfer, ...), the effects each kind applies (TransferEffects, BuyEffects, ...; the
// table NewEffects), the reader DecodePrepared, the values the effects are made of (Amount,
// Instrument, Settlement, TraitMatch, PreapprovalKind, ...) and the limits a prepare keeps to
// (MaxBatch, MaxPageSize, MaxOfferQuantity).
//
// It imports nothing of the server: no database, no store, no ledger core. The store (package
// marketd/store) defines its effects and kinds as aliases of these, and its execute applies
// exactly these types (registering a kind with another type, or one this package does not
// decode, panics when the store starts); cmd/walletctl decodes and checks what it signs with
// this package alone. So a third-party wallet that uses it reads a prepared transaction's bytes
// exactly as execute will apply them.
package wallet
