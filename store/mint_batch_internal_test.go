package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/uptrace/bun"
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
