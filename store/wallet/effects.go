package wallet

// The effects of each prepared kind: what execute applies, field for field as prepare wrote
// them (NewEffects gives a kind's type), and the values they are made of.

// OnboardEffects is what an onboarding commits: a party for a key.
type OnboardEffects struct {
	PartyID   string `json:"partyId"`
	Hint      string `json:"hint"`
	PublicKey []byte `json:"publicKey"`
}

// TapEffects credits a party out of thin air (dev mode only).
type TapEffects struct {
	Owner      string     `json:"owner"`
	Instrument Instrument `json:"instrument"`
	Amount     Amount     `json:"amount"`
}

// TransferEffects is a transfer of one instrument: the holdings it spends, the holdings it
// creates (the receiver's, then the sender's change) and the fee.
type TransferEffects struct {
	Sender     string         `json:"sender"`
	Receiver   string         `json:"receiver"`
	Instrument Instrument     `json:"instrument"`
	Amount     Amount         `json:"amount"`
	Fee        Amount         `json:"fee"`
	Inputs     []SpentHolding `json:"inputs"`
	Outputs    []NewHolding   `json:"outputs"`
}

// SpentHolding is a holding a transaction consumes.
type SpentHolding struct {
	CID    string `json:"cid"`
	Amount Amount `json:"amount"`
}

// NewHolding is a holding a transaction creates.
type NewHolding struct {
	Owner  string `json:"owner"`
	Amount Amount `json:"amount"`
}

// PreapprovalEffects creates a preapproval, archiving the one it replaces.
type PreapprovalEffects struct {
	PartyID   string          `json:"partyId"`
	Kind      PreapprovalKind `json:"kind"`
	ExpiresAt int64           `json:"expiresAt"`
	Replaces  string          `json:"replaces,omitempty"`
}

// MintEffects mints Quantity NFTs of a collection's phase at Price each, paid to its creator
// (KindNFTMint).
type MintEffects struct {
	Minter       string `json:"minter"`
	CollectionID string `json:"collectionId"`
	// Slug is the collection's, which a wallet compares with the one its user typed; the
	// execute checks it under the collection's lock, so a prepare that named another
	// collection cannot pass for this one.
	Slug     string     `json:"slug"`
	Phase    string     `json:"phase"`
	Quantity int        `json:"quantity"`
	Price    Amount     `json:"price"`
	Currency Instrument `json:"currency"`
	Creator  string     `json:"creator"`
	Payment  *Payment   `json:"payment"`
}

// Payment is who pays what in one currency: the holdings it spends and the holdings it
// creates (credits per party, then the payer's change).
type Payment struct {
	Currency Instrument     `json:"currency"`
	Total    Amount         `json:"total"`
	Inputs   []SpentHolding `json:"inputs"`
	Outputs  []NewHolding   `json:"outputs"`
}

// ListingEffect is one listing a list creates.
type ListingEffect struct {
	NFTCID       string     `json:"nftCid"`
	NFTID        string     `json:"nftId"`
	CollectionID string     `json:"collectionId"`
	Price        Amount     `json:"price"`
	Currency     Instrument `json:"currency"`
	ExpiresAt    *int64     `json:"expiresAt,omitempty"`
	Withdraws    string     `json:"withdrawsListing,omitempty"` // the NFT's expired listing
}

// ListEffects lists NFTs of the seller's for sale (KindNFTList).
type ListEffects struct {
	Seller   string          `json:"seller"`
	Listings []ListingEffect `json:"listings"`
}

// ListingRef is one listing a cancel withdraws.
type ListingRef struct {
	CID          string `json:"cid"`
	NFTID        string `json:"nftId"`
	CollectionID string `json:"collectionId"`
}

// CancelEffects withdraws listings of the seller's (KindNFTCancel).
type CancelEffects struct {
	Seller   string       `json:"seller"`
	Listings []ListingRef `json:"listings"`
}

// Share is what one party gets of a sale.
type Share struct {
	Party  *string `json:"party"`
	Amount Amount  `json:"amount"`
}

// Settlement is how a price is split: the marketplace fee to the operator, the royalty to
// the creator, the rest to the seller. Each share is rounded down to the currency's
// precision, and the three add up to the price exactly.
type Settlement struct {
	Price   Amount `json:"price"`
	Fee     Share  `json:"fee"`
	Royalty Share  `json:"royalty"`
	Seller  Share  `json:"seller"`
}

// Purchase is one listing a buy or sweep takes.
type Purchase struct {
	Listing      string     `json:"listing"`
	NFTCID       string     `json:"nftCid"`
	NFTID        string     `json:"nftId"`
	CollectionID string     `json:"collectionId"`
	Seller       string     `json:"seller"`
	Price        Amount     `json:"price"`
	Settlement   Settlement `json:"settlement"`
}

// BuyEffects buys listings of one collection (KindNFTBuy, KindNFTSweep).
type BuyEffects struct {
	Buyer        string     `json:"buyer"`
	CollectionID string     `json:"collectionId"`
	Slug         string     `json:"slug"` // the collection's, checked at execute as a mint's is
	Purchases    []Purchase `json:"purchases"`
	Settlement   Settlement `json:"settlement"`
	MaxTotal     *Amount    `json:"maxTotal,omitempty"`
	Payment      *Payment   `json:"payment"`
}

// MoveEffects moves an NFT to a receiver, or burns it (no receiver) (KindNFTTransfer,
// KindNFTBurn).
type MoveEffects struct {
	Owner        string `json:"owner"`
	Receiver     string `json:"receiver,omitempty"` // empty for a burn
	NFTCID       string `json:"nftCid"`
	NFTID        string `json:"nftId"`
	CollectionID string `json:"collectionId"`
	Listing      string `json:"withdrawsListing,omitempty"`
}

// TraitMatch is one trait type of a trait offer and the values it takes.
type TraitMatch struct {
	Type   string   `json:"type"`
	Values []string `json:"values"`
}

// OfferEffects makes an offer, which locks price × quantity of the maker's holdings
// (KindNFTOffer).
type OfferEffects struct {
	Maker        string `json:"maker"`
	Kind         string `json:"kind"`
	CollectionID string `json:"collectionId"`
	// Slug is the collection's, which a wallet compares with the one its user typed; the
	// execute checks it under the collection's lock, as a mint's.
	Slug      string       `json:"slug,omitempty"`
	Serial    *int         `json:"serial,omitempty"`
	NFTID     string       `json:"nftId,omitempty"`
	Traits    []TraitMatch `json:"traits,omitempty"`
	Price     Amount       `json:"price"`
	Quantity  int          `json:"quantity"`
	ExpiresAt int64        `json:"expiresAt"`
	Lock      LockedFunds  `json:"lock"`
}

// OfferRef is one offer a cancel withdraws.
type OfferRef struct {
	OfferID      string `json:"cid"`
	CollectionID string `json:"collectionId"`
}

// OfferCancelEffects withdraws offers of the maker's (KindNFTOfferCancel).
type OfferCancelEffects struct {
	Maker  string     `json:"maker"`
	Offers []OfferRef `json:"offers"`
}

// OffersEffects are a batch of offers' effects: each offer's own lock is its amount alone, and
// Lock takes their sum from the maker's holdings.
type OffersEffects struct {
	Maker        string         `json:"maker"`
	CollectionID string         `json:"collectionId"`
	Offers       []OfferEffects `json:"offers"`
	Lock         LockedFunds    `json:"lock"`
}

// OfferSale is one NFT an accept sells into the offer.
type OfferSale struct {
	NFTCID     string     `json:"nftCid"`
	NFTID      string     `json:"nftId"`
	Listing    string     `json:"closesListing,omitempty"` // the NFT's listing, closed by the sale
	Settlement Settlement `json:"settlement"`
}

// OfferAcceptEffects sells NFTs of the seller's into an offer (KindNFTOfferAccept).
type OfferAcceptEffects struct {
	Seller       string      `json:"seller"`
	OfferID      string      `json:"offer"`
	Maker        string      `json:"maker"`
	CollectionID string      `json:"collectionId"`
	Price        Amount      `json:"price"`
	Currency     Instrument  `json:"currency"`
	Sales        []OfferSale `json:"sales"`
	Settlement   Settlement  `json:"settlement"`
	MinProceeds  *Amount     `json:"minProceeds,omitempty"`
}

// LockedFunds is what a party locks into an offer: the holdings spent and the change.
type LockedFunds struct {
	Instrument Instrument     `json:"instrument"`
	Amount     Amount         `json:"amount"`
	Inputs     []SpentHolding `json:"inputs"`
	Change     Amount         `json:"change"`
}

// LPQuoteEffects quotes a pool at Price for Size, locking what the LP gives when it is filled
// (KindLPQuote).
type LPQuoteEffects struct {
	LP        string      `json:"lp"`
	PoolID    string      `json:"poolId"`
	Side      string      `json:"side"`
	Price     Amount      `json:"price"`
	Size      Amount      `json:"size"`
	ExpiresAt int64       `json:"expiresAt"`
	Lock      LockedFunds `json:"lock"`
}

// LPQuoteCancelEffects withdraws an LP quote (KindLPQuoteCancel).
type LPQuoteCancelEffects struct {
	LP      string `json:"lp"`
	PoolID  string `json:"poolId"`
	QuoteID string `json:"cid"`
}

// ClaimFeesEffects pays an LP the fees its quotes earned in a pool (KindLPClaimFees).
type ClaimFeesEffects struct {
	LP     string                `json:"lp"`
	PoolID string                `json:"poolId"`
	Payout map[Instrument]Amount `json:"payout"`
}

// SwapIntentEffects is a swap of Amount of Sell for at least MinReceive of Receive by
// Deadline, its amount locked (KindSwapIntent).
type SwapIntentEffects struct {
	Taker      string      `json:"taker"`
	PoolID     string      `json:"poolId"`
	Sell       Instrument  `json:"sell"`
	Receive    Instrument  `json:"receive"`
	Amount     Amount      `json:"amount"`
	MinReceive Amount      `json:"minReceive"`
	Deadline   int64       `json:"deadline"`
	Lock       LockedFunds `json:"lock"`
}

// IntentCancelEffects withdraws a waiting swap intent, what it locks back to the taker
// (KindIntentCancel).
type IntentCancelEffects struct {
	Taker      string     `json:"taker"`
	IntentCID  string     `json:"intentCid"`
	PoolID     string     `json:"poolId"`
	Instrument Instrument `json:"instrument"`
	Amount     Amount     `json:"amount"`
}
