package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"marketd/store/wallet"

	"github.com/uptrace/bun"
)

// Kinds of NFT update. Each prepared kind is an entry of actions (registerKind).
const (
	KindNFTMint        = wallet.KindNFTMint
	KindNFTList        = wallet.KindNFTList
	KindNFTCancel      = wallet.KindNFTCancel
	KindNFTBuy         = wallet.KindNFTBuy
	KindNFTSweep       = wallet.KindNFTSweep
	KindNFTTransfer    = wallet.KindNFTTransfer
	KindNFTBurn        = wallet.KindNFTBurn
	KindListingExpired = "nft.listing-expired" // committed by the operator, not prepared
	KindNFTOffer       = wallet.KindNFTOffer
	KindNFTOffers      = wallet.KindNFTOffers // a batch of offers of one collection
	KindNFTOfferCancel = wallet.KindNFTOfferCancel
	KindNFTOfferAccept = wallet.KindNFTOfferAccept
	// KindOfferExpiry releases an expired offer's funds; committed by the operator, not
	// prepared. Its name is the one the wire documents for the log.
	KindOfferExpiry = "offer-expiry"
)

// The NFT market's prepared kinds.
func init() {
	registerBatchedKind(KindNFTMint, applyMint, mintBatchKey)
	registerKind(KindNFTList, applyList)
	registerKind(KindNFTCancel, applyCancel)
	registerBatchedKind(KindNFTBuy, applyBuy, buyBatchKey)
	registerBatchedKind(KindNFTSweep, applyBuy, buyBatchKey)
	registerKind(KindNFTTransfer, applyMove)
	registerKind(KindNFTBurn, applyMove)
	registerBatchedKind(KindNFTOffer, applyOffer, offerBatchKey)
	registerBatchedKind(KindNFTOffers, applyOffers, offersBatchKey)
	registerKind(KindNFTOfferCancel, applyOfferCancel)
	registerBatchedKind(KindNFTOfferAccept, applyOfferAccept, acceptBatchKey)
}

// MaxBatch is how many NFTs or listings one signature may cover, for every batch: a batch
// mint's quantity, a batch list's items, a batch cancel's cids, a sweep's cids or count
// (wallet.MaxBatch). One limit for all of them, checked here at prepare, so REST, GraphQL and
// walletctl cannot drift apart; over it is invalid_request (400). It bounds the rows one
// ledger transaction writes while it holds the collection's lock.
const MaxBatch = wallet.MaxBatch

// maxListPrice is the highest price a listing may ask.
const maxListPrice = "1000000000000"

// maxListingExpiry bounds a listing's expiry to what Unix microseconds hold with room to spare.
var maxListingExpiry = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

// ---- collection state inside one transaction

// collectionTx is a collection locked for one NFT transaction. Every NFT transaction of a
// collection takes this lock first, so they apply one at a time and in one lock order; the
// statistics change in memory and are written once, by close.
type collectionTx struct {
	tx       *Tx
	c        *Collection
	owners   map[string]int // change in NFTs owned, per party
	lowest   *Amount        // the lowest price listed by this transaction
	delists  bool           // a listing went: the floor is read again
	topOffer bool           // a collection offer came or went: the top offer is read again

	floorBefore *Amount // the floor as the lock found it
	soldVolume  Amount  // what this transaction sold, for the day's figures
	soldCount   int
}

func (tx *Tx) lockCollection(ctx context.Context, id string) (*collectionTx, error) {
	n := tx.nftPart()
	n.touched = append(n.touched, id)
	c := new(Collection)
	err := tx.ForUpdate(tx.NewSelect().Model(c).Where("collection_id = ?", id)).Scan(ctx)
	if isNoRows(err) {
		return nil, Errorf(CodeNotFound, "no collection %q", truncate(id, 80))
	}
	if err != nil {
		return nil, err
	}
	return &collectionTx{tx: tx, c: c, owners: map[string]int{}, floorBefore: c.FloorPrice, soldVolume: Zero}, nil
}

// move records that an NFT went from one owner to another ("" for minted or burned).
func (ct *collectionTx) move(from, to string) {
	if from != "" {
		ct.owners[from]--
	}
	if to != "" {
		ct.owners[to]++
	}
}

// listed records a listing added at price.
func (ct *collectionTx) listed(price Amount) {
	ct.c.ListedCount++
	if ct.lowest == nil || price.Cmp(*ct.lowest) < 0 {
		ct.lowest = &price
	}
}

// delisted records a listing taken off (sold, cancelled, expired or withdrawn).
func (ct *collectionTx) delisted() {
	ct.c.ListedCount--
	ct.delists = true
}

// close writes the collection's statistics and its owners table.
func (ct *collectionTx) close(ctx context.Context) error {
	tx, c := ct.tx, ct.c
	changed := make([]string, 0, len(ct.owners))
	for _, p := range sortedKeys(ct.owners) {
		if ct.owners[p] != 0 {
			changed = append(changed, p)
		}
	}
	if len(changed) > 0 {
		var rows []collectionOwner
		if err := tx.NewSelect().Model(&rows).Where("collection_id = ?", c.ID).Where("owner IN (?)", bun.In(changed)).Scan(ctx); err != nil {
			return err
		}
		had := map[string]int{}
		for _, r := range rows {
			had[r.Owner] = r.NFTs
		}
		var upsert []collectionOwner
		for _, p := range changed {
			before, after := had[p], had[p]+ct.owners[p]
			if after < 0 {
				return fmt.Errorf("nft: %s would own %d NFTs of %s", p, after, c.ID)
			}
			switch {
			case before == 0 && after > 0:
				c.Owners++
			case before > 0 && after == 0:
				c.Owners--
			}
			if after == 0 {
				if err := tx.Later(ctx, tx.NewDelete().Model((*collectionOwner)(nil)).Where("collection_id = ?", c.ID).Where("owner = ?", p)); err != nil {
					return err
				}
				continue
			}
			upsert = append(upsert, collectionOwner{CollectionID: c.ID, Owner: p, NFTs: after})
		}
		if len(upsert) > 0 {
			if err := tx.Later(ctx, tx.NewInsert().Model(&upsert).On("CONFLICT (collection_id, owner) DO UPDATE").Set("nfts = EXCLUDED.nfts")); err != nil {
				return err
			}
		}
	}
	switch {
	case ct.delists:
		if err := tx.Flush(ctx); err != nil { // the items' deferred writes first
			return err
		}
		var floor []nftItem
		err := tx.NewSelect().Model(&floor).Column("list_price", "price_asc_key").
			Where("collection_id = ?", c.ID).Where("price_asc_key <> ?", noKey).
			Order("price_asc_key").Limit(1).Scan(ctx)
		if err != nil {
			return err
		}
		c.FloorPrice, c.FloorKey = nil, noKey
		if len(floor) > 0 {
			c.FloorPrice, c.FloorKey = floor[0].ListPrice, floor[0].PriceAscKey
		}
	case ct.lowest != nil && (c.FloorPrice == nil || ct.lowest.Cmp(*c.FloorPrice) < 0):
		c.FloorPrice, c.FloorKey = ct.lowest, ascKey(*ct.lowest)
	}
	if ct.topOffer {
		if err := ct.readTopOffer(ctx); err != nil {
			return err
		}
	}
	if err := ct.writeDay(ctx); err != nil {
		return err
	}
	c.VolumeDescKey = descKey(c.Volume)
	return tx.Later(ctx, tx.NewUpdate().Model(c).
		Column("minted", "burned", "floor_price", "floor_key", "listed_count", "owners", "volume", "volume_desc_key", "top_offer", "sales").WherePK())
}

// item reads the read model of a live NFT.
func (tx *Tx) item(ctx context.Context, nftID string) (*nftItem, error) {
	it := new(nftItem)
	if err := tx.NewSelect().Model(it).Where("nft_id = ?", nftID).Scan(ctx); err != nil {
		return nil, fmt.Errorf("nft item %s: %w", nftID, err)
	}
	return it, nil
}

// items reads the read models of live NFTs, by NFT id.
func (tx *Tx) items(ctx context.Context, nftIDs []string) (map[string]*nftItem, error) {
	var rows []nftItem
	if err := tx.NewSelect().Model(&rows).Where("nft_id IN (?)", bun.In(nftIDs)).Scan(ctx); err != nil {
		return nil, err
	}
	out := make(map[string]*nftItem, len(rows))
	for i := range rows {
		out[rows[i].NFTID] = &rows[i]
	}
	for _, id := range nftIDs {
		if out[id] == nil {
			return nil, fmt.Errorf("nft item %s: %w", id, sql.ErrNoRows)
		}
	}
	return out, nil
}

// saveItem writes an item's owner, contract and listing (deferred: collectionTx.close sends
// the deferred writes before it reads the floor back). The same transaction records the
// NFT's history event ([Tx.nftEvents]): the NFT index finds the NFTs an update changed by them.
func (tx *Tx) saveItem(ctx context.Context, it *nftItem) error {
	return tx.Later(ctx, tx.NewUpdate().Model(it).
		Column("owner", "contract_id", "listing_cid", "list_price", "list_currency", "list_expires", "price_asc_key", "price_desc_key").
		WherePK())
}

// nftEvents appends NFT history events.
func (tx *Tx) nftEvents(ctx context.Context, u *Update, events []nftActivity) error {
	if len(events) == 0 {
		return nil
	}
	tx.stampEvents(u, events)
	return tx.Later(ctx, tx.NewInsert().Model(&events))
}

// stampEvents dates NFT history events as the update u's, and notes their NFTs for the index.
func (tx *Tx) stampEvents(u *Update, events []nftActivity) {
	n := tx.nftPart()
	for i := range events {
		events[i].UpdateID, events[i].At = u.UpdateID, At(tx.Now())
		if events[i].NFTID != "" { // an offer's event names no NFT
			n.nfts = append(n.nfts, events[i].NFTID)
		}
	}
}

func strPtr(s string) *string { return &s }
