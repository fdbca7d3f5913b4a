package wallet

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The prepared kinds: what a prepared transaction does, named in its envelope.
const (
	KindOnboard          = "party.onboard"
	KindTap              = "wallet.tap"
	KindCCTransfer       = "wallet.cc-transfer"
	KindNFTPreapproval   = "wallet.nft-preapproval"
	KindUSDCxPreapproval = "wallet.usdcx-preapproval"
	KindPreapprovalRenew = "wallet.preapproval-renew" // prepared, or committed by the deprecated unsigned route

	KindNFTMint        = "nft.mint"
	KindNFTList        = "nft.list"
	KindNFTCancel      = "nft.cancel"
	KindNFTBuy         = "nft.buy"
	KindNFTSweep       = "nft.sweep"
	KindNFTTransfer    = "nft.transfer"
	KindNFTBurn        = "nft.burn"
	KindNFTOffer       = "nft.offer"
	KindNFTOffers      = "nft.offers" // a batch of offers of one collection
	KindNFTOfferCancel = "nft.offer-cancel"
	KindNFTOfferAccept = "nft.offer-accept"

	KindLPQuote       = "swap.lp-quote"
	KindLPQuoteCancel = "swap.lp-quote-cancel"
	KindLPClaimFees   = "swap.lp-claim-fees"
	KindSwapIntent    = "swap.intent"
	KindIntentCancel  = "swap.intent-cancel"
)

// effectsOf makes, for each prepared kind, the value its effects decode into: the type the
// service's execute applies (the store refuses at start to run a kind listed here with any
// other type, or one not listed here).
var effectsOf = map[string]func() any{
	KindOnboard:          func() any { return new(OnboardEffects) },
	KindTap:              func() any { return new(TapEffects) },
	KindCCTransfer:       func() any { return new(TransferEffects) },
	KindNFTPreapproval:   func() any { return new(PreapprovalEffects) },
	KindUSDCxPreapproval: func() any { return new(PreapprovalEffects) },
	KindPreapprovalRenew: func() any { return new(PreapprovalEffects) },
	KindNFTMint:          func() any { return new(MintEffects) },
	KindNFTList:          func() any { return new(ListEffects) },
	KindNFTCancel:        func() any { return new(CancelEffects) },
	KindNFTBuy:           func() any { return new(BuyEffects) },
	KindNFTSweep:         func() any { return new(BuyEffects) },
	KindNFTTransfer:      func() any { return new(MoveEffects) },
	KindNFTBurn:          func() any { return new(MoveEffects) },
	KindNFTOffer:         func() any { return new(OfferEffects) },
	KindNFTOffers:        func() any { return new(OffersEffects) },
	KindNFTOfferCancel:   func() any { return new(OfferCancelEffects) },
	KindNFTOfferAccept:   func() any { return new(OfferAcceptEffects) },
	KindLPQuote:          func() any { return new(LPQuoteEffects) },
	KindLPQuoteCancel:    func() any { return new(LPQuoteCancelEffects) },
	KindLPClaimFees:      func() any { return new(ClaimFeesEffects) },
	KindSwapIntent:       func() any { return new(SwapIntentEffects) },
	KindIntentCancel:     func() any { return new(IntentCancelEffects) },
}

// NewEffects is a new, empty value of kind's effects (a pointer: *TransferEffects for
// KindCCTransfer, ...), and false if kind is not a prepared kind.
func NewEffects(kind string) (any, bool) {
	newEffects, ok := effectsOf[kind]
	if !ok {
		return nil, false
	}
	return newEffects(), true
}

// PreparedKinds lists every prepared kind.
func PreparedKinds() []string {
	kinds := make([]string, 0, len(effectsOf))
	for kind := range effectsOf {
		kinds = append(kinds, kind)
	}
	return kinds
}

// Envelope is the canonical encoding of a prepared transaction: compact JSON with the fields
// in this order. The nonce makes every prepare a distinct transaction.
type Envelope struct {
	Scheme     string          `json:"scheme"`
	Network    string          `json:"network"`
	Kind       string          `json:"kind"`
	ActAs      string          `json:"actAs"`
	Nonce      string          `json:"nonce"`
	PreparedAt int64           `json:"preparedAt"`
	ExpiresAt  int64           `json:"expiresAt"`
	Effects    json.RawMessage `json:"effects"`
}

// DecodedPrepared is a prepared transaction read back from the bytes a party signs.
type DecodedPrepared struct {
	Scheme     string
	Network    string
	Kind       string
	ActAs      string
	Nonce      string
	PreparedAt int64 // Unix seconds
	ExpiresAt  int64 // Unix seconds
	// Effects is what execute applies: a pointer to the effects type of Kind (NewEffects:
	// *TransferEffects for KindCCTransfer, ...).
	Effects any
}

// DecodePrepared reads a prepared transaction's bytes (a prepare's preparedTransaction) as
// execute reads them. It accepts only the canonical encoding prepare writes: reading the bytes
// and writing what was read must give them back byte for byte, so no duplicate, unknown or
// misspelt key, reordering, spacing or other spelling of a number can make a reader see
// something execute does not. It reads untrusted input: it never panics, and refuses what it
// cannot read with an error.
func DecodePrepared(b []byte) (*DecodedPrepared, error) {
	var env Envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, fmt.Errorf("prepared transaction: %v", err)
	}
	if env.Scheme != HashingScheme {
		return nil, fmt.Errorf("prepared transaction: scheme %q, not %q", Truncate(env.Scheme, 40), HashingScheme)
	}
	effects, ok := NewEffects(env.Kind)
	if !ok {
		return nil, fmt.Errorf("prepared transaction: unknown kind %q", Truncate(env.Kind, 40))
	}
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
