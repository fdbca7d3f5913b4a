package store

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// One batch of submits to a pool: b's holding was spent after it prepared, so the ledger
// refuses its submit; the batch is applied again without it. a and c fill, c from the quote
// version a's fill left (created and consumed inside the batch), a's repeated submit answers
// a's receipt, and b is answered alone, stale, with nothing of its changed.
func TestSwapBatch_ARefusedSubmitIsAnsweredAloneAndTheOthersCommit(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *Store, clock *ledgerClock) {
		ctx := context.Background()
		if _, err := s.SetOraclePrice(ctx, CC, USDCx, "2.5"); err != nil {
			t.Fatal(err)
		}
		pool, err := s.CreatePool(ctx, CC, USDCx, 30)
		if err != nil {
			t.Fatal(err)
		}
		lp, a, b, c := onboardKeyed(t, s, "lp"), onboardKeyed(t, s, "a"), onboardKeyed(t, s, "b"), onboardKeyed(t, s, "c")
		mint(t, s, lp.id, USDCx, "100")
		for _, p := range []*keyedParty{a, b, c} {
			mint(t, s, p.id, CC, "10")
		}
		expires := clock.Now().Add(time.Hour).Unix()
		prep, err := s.PrepareLPQuote(ctx, lp.id, LPQuoteTerms{PoolID: pool.PoolID, Side: SideBid, Price: "2", Size: "50", ExpiresAt: expires})
		if err != nil {
			t.Fatal(err)
		}
		lp.execute(t, s, KindLPQuote, prep)
		supply, err := s.Supply(ctx)
		if err != nil {
			t.Fatal(err)
		}

		sell := func(p *keyedParty) *Prepared {
			t.Helper()
			prep, err := s.PrepareSwap(ctx, p.id, SwapTerms{PoolID: pool.PoolID, Sell: "CC", Amount: "4", MinReceive: "7", Deadline: expires})
			if err != nil {
				t.Fatal(err)
			}
			return prep
		}
		pa, pb, pc := sell(a), sell(b), sell(c)
		b.execute(t, s, KindSwapIntent, sell(b)) // spends the holding pb locks
		submit := func(p *keyedParty, prep *Prepared) *executeRequest {
			row := new(PreparedTx)
			if err := s.db.NewSelect().Model(row).Where("hash = ?", prep.Hash).Scan(ctx); err != nil {
				t.Fatal(err)
			}
			x := Execution{Kinds: []string{KindSwapIntent}, Hash: prep.Hash, Signature: p.Sign(prep.Hash), Caller: p.id}
			return &executeRequest{x: x, p: row, done: make(chan executeResult, 1)}
		}
		batch := []*executeRequest{submit(a, pa), submit(b, pb), submit(c, pc), submit(a, pa)}
		s.applyBatch(batchKey{row: "pool/" + pool.PoolID, way: intentsInOnePass}, batch, func() {})
		results := make([]executeResult, len(batch))
		for i, r := range batch {
			results[i] = <-r.done
		}

		if code := ErrorCode(results[1].err); code != CodeStale {
			t.Fatalf("b's submit: %v, want stale", results[1].err)
		}
		for _, i := range []int{0, 2, 3} {
			var res IntentResult
			if err := results[i].err; err != nil {
				t.Fatalf("submit %d: %v", i, err)
			}
			if err := json.Unmarshal(results[i].receipt, &res); err != nil || res.IntentStatus != IntentFilled {
				t.Fatalf("submit %d answered %s (%v), want filled", i, results[i].receipt, err)
			}
		}
		if string(results[3].receipt) != string(results[0].receipt) {
			t.Fatalf("a's repeated submit answered %s, the first %s", results[3].receipt, results[0].receipt)
		}

		bal := func(p *keyedParty, inst Instrument) string {
			t.Helper()
			bs, err := s.Balances(ctx, p.id)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range bs {
				if x.Instrument == inst {
					return x.Amount.String() + "/" + x.Locked.String()
				}
			}
			return "none"
		}
		// 4 CC at 2 is 8 USDCx gross, 0.024 fee: 7.976 each, for a, b's first swap and c.
		for p, want := range map[*keyedParty][2]string{a: {"6/0", "7.976/0"}, b: {"6/0", "7.976/0"}, c: {"6/0", "7.976/0"}} {
			if got := [2]string{bal(p, CC), bal(p, USDCx)}; got != want {
				t.Fatalf("%s: CC, USDCx %v, want %v", p.id, got, want)
			}
		}
		quotes, err := s.ActiveLPQuotes(ctx, lp.id, PageRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if len(quotes.Items) != 1 || quotes.Items[0].Remaining.String() != "38" || quotes.Items[0].Amount.String() != "76" {
			t.Fatalf("LP quotes %+v, want one with 38 CC remaining backed by 76 USDCx", quotes.Items)
		}
		after, err := s.Supply(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Supply counts holdings; what the quote and the fees hold moved out of them.
		fees := MustAmount("0.072")
		if !after[CC].Equal(supply[CC]) || !after[USDCx].Add(quotes.Items[0].Amount).Add(fees).Equal(supply[USDCx].Add(MustAmount("100"))) {
			t.Fatalf("supply %v after, %v before (with the quote's 100 USDCx)", after, supply)
		}
	})
}
