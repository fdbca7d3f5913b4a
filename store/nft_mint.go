package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"marketd/store/wallet"
)

type mintEffects = wallet.MintEffects

// mintCheck refuses a mint of quantity by party in phase ph of c that the phase's rules or
// the supplies do not allow; minted is what the party has minted in the phase. Limits
// reached are conflict at prepare and stale at execute (the ledger moved on).
func mintCheck(c *Collection, ph *MintPhase, allowed bool, minted, quantity int, limitCode Code) error {
	if ph.AllowList && !allowed {
		return Errorf(CodeNotAllowlisted, "this party is not on the allow-list of phase %q of %s", ph.Name, c.Slug)
	}
	if minted+quantity > ph.PerPartyLimit {
		return Errorf(limitCode, "phase %q allows %d per party; this party has minted %d", ph.Name, ph.PerPartyLimit, minted)
	}
	if ph.Supply != nil && ph.Minted+quantity > *ph.Supply {
		return Errorf(limitCode, "phase %q has %d of its %d left", ph.Name, *ph.Supply-ph.Minted, *ph.Supply)
	}
	if c.Minted+quantity > c.Supply {
		return Errorf(limitCode, "collection %s has %d of its %d left to mint", c.Slug, c.Supply-c.Minted, c.Supply)
	}
	return nil
}

// mintablePhase is a collection's phase active now, with the collection and what a mint
// check needs of one party in the phase.
type mintablePhase struct {
	MintPhase `bun:",extend"`

	Collection  *Collection `bun:"rel:belongs-to,join:collection_id=collection_id"`
	PartyMinted int         `bun:"party_minted,scanonly"` // what the party minted in the phase
	Allowed     bool        `bun:"allowed,scanonly"`      // the party is on the phase's allow-list
}

// mintablePhase reads the collection named ref (its id or slug) as stored now, its phase
// active at now (the latest started when several are) and the party's count and place in
// it, in one statement. A collection without an active phase is conflict.
func (s *Store) mintablePhase(ctx context.Context, ref, party string, now time.Time) (*mintablePhase, error) {
	var ph []mintablePhase
	err := s.db.NewSelect().Model(&ph).ColumnExpr("mint_phase.*").Relation("Collection").
		ColumnExpr("COALESCE((SELECT pm.minted FROM phase_mints AS pm WHERE pm.collection_id = mint_phase.collection_id AND pm.phase = mint_phase.name AND pm.party_id = ?), 0) AS party_minted", party).
		ColumnExpr("EXISTS (SELECT 1 FROM phase_allow AS pa WHERE pa.collection_id = mint_phase.collection_id AND pa.phase = mint_phase.name AND pa.party_id = ?) AS allowed", party).
		Where("collection.collection_id = ? OR collection.slug = ?", ref, ref).
		Where("mint_phase.start_at <= ?", At(now)).Where("mint_phase.end_at > ?", At(now)).
		Order("mint_phase.start_at DESC").Limit(1).Scan(ctx)
	if err != nil {
		return nil, err
	}
	if len(ph) == 0 { // no collection, or none minting now: which one, the answer says
		c, err := s.collectionByIDOrSlug(ctx, ref)
		if err != nil {
			return nil, err
		}
		return nil, Errorf(CodeConflict, "collection %s has no active mint phase now", c.Slug)
	}
	return &ph[0], nil
}

// PrepareMint prepares a mint of quantity NFTs from the collection's active phase, paying
// the phase price to the creator. Serials are assigned at execute, in mint order. It reads
// the collection as stored now (not as cached) with the phase and the minter's count in it,
// under no lock: the execute checks them again under the collection's.
func (s *Store) PrepareMint(ctx context.Context, minter, collectionID string, quantity int) (*Prepared, error) {
	if quantity < 1 || quantity > MaxBatch {
		return nil, Errorf(CodeInvalidRequest, "quantity must be 1 to %d", MaxBatch)
	}
	ph, err := s.mintablePhase(ctx, collectionID, minter, s.now())
	if err != nil {
		return nil, err
	}
	c := ph.Collection
	if err := mintCheck(c, &ph.MintPhase, ph.Allowed, ph.PartyMinted, quantity, CodeConflict); err != nil {
		return nil, err
	}
	total := ph.Price.MulFloor(decimal.NewFromInt(int64(quantity)), c.Currency.Decimals())
	pay, claims, err := s.preparePayment(ctx, minter, c.Currency, []newHolding{{Owner: c.Creator, Amount: total}}, nil)
	if err != nil {
		return nil, err
	}
	e := mintEffects{Minter: minter, CollectionID: c.ID, Slug: c.Slug, Phase: ph.Name, Quantity: quantity, Price: ph.Price, Currency: c.Currency, Creator: c.Creator, Payment: pay}
	summary := map[string]any{
		"action":     fmt.Sprintf("mint %d NFT(s) of %s in phase %q", quantity, c.Name, ph.Name),
		"collection": c.ID, "phase": ph.Name, "quantity": quantity, "price": ph.Price, "total": total, "currency": c.Currency, "paidTo": c.Creator,
	}
	return s.prepareAs(ctx, KindNFTMint, minter, e, summary, claims)
}

// MintResult is what a mint execute adds to the receipt.
type MintResult struct {
	ContractIDs []string `json:"contractIds"`
}

// mintedRows is what mints write to the NFT read model: the items they mint, the items'
// traits and their history events, gathered for all the mints of a batch, so each table gets
// one INSERT.
type mintedRows struct {
	items  []nftItem
	traits []nftTrait
	events []nftActivity
}

// add gathers the rows of the NFTs nfts, minted from items at price as the update u.
func (m *mintedRows) add(tx *Tx, u *Update, c *Collection, items []collectionItem, nfts []*NFT, price Amount) error {
	events := make([]nftActivity, len(items))
	for i, it := range items {
		m.items = append(m.items, nftItem{NFTID: nfts[i].NFTID, CollectionID: c.ID, Serial: it.Serial, Meta: it.Meta, Traits: it.Traits,
			Owner: nfts[i].Owner, ContractID: nfts[i].CID, PriceAscKey: noKey, PriceDescKey: noKey})
		var ts []Trait
		if err := json.Unmarshal([]byte(it.Traits), &ts); err != nil {
			return fmt.Errorf("nft: traits of %s #%d: %w", c.ID, it.Serial, err)
		}
		for _, tr := range ts {
			m.traits = append(m.traits, nftTrait{CollectionID: c.ID, Type: tr.Type, Value: tr.Value, Serial: it.Serial})
		}
		p, cur := price, c.Currency
		events[i] = nftActivity{NFTID: nfts[i].NFTID, CollectionID: c.ID, Kind: EventMinted, To: strPtr(nfts[i].Owner), Price: &p, Currency: &cur}
	}
	tx.stampEvents(u, events)
	m.events = append(m.events, events...)
	return nil
}

// writeMinted writes the gathered rows, one INSERT per table.
func (tx *Tx) writeMinted(ctx context.Context, m *mintedRows) error {
	if len(m.items) == 0 {
		return nil
	}
	if err := tx.Later(ctx, tx.NewInsert().Model(&m.items)); err != nil {
		return fmt.Errorf("nft: minted items: %w", err)
	}
	if len(m.traits) > 0 {
		if err := tx.Later(ctx, tx.NewInsert().Model(&m.traits)); err != nil {
			return fmt.Errorf("nft: minted traits: %w", err)
		}
	}
	if err := tx.Later(ctx, tx.NewInsert().Model(&m.events)); err != nil {
		return fmt.Errorf("nft: minted events: %w", err)
	}
	into := tx.s.nftIndex.index.Collection(m.items[0].CollectionID)
	n := tx.nftPart()
	n.minted = append(n.minted, mintedItems{into: into, items: m.items})
	return nil
}
