package store

import "context"

// nftTx is what one transaction gathers of the NFT market (a part of the transaction,
// store_txpart.go): the collections whose pages it changes, the NFTs whose read model it
// writes and the items of those it mints. Every transaction has one, for the collection
// pages end after every write.
type nftTx struct {
	touched []string      // the collections whose NFTs or listings this transaction writes
	nfts    []string      // the NFTs whose read model it writes (by their history events)
	minted  []mintedItems // the items of the NFTs it mints, as it writes them
	offers  []string      // the offer versions it creates or consumes
}

func init() { registerTxPart(func() txPart { return new(nftTx) }) }

// nftPart is the transaction's NFT state.
func (tx *Tx) nftPart() *nftTx { return partOf(tx, func() *nftTx { return new(nftTx) }) }

// mark and undo roll back with a savepoint the NFTs minted since; the collections and NFTs
// noted stay, for the index reads an NFT again and a page ends at no cost to what it shows.
func (n *nftTx) mark() int  { return len(n.minted) }
func (n *nftTx) undo(m int) { n.minted = n.minted[:m] }

// beforeCommit tells the other instances, as the transaction commits, which collections'
// pages it changed.
func (n *nftTx) beforeCommit(ctx context.Context, tx *Tx) error {
	return tx.notifyCollections(ctx, n.touched)
}

// afterEnd brings the NFT index to what committed (or may have, when the commit's answer was
// lost) before the write answers, taking what it minted as written only when it surely
// committed; the pages it changed end after that. Whatever ended may have moved a
// collection's statistics, so every write ends the collection pages.
func (n *nftTx) afterEnd(ctx context.Context, s *Store, outcome txOutcome) {
	minted := n.minted
	if outcome != txCommitted {
		minted = nil
	}
	s.nftIndex.sync(ctx, n.nfts, minted, n.offers)
	s.collectionPages.Invalidate("")
	for _, id := range n.touched {
		s.nftPages.Invalidate(id)
	}
}
