package store_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"testing"

	"marketd/store"
	"marketd/store/admin"
	"marketd/store/storetest"
	"marketd/store/translog"
)

func TestSeedDemo_FillsAnEmptyStoreOnceWithConsistentStats(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
		sum, err := s.SeedDemo(ctx, store.DemoOptions{NFTs: 400, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		if sum.NFTs != 400 || len(sum.Collections) < 3 || len(sum.Parties) < 4 || sum.Listings == 0 || sum.Sales == 0 {
			t.Fatalf("seeded %+v", sum)
		}
		page, err := s.Collections(ctx, store.SortNewest, store.PageRequest{Limit: 100})
		if err != nil || len(page.Items) != len(sum.Collections) {
			t.Fatalf("collections %d, %v; want %d", len(page.Items), err, len(sum.Collections))
		}
		nfts, listed, volumeSeen := 0, 0, false
		for _, c := range page.Items {
			if c.Phases[0].Name != "public" || !c.Phases[0].ActiveAt(storetest.Epoch) {
				t.Errorf("%s has no open phase: %+v", c.Slug, c.Phases)
			}
			owners := map[string]bool{}
			n, l := 0, 0
			var floor *store.Amount
			for r := (store.PageRequest{Limit: 100}); ; {
				p, err := s.NFTs(ctx, c.ID, store.NFTFilter{}, store.SortSerial, r)
				if err != nil {
					t.Fatal(err)
				}
				for _, it := range p.Items {
					n++
					owners[it.Owner] = true
					if it.Listing != nil {
						l++
						if floor == nil || it.Listing.Price.Cmp(*floor) < 0 {
							price := it.Listing.Price
							floor = &price
						}
					}
				}
				if p.Cursor == "" {
					break
				}
				r.Cursor = p.Cursor
			}
			if c.Minted != n || c.ListedCount != l || c.Owners != len(owners) || (floor == nil) != (c.FloorPrice == nil) || (floor != nil && !floor.Equal(*c.FloorPrice)) {
				t.Errorf("%s stats minted %d listed %d owners %d floor %v; the NFTs say %d, %d, %d, %v", c.Slug, c.Minted, c.ListedCount, c.Owners, c.FloorPrice, n, l, len(owners), floor)
			}
			nfts += n
			listed += l
			volumeSeen = volumeSeen || c.Volume.IsPositive()
		}
		if nfts != sum.NFTs || listed != sum.Listings || !volumeSeen {
			t.Errorf("NFTs %d listed %d volume %v; the seed said %+v", nfts, listed, volumeSeen, sum)
		}
		if _, err := s.SeedDemo(ctx, store.DemoOptions{NFTs: 400}); store.ErrorCode(err) != store.CodeConflict {
			t.Fatalf("a second seed: %v, want conflict", err)
		}
		again, err := s.Collections(ctx, store.SortNewest, store.PageRequest{Limit: 100})
		if err != nil || len(again.Items) != len(page.Items) {
			t.Fatalf("after a refused second seed there are %d collections", len(again.Items))
		}
	})
}

// Every update the demo seed makes is a transaction prepared for a demo party and executed
// with that party's signature: its log entry carries the bytes the party signed, the
// signature and the party's key, and the party's prepared transaction of those bytes names
// the update. The one exception is the operator's: the pool, which the operator creates as
// marketd pool create does. Collections, phases and the oracle price are no ledger updates.
func TestSeedDemo_EveryUpdateIsExecutedSignedByTheDemoPartyItActsAs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
		before, err := s.LogTree(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := s.SeedDemo(ctx, store.DemoOptions{NFTs: 120, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		entries, err := translog.Audit(storetest.CheckLog(t, s), s.Config().Network, storetest.LogTiles(s))
		if err != nil {
			t.Fatal(err)
		}
		op, err := s.OperatorParty(ctx)
		if err != nil {
			t.Fatal(err)
		}
		keys := map[string][]byte{}               // the demo parties' keys
		executed := map[string]store.PreparedTx{} // the demo parties' prepared transactions by update
		for _, p := range sum.Parties {
			party, err := s.Party(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			keys[p] = party.PublicKey
			ps, err := admin.New(s).LatestPrepared(ctx, p, 100_000)
			if err != nil {
				t.Fatal(err)
			}
			for _, pt := range ps {
				if pt.UpdateID != nil {
					executed[*pt.UpdateID] = pt
				}
			}
		}
		kinds := map[string]int{}
		for _, e := range entries[before.N:] {
			kinds[e.Kind]++
			if e.CommittedBy == translog.CommittedByService && e.ActAs == op && e.Kind == store.KindPoolCreate {
				continue
			}
			key, demo := keys[e.ActAs]
			if e.CommittedBy != translog.CommittedByParty || !demo || !bytes.Equal(e.PublicKey, key) {
				t.Fatalf("update %s (%s as %s) was committed by %s with key %x, not executed signed by the demo party it acts as", e.UpdateID, e.Kind, e.ActAs, e.CommittedBy, e.PublicKey)
			}
			signed, err := store.DecodePrepared(e.PreparedTransaction)
			if err != nil || signed.Kind != e.Kind || signed.ActAs != e.ActAs {
				t.Errorf("update %s (%s as %s) carries a signed transaction that reads %+v, %v", e.UpdateID, e.Kind, e.ActAs, signed, err)
			}
			hash := sha256.Sum256(e.PreparedTransaction)
			if pt, ok := executed[e.UpdateID]; !ok || !bytes.Equal(pt.Hash, hash[:]) || pt.Kind != e.Kind {
				t.Errorf("update %s (%s as %s) is no execute of the prepared transaction it carries", e.UpdateID, e.Kind, e.ActAs)
			}
		}
		for _, k := range []string{store.KindOnboard, store.KindTap, store.KindNFTPreapproval, store.KindUSDCxPreapproval,
			store.KindNFTMint, store.KindNFTList, store.KindNFTBuy, store.KindLPQuote, store.KindSwapIntent} {
			if kinds[k] == 0 {
				t.Errorf("the seed made no %s update: %v", k, kinds)
			}
		}
		if want := 5*len(sum.Parties) + sum.Sales + sum.LPQuotes + sum.Swaps + 1; len(entries)-int(before.N) < want {
			t.Errorf("the seed made %d updates, fewer than the %d its summary %+v counts", len(entries)-int(before.N), want, sum)
		}
	})
}

// The traders' funds grow with what the market makes them spend: at a thousand times the
// demo's prices, one party mints a whole collection for several million, more than the
// fixed million each party used to be tapped, and the seed still completes with every
// planned NFT minted.
func TestSeedDemo_FundsScaleWithWhatTheMarketSpends(t *testing.T) {
	store.ScaleDemoPrices(t, 1000)
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
		sum, err := s.SeedDemo(ctx, store.DemoOptions{NFTs: 400, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		if sum.NFTs != 400 || sum.Sales == 0 {
			t.Fatalf("seeded %+v", sum)
		}
	})
}
