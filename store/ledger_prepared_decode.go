package store

import (
	"bytes"
	"encoding/json"
	"fmt"

	"marketd/store/wallet"
)

// The effects of each prepared kind, under the names a wallet reads them by. They are the very
// types execute applies, so a wallet reads the bytes it signs as execute will.
type (
	OnboardEffects       = onboardEffects      // KindOnboard
	TapEffects           = tapEffects          // KindTap
	TransferEffects      = transferEffects     // KindCCTransfer
	PreapprovalEffects   = preapprovalEffects  // KindNFTPreapproval, KindUSDCxPreapproval, KindPreapprovalRenew
	MintEffects          = mintEffects         // KindNFTMint
	ListEffects          = listEffects         // KindNFTList
	CancelEffects        = cancelEffects       // KindNFTCancel
	BuyEffects           = buyEffects          // KindNFTBuy, KindNFTSweep
	MoveEffects          = moveEffects         // KindNFTTransfer, KindNFTBurn (no receiver)
	LPQuoteEffects       = lpQuoteEffects      // KindLPQuote
	LPQuoteCancelEffects = lpCancelEffects     // KindLPQuoteCancel
	ClaimFeesEffects     = claimEffects        // KindLPClaimFees
	SwapIntentEffects    = intentEffects       // KindSwapIntent
	IntentCancelEffects  = intentCancelEffects // KindIntentCancel
	OfferEffects         = offerEffects        // KindNFTOffer
	OffersEffects        = offersEffects       // KindNFTOffers
	OfferCancelEffects   = offerCancelEffects  // KindNFTOfferCancel
	OfferAcceptEffects   = acceptEffects       // KindNFTOfferAccept

	SpentHolding  = spentHolding  // a holding a transaction consumes
	NewHolding    = newHolding    // a holding a transaction creates
	Payment       = payment       // who pays whom in one currency
	Purchase      = purchase      // one listing a buy or sweep takes
	ListingEffect = listingEffect // one listing a list creates
	ListingRef    = listingRef    // one listing a cancel withdraws
	LockedFunds   = lockFunds     // what an LP quote or a swap intent locks
	OfferRef      = offerRef      // one offer a cancel withdraws
	OfferSale     = offerSale     // one NFT an accept sells into an offer
)

// effectsOf makes the value each prepared kind's effects decode into: the type its execute
// decodes, set by registerKind.
var effectsOf = map[string]func() any{}

// DecodedPrepared is a prepared transaction read back from the bytes a party signs.
type DecodedPrepared struct {
	Scheme     string
	Network    string
	Kind       string
	ActAs      string
	Nonce      string
	PreparedAt int64 // Unix seconds
	ExpiresAt  int64 // Unix seconds
	// Effects is what execute applies: a pointer to the effects type of Kind, as listed
	// above (*TransferEffects for KindCCTransfer, ...).
	Effects any
}

// DecodePrepared reads a prepared transaction's bytes (a prepare's preparedTransaction) as
// execute reads them. It accepts only the canonical encoding prepare writes: reading the bytes
// and writing what was read must give them back byte for byte, so no duplicate, unknown or
// misspelt key, reordering, spacing or other spelling of a number can make a reader see
// something execute does not. It reads untrusted input: it never panics, and refuses what it
// cannot read with an error.
func DecodePrepared(b []byte) (*DecodedPrepared, error) {
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, fmt.Errorf("prepared transaction: %v", err)
	}
	if env.Scheme != wallet.HashingScheme {
		return nil, fmt.Errorf("prepared transaction: scheme %q, not %q", truncate(env.Scheme, 40), wallet.HashingScheme)
	}
	newEffects, ok := effectsOf[env.Kind]
	if !ok {
		return nil, fmt.Errorf("prepared transaction: unknown kind %q", truncate(env.Kind, 40))
	}
	effects := newEffects()
	if err := json.Unmarshal(env.Effects, effects); err != nil {
		return nil, fmt.Errorf("prepared transaction: %s effects: %v", env.Kind, err)
	}
	raw, err := json.Marshal(effects)
	if err != nil {
		return nil, fmt.Errorf("prepared transaction: %s effects: %v", env.Kind, err)
	}
	env.Effects = raw
	again, err := json.Marshal(env)
	if err != nil {
		return nil, fmt.Errorf("prepared transaction: %v", err)
	}
	if !bytes.Equal(again, b) {
		return nil, fmt.Errorf("prepared transaction: not in canonical form (it differs from its own re-encoding at byte %d)", firstDifference(again, b))
	}
	return &DecodedPrepared{
		Scheme: env.Scheme, Network: env.Network, Kind: env.Kind, ActAs: env.ActAs, Nonce: env.Nonce,
		PreparedAt: env.PreparedAt, ExpiresAt: env.ExpiresAt, Effects: effects,
	}, nil
}

// firstDifference is the offset of the first byte where a and b differ.
func firstDifference(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
