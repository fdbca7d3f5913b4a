package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"marketd/store/internal/nftindex"
)

// inserts counts the INSERT statements a store runs per table.
type inserts struct {
	mu      sync.Mutex
	byTable map[string]int
}

func (c *inserts) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }
func (c *inserts) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(e.Query), `INSERT INTO "`)
	if !ok {
		return
	}
	table, _, _ := strings.Cut(rest, `"`)
	c.mu.Lock()
	c.byTable[table]++
	c.mu.Unlock()
}

// A batch of mints writes the read model of all the NFTs it mints with one INSERT per table
// (SQLite runs each statement it sends in process, so the count is seen there; PostgreSQL
// gets the same statements in the batch's one round trip of writes), and each NFT's item and
// history event are still its own mint's: owned by its minter, minted by its update.
func TestMintBatch_WritesTheMintedNFTsWithOneInsertPerTable(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *Store, clock *ledgerClock) {
		ctx := context.Background()
		d := openMintDrop(t, s, clock, 20)
		var reqs []*executeRequest
		var minters []string
		for i := range 8 {
			p, _ := d.minter(t, fmt.Sprintf("m%d", i))
			reqs, minters = append(reqs, d.prepare(t, p)), append(minters, p.id)
		}
		count := &inserts{byTable: map[string]int{}}
		s.AddQueryHook(count)
		out := d.apply(t, reqs...)
		count.mu.Lock()
		if s.dialect != Postgres {
			for _, table := range []string{"nft_items", "nft_activity"} {
				if n := count.byTable[table]; n != 1 {
					t.Errorf("a batch of %d mints sent %d INSERTs into %s, want 1", len(reqs), n, table)
				}
			}
		}
		count.mu.Unlock()
		for i, r := range out {
			if r.err != nil {
				t.Fatalf("mint %d: %v", i, r.err)
			}
			var minted struct {
				MintResult
				UpdateID string `json:"updateId"`
			}
			if err := json.Unmarshal(r.receipt, &minted); err != nil || len(minted.ContractIDs) != 1 {
				t.Fatalf("mint %d: receipt %s: %v", i, r.receipt, err)
			}
			var item nftItem
			if err := s.db.NewSelect().Model(&item).Where("contract_id = ?", minted.ContractIDs[0]).Scan(ctx); err != nil {
				t.Fatalf("mint %d: its item: %v", i, err)
			}
			if item.Owner != minters[i] {
				t.Errorf("mint %d: item %s owned by %s, want its minter %s", i, item.NFTID, item.Owner, minters[i])
			}
			var events []nftActivity
			if err := s.db.NewSelect().Model(&events).Where("nft_id = ?", item.NFTID).Scan(ctx); err != nil {
				t.Fatal(err)
			}
			if len(events) != 1 || events[0].Kind != EventMinted || events[0].UpdateID != minted.UpdateID || events[0].To == nil || *events[0].To != minters[i] {
				t.Errorf("mint %d: history of %s is %+v, want one mint by update %s to %s", i, item.NFTID, events, minted.UpdateID, minters[i])
			}
		}
	})
}

// itemReads counts the reads of nft_items a store sends outside its background work.
type itemReads struct{ n atomic.Int64 }

func (c *itemReads) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }
func (c *itemReads) AfterQuery(ctx context.Context, e *bun.QueryEvent) {
	q := strings.TrimSpace(e.Query)
	if !InBackground(ctx) && strings.HasPrefix(q, "SELECT") && strings.Contains(q, `FROM "nft_items"`) {
		c.n.Add(1)
	}
}

// The NFT index takes the NFTs a batch minted as the batch wrote them: the batch answers
// with its NFTs in the index, each its minter's, without reading them back after the commit.
func TestMintBatch_TheIndexTakesTheMintedNFTsWithoutReadingThemBack(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *Store, clock *ledgerClock) {
		ctx := context.Background()
		s.StartNFTIndex()
		if err := s.AwaitNFTIndex(ctx); err != nil {
			t.Fatal(err)
		}
		d := openMintDrop(t, s, clock, 20)
		first, _ := d.minter(t, "first")
		if r := d.apply(t, d.prepare(t, first)); r[0].err != nil { // the index now has the collection
			t.Fatal(r[0].err)
		}
		var reqs []*executeRequest
		owners := map[string]string{} // contract id -> minter
		minters := make([]string, 4)
		for i := range minters {
			p, _ := d.minter(t, fmt.Sprintf("m%d", i))
			reqs, minters[i] = append(reqs, d.prepare(t, p)), p.id
		}
		reads := &itemReads{}
		s.AddQueryHook(reads)
		for i, r := range d.apply(t, reqs...) {
			var minted MintResult
			if r.err != nil || json.Unmarshal(r.receipt, &minted) != nil || len(minted.ContractIDs) != 1 {
				t.Fatalf("mint %d: %s, %v", i, r.receipt, r.err)
			}
			owners[minted.ContractIDs[0]] = minters[i]
		}
		if n := reads.n.Load(); n != 0 {
			t.Errorf("a batch of %d mints read nft_items %d times, want 0", len(reqs), n)
		}
		page, err := s.IndexedNFTs(ctx, d.col.ID, NFTFilter{}, NFTSort(""), PageRequest{Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, n := range page.Items {
			if want, ok := owners[n.ContractID]; ok {
				seen++
				if n.Owner != want {
					t.Errorf("NFT %s in the index is %s's, want its minter %s", n.ContractID, n.Owner, want)
				}
			}
		}
		if seen != len(owners) {
			t.Errorf("the index has %d of the %d NFTs the batch minted", seen, len(owners))
		}
	})
}

// A serial the index saw go is not put back by a mint's items: a serial is minted once, so
// only a read after the commit can have seen it go, and that read is newer than the items.
func TestNFTIndex_PutMintedLeavesASerialSeenGoneOrHeld(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *Store, _ *ledgerClock) {
		x := s.nftIndex
		c := x.index.Add("col")
		held := nftItem{NFTID: "col#2", CollectionID: "col", Serial: 2, Owner: "newer", ContractID: "c2", Traits: "[]"}
		c.Put(held.indexed())
		c.Gone(1)
		minted := []mintedItems{{into: c, items: []nftItem{
			{NFTID: "col#1", CollectionID: "col", Serial: 1, Owner: "a", ContractID: "c1", Traits: "[]"},
			{NFTID: "col#2", CollectionID: "col", Serial: 2, Owner: "a", ContractID: "c2", Traits: "[]"},
			{NFTID: "col#3", CollectionID: "col", Serial: 3, Owner: "a", ContractID: "c3", Traits: "[]"},
		}}}
		left := x.putMinted(minted, []string{"col#1", "col#2", "col#3", "other#1"})
		if len(left) != 1 || left[0] != "other#1" {
			t.Errorf("left to read: %v, want [other#1]", left)
		}
		owners := map[uint32]string{} // serial -> owner, as the index has them
		for _, n := range c.Page(&nftindex.Query{Limit: 10}, time.Now()) {
			owners[n.Serial] = n.Owner
		}
		if _, ok := owners[1]; ok {
			t.Errorf("serial 1, seen gone, was put back")
		}
		if owners[2] != "newer" {
			t.Errorf("serial 2, held, was replaced")
		}
		if owners[3] != "a" {
			t.Errorf("serial 3, fresh, was not put")
		}
		// Items of a collection index built again since the transaction ran are read, not put.
		stale := []mintedItems{{into: nftindex.NewCollection("col"), items: []nftItem{{NFTID: "col#4", CollectionID: "col", Serial: 4, Traits: "[]"}}}}
		if left := x.putMinted(stale, []string{"col#4"}); len(left) != 1 {
			t.Errorf("left to read of a rebuilt collection: %v, want [col#4]", left)
		}
	})
}
