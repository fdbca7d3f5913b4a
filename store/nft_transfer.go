package store

import (
	"context"
	"fmt"

	"marketd/store/wallet"
)

type moveEffects = wallet.MoveEffects

// PrepareTransfer prepares giving one of the owner's NFTs to receiver, withdrawing its
// listing if it has one. The receiver needs an active NFT preapproval.
func (s *Store) PrepareTransfer(ctx context.Context, owner, contractID, receiver string) (*Prepared, error) {
	if err := checkPartyID("receiver", receiver); err != nil {
		return nil, err
	}
	if receiver == owner {
		return nil, Errorf(CodeInvalidRequest, "the receiver owns the NFT already")
	}
	if _, err := s.Party(ctx, receiver); err != nil {
		return nil, err
	}
	return s.prepareMove(ctx, KindNFTTransfer, owner, contractID, receiver)
}

// PrepareBurn prepares destroying one of the owner's NFTs for good, withdrawing its listing
// if it has one.
func (s *Store) PrepareBurn(ctx context.Context, owner, contractID string) (*Prepared, error) {
	return s.prepareMove(ctx, KindNFTBurn, owner, contractID, "")
}

func (s *Store) prepareMove(ctx context.Context, kind, owner, contractID, receiver string) (*Prepared, error) {
	n, err := s.liveNFT(ctx, contractID, owner)
	if err != nil {
		return nil, err
	}
	if receiver != "" {
		if err := checkPreapproval(ctx, s.db, receiver, PreapprovalNFT, s.now()); err != nil {
			return nil, err
		}
	}
	e := moveEffects{Owner: owner, Receiver: receiver, NFTCID: n.CID, NFTID: n.NFTID, CollectionID: n.CollectionID}
	claims := []string{n.CID}
	if l, err := activeListingOf(ctx, s.db, n.CID); err != nil {
		return nil, err
	} else if l != nil {
		e.Listing = l.CID
		claims = append(claims, l.CID)
	}
	action := fmt.Sprintf("transfer NFT %s to %s", n.NFTID, receiver)
	if receiver == "" {
		action = fmt.Sprintf("burn NFT %s for good", n.NFTID)
	}
	summary := map[string]any{"action": action, "owner": owner, "nft": n.CID}
	if receiver != "" {
		summary["receiver"] = receiver
	}
	if e.Listing != "" {
		summary["withdrawsListing"] = e.Listing
	}
	return s.prepareAs(ctx, kind, owner, e, summary, claims)
}

// TransferResult is what a transfer execute adds to the receipt.
type TransferResult struct {
	ContractID string `json:"contractId"`
}

func applyMove(ctx context.Context, tx *Tx, u *Update, e *moveEffects) (any, error) {
	ct, err := tx.lockCollection(ctx, e.CollectionID)
	if err != nil {
		return nil, err
	}
	it, err := tx.item(ctx, e.NFTID)
	if err != nil {
		if isNoRows(err) {
			return nil, Errorf(CodeStale, "NFT %s was burned since this transaction was prepared", e.NFTID)
		}
		return nil, err
	}
	if it.ListingCID != nil && *it.ListingCID != e.Listing {
		// Listed since the prepare: prepared again, the transaction withdraws that listing.
		return nil, Errorf(CodeStale, "NFT %s was listed (listing %s) since this transaction was prepared; prepare it again", e.NFTID, *it.ListingCID)
	}
	t := &Transaction{Consume: []ContractRef{{Template: templateNFT, CID: e.NFTCID}}, BurnAssets: e.Receiver == ""}
	if e.Listing != "" {
		t.Consume = append(t.Consume, ContractRef{Template: templateListing, CID: e.Listing})
	}
	var next *NFT
	if e.Receiver != "" {
		next = &NFT{NFTID: e.NFTID, CollectionID: e.CollectionID, Serial: it.Serial, Owner: e.Receiver}
		t.Create = []Contract{next}
	}
	if err := tx.s.ledger.Commit(ctx, tx.Tx, u, t); err != nil {
		return nil, err
	}
	if e.Listing != "" {
		ct.delisted()
	}
	ev := nftActivity{NFTID: e.NFTID, CollectionID: e.CollectionID, From: strPtr(e.Owner)}
	var res any
	if next != nil {
		it.Owner, it.ContractID = e.Receiver, next.CID
		it.setListing(nil)
		if err := tx.saveItem(ctx, it); err != nil {
			return nil, err
		}
		ct.move(e.Owner, e.Receiver)
		ev.Kind, ev.To = EventTransferred, strPtr(e.Receiver)
		res = TransferResult{ContractID: next.CID}
	} else {
		if _, err := tx.NewDelete().Model(it).WherePK().Exec(ctx); err != nil {
			return nil, err
		}
		if err := tx.Later(ctx, tx.NewDelete().Model((*nftTrait)(nil)).Where("collection_id = ?", e.CollectionID).Where("serial = ?", it.Serial)); err != nil {
			return nil, err
		}
		ct.move(e.Owner, "")
		ct.c.Burned++
		ev.Kind = EventBurned
	}
	if err := tx.nftEvents(ctx, u, []nftActivity{ev}); err != nil {
		return nil, err
	}
	return res, ct.close(ctx)
}
