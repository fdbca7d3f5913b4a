package store

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/uptrace/bun"
)

// selects counts the SELECT statements a store sends for a request.
type selects struct {
	mu sync.Mutex
	n  int
}

func (c *selects) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }
func (c *selects) AfterQuery(ctx context.Context, e *bun.QueryEvent) {
	if !InBackground(ctx) && strings.HasPrefix(strings.TrimSpace(e.Query), "SELECT") {
		c.mu.Lock()
		c.n++
		c.mu.Unlock()
	}
}

func (c *selects) take() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = 0
	return n
}

// A mint prepare during a drop reads the collection with its open phase and the minter's
// count and allow-list place in it in one statement, then the minter's holdings and their
// claims: three reads, as many as a transfer's, so the crowd's prepares hold the pool no
// longer than transfers do; a second mint of the same wallet sees the count the first left,
// and a collection that is not there is still not found. Its execute finds its batch without
// reading the row the prepare wrote (this store remembers it), still refuses another key's
// signature, and answers the same receipt when sent again.
func TestPrepareMint_ReadsTheCollectionAndTheMintersPhaseInOneStatement(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *Store, clock *ledgerClock) {
		ctx := context.Background()
		d := openMintDrop(t, s, clock, 10)
		m, _ := d.minter(t, "m")
		if _, err := s.Party(ctx, m.id); err != nil { // the party is remembered after one read
			t.Fatal(err)
		}
		count := &selects{}
		s.AddQueryHook(count)
		for _, ref := range []string{d.col.ID, d.col.Slug} {
			count.take()
			if _, err := s.PrepareMint(ctx, m.id, ref, 1); err != nil {
				t.Fatal(err)
			}
			if n := count.take(); n > 3 {
				t.Errorf("a mint prepare of %s sent %d SELECTs, want at most 3", ref, n)
			}
		}
		// Its execute finds its batch without reading the row the prepare wrote: the batch
		// reads it under its lock, with the collection, its phase, the minter's count, the
		// items to mint and the owners' counts.
		prep, err := s.PrepareMint(ctx, m.id, d.col.ID, 1)
		if err != nil {
			t.Fatal(err)
		}
		x := Execution{Kinds: []string{KindNFTMint}, Hash: prep.Hash, Signature: m.Sign(prep.Hash), Caller: m.id}
		forged := x
		forged.Signature = d.creator.Sign(prep.Hash)
		if _, err := s.Execute(ctx, forged); ErrorCode(err) != CodeInvalidSignature {
			t.Fatalf("an execute signed by another key: %v, want invalid signature", err)
		}
		count.take()
		receipt, err := s.Execute(ctx, x)
		if err != nil {
			t.Fatal(err)
		}
		// 7 for the mint, and the transparency log's read of the offsets and its head under the
		// offset lock (ledger_log.go), which every commit makes once.
		if n := count.take(); n > 8 {
			t.Errorf("a mint execute sent %d SELECTs, want at most 8", n)
		}
		if again, err := s.Execute(ctx, x); err != nil || string(again) != string(receipt) {
			t.Fatalf("the execute sent again: %s, %v; want the first receipt %s", again, err, receipt)
		}
		if _, err := s.PrepareMint(ctx, m.id, d.col.ID, 1); ErrorCode(err) != CodeConflict {
			t.Fatalf("a second mint past the phase's limit of 1: %v, want conflict", err)
		}
		if _, err := s.PrepareMint(ctx, m.id, "no-such-drop", 1); ErrorCode(err) != CodeNotFound {
			t.Fatalf("a mint of a collection that is not there: %v, want not found", err)
		}
	})
}
