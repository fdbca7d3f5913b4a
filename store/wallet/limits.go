package wallet

import "time"

// MaxBatch is how many NFTs or listings one signature may cover, for every batch: a batch
// mint's quantity, a batch list's items, a batch cancel's cids, a sweep's cids or count. One
// limit for all of them, checked at prepare, so REST, GraphQL and walletctl cannot drift
// apart; over it is invalid_request (400). It bounds the rows one ledger transaction writes
// while it holds the collection's lock.
const MaxBatch = 50

// MaxPageSize is the most items one page of a list holds.
const MaxPageSize = 100

// Offer kinds: what an offer buys (OfferEffects.Kind).
const (
	OfferItem       = "item"
	OfferCollection = "collection"
	OfferTrait      = "trait"
)

// Offer limits.
const (
	MaxOfferQuantity = 1000                // units one collection or trait offer may ask for
	MaxOfferLifetime = 30 * 24 * time.Hour // the furthest expiresAt accepted
)

// An LP quote's sides (LPQuoteEffects.Side).
const (
	SideAsk = "ask" // sells base for quote: locks size base
	SideBid = "bid" // buys base with quote: locks price*size quote
)
