package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// BenchmarkActivityAndStatsByHistory reads a collection's activity feed (the first page, a
// page deep in it, a page of one kind) and its stats, on a collection of 100 NFTs whose
// history is 1x (about 2,000 events) in one store and 10x as long in another, written through
// the same prepares and executes users call (batch lists and cancels over the days, sales,
// offers made, accepted and cancelled). What it shows is what a page costs as history grows;
// the target is 10x within 1.3x of 1x. Each read runs on the 1x store and then on the 10x
// store, in rounds (MARKETD_BENCH_ROUNDS, 5 by default), so the host's drift falls on both;
// the ratio of the time summed over the rounds is logged (-v).
//
//	go test ./store -run '^$' -bench BenchmarkActivityAndStatsByHistory -benchtime 2000x -v
func BenchmarkActivityAndStatsByHistory(b *testing.B) {
	rounds := 5
	if v := os.Getenv("MARKETD_BENCH_ROUNDS"); v != "" {
		var err error
		if rounds, err = strconv.Atoi(v); err != nil || rounds < 1 {
			b.Fatalf("MARKETD_BENCH_ROUNDS=%q: want a count of rounds", v)
		}
	}
	for _, be := range storetest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			ctx := context.Background()
			type market struct {
				s    *store.Store
				h    *history
				deep string // a cursor a page deep in the feed
			}
			scales := []int{1, 10}
			markets := make([]market, len(scales))
			for i, scale := range scales {
				clock := storetest.NewClock(storetest.Epoch)
				cfg := storetest.Config(clock)
				cfg.PageCacheTTL = -1
				s := be.Open(b, cfg)
				h := newHistory(b, s, clock)
				h.grow(b, 2000*scale)
				b.Logf("%dx: %d events", scale, h.events)
				analyze(b, be, s)
				p, err := s.CollectionActivity(ctx, h.col.ID, nil, store.PageRequest{Limit: store.MaxPageSize})
				if err != nil {
					b.Fatal(err)
				}
				markets[i] = market{s: s, h: h, deep: p.Cursor}
			}
			reads := []struct {
				name string
				do   func(m market) error
			}{
				{"activity-first", func(m market) error {
					_, err := m.s.CollectionActivity(ctx, m.h.col.ID, nil, store.PageRequest{})
					return err
				}},
				{"activity-deep", func(m market) error {
					_, err := m.s.CollectionActivity(ctx, m.h.col.ID, nil, store.PageRequest{Cursor: m.deep})
					return err
				}},
				{"activity-kinds", func(m market) error {
					_, err := m.s.CollectionActivity(ctx, m.h.col.ID, []string{store.EventSold, store.EventOfferAccepted}, store.PageRequest{})
					return err
				}},
				{"stats", func(m market) error {
					_, err := m.s.Stats(ctx, m.h.col.ID)
					return err
				}},
			}
			took := map[string][][]time.Duration{} // by read, then round: ns/op at each scale
			for round := range rounds {
				for _, read := range reads {
					took[read.name] = append(took[read.name], make([]time.Duration, len(scales)))
					for i, m := range markets {
						b.Run(fmt.Sprintf("%s-%dx", read.name, scales[i]), func(b *testing.B) {
							for b.Loop() {
								if err := read.do(m); err != nil {
									b.Fatal(err)
								}
							}
							took[read.name][round][i] = b.Elapsed() / time.Duration(b.N)
						})
					}
				}
			}
			for _, read := range reads {
				var sum [2]time.Duration
				var each []string
				for _, r := range took[read.name] {
					sum[0], sum[1] = sum[0]+r[0], sum[1]+r[1]
					each = append(each, fmt.Sprintf("%.2f", float64(r[1])/float64(r[0])))
				}
				b.Logf("%s: 10x/1x %.2f over %d rounds (%v against %v an op; rounds %s)", read.name, float64(sum[1])/float64(sum[0]), rounds,
					(sum[1] / time.Duration(rounds)).Round(time.Microsecond), (sum[0] / time.Duration(rounds)).Round(time.Microsecond), strings.Join(each, ", "))
			}
		})
	}
}

// history is a collection whose activity the benchmark grows.
type history struct {
	s             *store.Store
	clock         *storetest.Clock
	col           *store.Collection
	seller, buyer *storetest.Party
	nfts          []string
	events        int
	round         int
}

func newHistory(b *testing.B, s *store.Store, clock *storetest.Clock) *history {
	ctx := context.Background()
	h := &history{s: s, clock: clock, seller: storetest.Onboard(b, s, "seller"), buyer: storetest.Onboard(b, s, "buyer")}
	creator := storetest.Onboard(b, s, "creator")
	h.buyer.Tap(b, s, store.CC, "1000000")
	col, err := s.CreateCollection(ctx, store.CollectionSpec{Slug: "history", Name: "History", Creator: creator.ID, Currency: store.CC, Supply: 100, Items: worldItems("history", 100)})
	if err != nil {
		b.Fatal(err)
	}
	h.col = col
	now := clock.Now()
	if _, err := s.AddPhase(ctx, store.PhaseSpec{Collection: col.ID, Name: "free", Price: "0", Start: now.Add(-time.Hour), End: now.Add(1000 * 24 * time.Hour), PerPartyLimit: 100}); err != nil {
		b.Fatal(err)
	}
	for range 2 {
		prep, err := s.PrepareMint(ctx, h.seller.ID, col.ID, 50)
		if err != nil {
			b.Fatal(err)
		}
		var minted struct {
			ContractIDs []string `json:"contractIds"`
		}
		if err := json.Unmarshal(h.seller.MustExecute(b, s, store.KindNFTMint, prep), &minted); err != nil {
			b.Fatal(err)
		}
		h.nfts = append(h.nfts, minted.ContractIDs...)
	}
	h.events = 100
	return h
}

// grow writes rounds of history until the collection has events: each round lists 50 NFTs
// and cancels them, sells one to the buyer and back through an offer, and moves the clock on
// an hour, so the history spans days.
func (h *history) grow(b *testing.B, events int) {
	ctx := context.Background()
	for h.events < events {
		h.round++
		base := (h.round % 2) * 50
		terms := make([]store.ListingTerms, 50)
		for i := range terms {
			terms[i] = store.ListingTerms{ContractID: h.nfts[base+i], Price: fmt.Sprintf("%d", 10+i)}
		}
		prep, err := h.s.PrepareList(ctx, h.seller.ID, terms)
		if err != nil {
			b.Fatal(err)
		}
		var listed struct {
			CIDs []string `json:"cids"`
		}
		if err := json.Unmarshal(h.seller.MustExecute(b, h.s, store.KindNFTList, prep), &listed); err != nil {
			b.Fatal(err)
		}
		// The cheapest sells; the others are cancelled.
		prep, err = h.s.PrepareBuy(ctx, h.buyer.ID, listed.CIDs[0])
		if err != nil {
			b.Fatal(err)
		}
		var bought struct {
			ContractID string `json:"contractId"`
		}
		if err := json.Unmarshal(h.buyer.MustExecute(b, h.s, store.KindNFTBuy, prep), &bought); err != nil {
			b.Fatal(err)
		}
		prep, err = h.s.PrepareCancel(ctx, h.seller.ID, listed.CIDs[1:])
		if err != nil {
			b.Fatal(err)
		}
		h.seller.MustExecute(b, h.s, store.KindNFTCancel, prep)
		// The seller buys it back through an item offer the buyer accepts.
		h.seller.Tap(b, h.s, store.CC, "20")
		prep, err = h.s.PrepareOffer(ctx, h.seller.ID, store.OfferTerms{ContractID: bought.ContractID, Price: "10", ExpiresAt: h.clock.Now().Add(time.Hour).Unix()})
		if err != nil {
			b.Fatal(err)
		}
		var offer struct {
			CID string `json:"cid"`
		}
		if err := json.Unmarshal(h.seller.MustExecute(b, h.s, store.KindNFTOffer, prep), &offer); err != nil {
			b.Fatal(err)
		}
		prep, err = h.s.PrepareOfferAccept(ctx, h.buyer.ID, store.OfferAcceptance{CID: offer.CID, ContractIDs: []string{bought.ContractID}})
		if err != nil {
			b.Fatal(err)
		}
		var accepted struct {
			ContractIDs []string `json:"contractIds"`
		}
		if err := json.Unmarshal(h.buyer.MustExecute(b, h.s, store.KindNFTOfferAccept, prep), &accepted); err != nil {
			b.Fatal(err)
		}
		h.nfts[base] = accepted.ContractIDs[0]
		h.events += 50 + 1 + 49 + 1 + 1
		h.clock.Advance(time.Hour)
	}
}

// analyze has PostgreSQL gather the statistics of the tables the reads use, as autovacuum
// does on a server that has run a while: without them, the planner guesses for tables that
// just grew.
func analyze(b *testing.B, be storetest.Backend, s *store.Store) {
	if be.Dialect != store.Postgres {
		return
	}
	db, err := sql.Open("pgx", s.Config().DB)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("ANALYZE nft_activity, updates, nft_offers, listings, collection_days, collections, nft_items, nft_traits"); err != nil {
		b.Fatal(err)
	}
}
