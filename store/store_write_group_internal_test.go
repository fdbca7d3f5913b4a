package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Prepares that arrive while the writer is busy are written together, and each gets its own
// answer: all of them written when they succeed, and a write that fails (here, a second
// prepared transaction under a hash already taken) fails alone, the others of its group
// written.
func TestWriteAll_WritesWaitingMeanwhileAreWrittenInOneGroupEachAnsweredAlone(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *Store, clock *ledgerClock) {
		ctx := context.Background()
		p := onboardKeyed(t, s, "taps")
		row := func(hash string) writeQuery {
			return s.wdb.NewInsert().Model(&PreparedTx{Hash: []byte(hash), Kind: KindTap, ActAs: p.id, SignerKey: []byte("k"), Body: []byte("{}"),
				PreparedAt: At(clock.Now()), ExpiresAt: At(clock.Now().Add(time.Minute))})
		}
		if err := s.writeAll(ctx, row("taken")); err != nil {
			t.Fatal(err)
		}
		const n = 24
		busy := make(chan error, 1)
		go func() { busy <- s.SlowWrite(ctx, 300*time.Millisecond) }() // the writer taken while they arrive
		time.Sleep(50 * time.Millisecond)
		hashes := make([]string, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				if i == n/2 { // under a hash already taken: refused
					hashes[i], errs[i] = "taken", s.writeAll(ctx, row("taken"))
					return
				}
				prep, err := s.PrepareTap(ctx, p.id, CC, MustAmount(fmt.Sprintf("%d", i+1)))
				if err == nil {
					hashes[i] = string(prep.Hash)
				}
				errs[i] = err
			})
		}
		wg.Wait()
		if err := <-busy; err != nil {
			t.Fatal(err)
		}
		for i, err := range errs {
			if i == n/2 {
				if !isUniqueViolation(err) {
					t.Errorf("the write under a taken hash: %v, want a unique key refused", err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("prepare %d: %v", i, err)
			}
			var got []PreparedTx
			if err := s.db.NewSelect().Model(&got).Where("hash = ?", []byte(hashes[i])).Scan(ctx); err != nil || len(got) != 1 {
				t.Fatalf("prepare %d: %d rows of %s written (%v)", i, len(got), hashes[i], err)
			}
		}
		if s.dialect == SQLite && s.writeGroups.shared.Load() < n-1 {
			t.Errorf("of the %d writes that waited for the writer, %d were written in a group with others", n, s.writeGroups.shared.Load())
		}
	})
}
