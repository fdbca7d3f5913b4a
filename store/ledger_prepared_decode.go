package store

import "marketd/store/wallet"

// The effects of each prepared kind, under the names a wallet reads them by (wallet's types,
// the store's own names aliases of them). They are the very types execute applies, so a wallet
// reads the bytes it signs as execute will.
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

// DecodedPrepared is a prepared transaction read back from the bytes a party signs
// (wallet.DecodedPrepared).
type DecodedPrepared = wallet.DecodedPrepared

// DecodePrepared reads a prepared transaction's bytes (a prepare's preparedTransaction) as
// execute reads them, accepting only the canonical encoding prepare writes
// (wallet.DecodePrepared: a wallet reads them with the same code).
func DecodePrepared(b []byte) (*DecodedPrepared, error) { return wallet.DecodePrepared(b) }
