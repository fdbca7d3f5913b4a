package store

import (
	"context"

	"github.com/uptrace/bun"

	"marketd/store/ledger"
)

const templateListing = "listings"

// Listing is a seller's offer to sell one NFT contract at a price, until it expires. It locks
// the NFT contract while it is active: a sale consumes both, a transfer or burn withdraws it.
type Listing struct {
	bun.BaseModel `bun:"table:listings"`
	Lifecycle

	Seller       string     `bun:"seller"`
	NFTCID       string     `bun:"nft_cid"`
	NFTID        string     `bun:"nft_id"`
	CollectionID string     `bun:"collection_id"`
	Price        Amount     `bun:"price"`
	Currency     Instrument `bun:"currency"`
	ExpiresAt    *Timestamp `bun:"expires_at"`
}

func (*Listing) Template() string     { return templateListing }
func (l *Listing) Controller() string { return l.Seller }
func (l *Listing) Escrowed() string   { return l.NFTCID }

// A listing is its seller's offer, and locks the NFT contract it sells while it is active.
func init() {
	ledger.RegisterTemplate(templateListing, ledger.TemplateSpec{Owner: "seller", Offer: true, Escrow: "nft_cid", EscrowOf: templateNFT})
}

// ListingByCID returns a listing, active or not, or not_found.
func (s *Store) ListingByCID(ctx context.Context, cid string) (*Listing, error) {
	return listingByCID(ctx, s.db, cid)
}

func listingByCID(ctx context.Context, db bun.IDB, cid string) (*Listing, error) {
	l := new(Listing)
	err := db.NewSelect().Model(l).Where("cid = ?", cid).Scan(ctx)
	if isNoRows(err) {
		return nil, Errorf(CodeNotFound, "no listing %s", truncate(cid, 80))
	}
	return l, err
}

// activeListingOf returns the active listing of the NFT contract nftCID, or nil.
func activeListingOf(ctx context.Context, db bun.IDB, nftCID string) (*Listing, error) {
	var ls []Listing
	err := db.NewSelect().Model(&ls).Where("nft_cid = ?", nftCID).Where("consumed_update IS NULL").Limit(1).Scan(ctx)
	if err != nil || len(ls) == 0 {
		return nil, err
	}
	return &ls[0], nil
}

// ListingFilter narrows a list of listings.
type ListingFilter struct {
	CollectionID string
	Seller       string
	State        string // "", "active", "consumed"
}

// listingKey is a listing's keyset position: newest first.
type listingKey struct {
	At  int64  `json:"a"`
	CID string `json:"c"`
}

// Listings lists listings newest first, filtered by collection, seller and state.
func (s *Store) Listings(ctx context.Context, f ListingFilter, r PageRequest) (Page[Listing], error) {
	q, err := startPage[listingKey](ctx, s, "listings:"+hashText(f.CollectionID+"|"+f.Seller+"|"+f.State), r)
	if err != nil {
		return Page[Listing]{}, err
	}
	var rows []Listing
	sel := s.db.NewSelect().Model(&rows)
	if f.CollectionID != "" {
		sel = sel.Where("collection_id = ?", f.CollectionID)
	}
	if f.Seller != "" {
		sel = sel.Where("seller = ?", f.Seller)
	}
	switch f.State {
	case "":
	case "active":
		sel = sel.Where("consumed_update IS NULL")
	case "consumed":
		sel = sel.Where("consumed_update IS NOT NULL")
	default:
		return Page[Listing]{}, Errorf(CodeInvalidRequest, "state must be active or consumed")
	}
	sel = q.Seek(sel, true, []string{"created_at", "cid"}, q.At(func(k listingKey) []any { return []any{k.At, k.CID} }))
	if err := sel.Limit(q.Fetch()).Scan(ctx); err != nil {
		return Page[Listing]{}, err
	}
	return finish(ctx, s, q, rows, func(l Listing) listingKey { return listingKey{l.CreatedAt.UnixMicro(), l.CID} })
}
