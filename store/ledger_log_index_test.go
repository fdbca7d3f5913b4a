package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// receipts keeps what the receipts of a test's executes said: each update's logIndex.
type receipts map[string]int64

// add records a receipt's updateId and logIndex and returns the receipt's fields.
func (rs receipts) add(t *testing.T, r store.Receipt) map[string]any {
	t.Helper()
	id, n := storetest.ReceiptLogIndex(t, r)
	rs[id] = n
	var fields map[string]any
	if err := json.Unmarshal(r, &fields); err != nil {
		t.Fatal(err)
	}
	return fields
}

// check fails unless view shows update updateID at the logIndex its receipt gave, which is
// the index of the update's entry in the log.
func (rs receipts) check(t *testing.T, indexes map[string]int64, view, updateID string, logIndex *int64) {
	t.Helper()
	if _, ok := rs[updateID]; !ok {
		t.Fatalf("%s shows update %s, which no execute of the test committed", view, updateID)
	}
	storetest.WantLogIndex(t, indexes, rs, view, updateID, logIndex)
}

func TestLogIndex_EveryViewOfAnNFTsEventsShowsTheUpdatesLogEntry(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		clock := storetest.NewClock(storetest.Epoch)
		s := b.Open(t, storetest.Config(clock))
		creator, seller, buyer := storetest.Onboard(t, s, "creator"), storetest.Onboard(t, s, "seller"), storetest.Onboard(t, s, "buyer")
		buyer.Tap(t, s, store.CC, "50")
		col, err := s.CreateCollection(ctx, store.CollectionSpec{Slug: "apes", Name: "Apes", Creator: creator.ID, Currency: store.CC, Supply: 1})
		if err != nil {
			t.Fatal(err)
		}
		now := clock.Now()
		if _, err := s.AddPhase(ctx, store.PhaseSpec{Collection: col.ID, Name: "free", Price: "0", Start: now.Add(-time.Hour), End: now.Add(time.Hour), PerPartyLimit: 1}); err != nil {
			t.Fatal(err)
		}
		logged := receipts{}
		exec := func(p *storetest.Party, kind string, prep *store.Prepared, err error) map[string]any {
			t.Helper()
			if err != nil {
				t.Fatalf("%s prepare: %v", kind, err)
			}
			r, err := p.Execute(s, kind, prep)
			if err != nil {
				t.Fatalf("%s execute: %v", kind, err)
			}
			return logged.add(t, r)
		}
		prep, err := s.PrepareMint(ctx, seller.ID, col.ID, 1)
		contractID := exec(seller, store.KindNFTMint, prep, err)["contractIds"].([]any)[0].(string)
		prep, err = s.PrepareList(ctx, seller.ID, []store.ListingTerms{{ContractID: contractID, Price: "5"}})
		exec(seller, store.KindNFTList, prep, err)
		listed, err := s.NFTByContract(ctx, contractID)
		if err != nil || listed.Listing == nil {
			t.Fatalf("the listed NFT: %+v, %v", listed, err)
		}
		prep, err = s.PrepareBuy(ctx, buyer.ID, listed.Listing.CID)
		exec(buyer, store.KindNFTBuy, prep, err)
		indexes := storetest.LogIndexes(t, s)

		checkAll := func(view string, events []store.NFTEvent) {
			t.Helper()
			if len(events) != 3 {
				t.Fatalf("%s shows %d events, want the mint, the listing and the sale", view, len(events))
			}
			for _, e := range events {
				logged.check(t, indexes, view+" "+e.Kind, e.UpdateID, e.LogIndex)
			}
		}
		detail, err := s.NFTByContract(ctx, contractID)
		if err != nil {
			t.Fatal(err)
		}
		checkAll("the NFT's detail", detail.History)
		ref := detail.Ref()
		page, err := s.NFTHistory(ctx, ref, store.PageRequest{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		checkAll("the NFT's history", page.Items)
		pages, err := s.NFTHistories(ctx, []store.NFTRef{ref}, store.PageRequest{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		checkAll("a batch of histories", pages[ref].Items)
		feed, err := s.CollectionActivityAfter(ctx, col.ID, store.LogPosition{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		events := make([]store.NFTEvent, len(feed))
		for i, e := range feed {
			events[i] = e.NFTEvent
		}
		checkAll("the collection's activity", events)
	})
}

func TestLogIndex_EveryViewOfAFillShowsItsUpdatesLogEntry(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		w := newSwapWorld(t, b, 30)
		lp, taker := w.party("lp", "", "100"), w.party("taker", "20", "")
		w.quote(lp, store.SideBid, "2.4", "10")
		logged := receipts{}
		prep, err := w.s.PrepareSwap(ctx, taker.ID, store.SwapTerms{PoolID: w.pool.PoolID, Sell: "CC", Amount: "2", MinReceive: "4.5", Deadline: w.in(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		r, err := taker.Execute(w.s, store.KindSwapIntent, prep)
		if err != nil {
			t.Fatal(err)
		}
		if status := logged.add(t, r)["intentStatus"]; status != store.IntentFilled {
			t.Fatalf("the swap is %v, want it filled", status)
		}
		indexes := storetest.LogIndexes(t, w.s)

		checkAll := func(view string, fills []store.IntentView) {
			t.Helper()
			if len(fills) != 1 {
				t.Fatalf("%s shows %d fills, want the one swap", view, len(fills))
			}
			o := fills[0].Outcome()
			logged.check(t, indexes, view, o.UpdateID, o.LogIndex)
		}
		pool, err := w.s.SwapHistory(ctx, store.SwapHistoryFilter{PoolID: w.pool.PoolID}, store.PageRequest{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		checkAll("the pool's history", pool.Items)
		mine, err := w.s.SwapHistory(ctx, store.SwapHistoryFilter{Taker: taker.ID, Viewer: taker.ID}, store.PageRequest{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		checkAll("the taker's history", mine.Items)
		feed, err := w.s.PoolOutcomesAfter(ctx, w.pool.PoolID, store.LogPosition{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		fills := make([]store.IntentView, len(feed))
		for i, f := range feed {
			fills[i] = f.IntentView
		}
		checkAll("the pool's outcomes feed", fills)
	})
}

func TestLogIndex_ARewardShowsItsUpdatesLogEntry(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s, _, _ := openLedger(t, b)
		alice, bob := storetest.Onboard(t, s, "alice"), storetest.Onboard(t, s, "bob")
		alice.Tap(t, s, store.CC, "50")
		prep, err := s.PrepareCCTransfer(ctx, alice.ID, bob.ID, store.MustAmount("20"))
		if err != nil {
			t.Fatal(err)
		}
		r, err := alice.Execute(s, store.KindCCTransfer, prep)
		if err != nil {
			t.Fatal(err)
		}
		logged := receipts{}
		logged.add(t, r)
		indexes := storetest.LogIndexes(t, s)
		page, err := s.RewardHistory(ctx, alice.ID, store.PageRequest{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) != 1 {
			t.Fatalf("alice's rewards: %+v, want the transfer's", page.Items)
		}
		logged.check(t, indexes, "alice's rewards", page.Items[0].UpdateID, page.Items[0].LogIndex)
	})
}
