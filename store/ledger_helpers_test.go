package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// seedEnv overrides the random seed of the property tests, to replay a failure.
const seedEnv = "LEDGER_PROPERTY_SEED"

func propertySeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(seedEnv); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", seedEnv, v, err)
		}
		seed = n
	}
	t.Logf("seed %d (replay with %s=%d)", seed, seedEnv, seed)
	return seed
}

// openLedger opens a migrated store on b and a second, raw connection to the same database,
// through which a test counts rows the store's API does not expose (the length of the log).
func openLedger(t *testing.T, b storetest.Backend) (*store.Store, *storetest.Clock, *sql.DB) {
	t.Helper()
	ctx := context.Background()
	clock := new(storetest.Clock)
	cfg := storetest.Config(clock)
	cfg.DB = b.DSN(t)
	s, err := store.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	s.StartNFTIndex()
	driver, dsn := "pgx", cfg.DB
	if b.Dialect == store.SQLite {
		driver, dsn = "sqlite", "file:"+strings.TrimPrefix(cfg.DB, "sqlite://")+"?_pragma=query_only(1)"
	}
	raw, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	raw.SetMaxOpenConns(1)
	t.Cleanup(func() { raw.Close() })
	return s, clock, raw
}

func decimalsOf(inst store.Instrument) int { return int(inst.Decimals()) }

func unitsString(u int64, inst store.Instrument) string {
	d := decimalsOf(inst)
	s := fmt.Sprintf("%0*d", d+1, u)
	whole, frac := s[:len(s)-d], strings.TrimRight(s[len(s)-d:], "0")
	if frac == "" {
		return whole
	}
	return whole + "." + frac
}

func amountUnits(t testing.TB, a store.Amount, inst store.Instrument) int64 {
	t.Helper()
	s := a.String()
	whole, frac, _ := strings.Cut(s, ".")
	if len(frac) > decimalsOf(inst) {
		t.Fatalf("amount %s has more than %d fractional digits", s, decimalsOf(inst))
	}
	n, err := strconv.ParseInt(whole+frac+strings.Repeat("0", decimalsOf(inst)-len(frac)), 10, 64)
	if err != nil {
		t.Fatalf("amount %s: %v", s, err)
	}
	return n
}

func mustParse(t testing.TB, s string, inst store.Instrument) store.Amount {
	t.Helper()
	a, err := store.ParseAmount(s, inst)
	if err != nil {
		t.Fatalf("ParseAmount(%q, %s): %v", s, inst, err)
	}
	return a
}

// randomUnits returns a positive amount of at most max units, cut to a random number of
// fractional digits (so whole, short and full-precision amounts all occur).
func randomUnits(rng *rand.Rand, max int64, inst store.Instrument) int64 {
	if max < 1 {
		return 1
	}
	u := rng.Int64N(max) + 1
	cut := int64(1)
	for range rng.IntN(decimalsOf(inst) + 1) {
		cut *= 10
	}
	if u > cut {
		u -= u % cut
	}
	return u
}

// rewardUnits is the reward rule in units: RewardBps basis points, rounded down.
func rewardUnits(amount int64) int64 { return amount * store.RewardBps / 10000 }

// receipt is what an execute of a tap or a transfer answers.
type receipt struct {
	UpdateID string   `json:"updateId"`
	Status   string   `json:"status"`
	CIDs     []string `json:"cids"`
}

func parseReceipt(t testing.TB, r store.Receipt) receipt {
	t.Helper()
	var out receipt
	if err := json.Unmarshal(r, &out); err != nil || out.UpdateID == "" || out.Status != "committed" {
		t.Fatalf("receipt %s: %v", r, err)
	}
	return out
}

// preparedInputs reads the holdings a prepared transfer spends from its canonical bytes.
func preparedInputs(t testing.TB, p *store.Prepared) []string {
	t.Helper()
	var env struct {
		Effects struct {
			Inputs []struct {
				CID string `json:"cid"`
			} `json:"inputs"`
		} `json:"effects"`
	}
	if err := json.Unmarshal(p.Transaction, &env); err != nil {
		t.Fatalf("prepared transaction: %v", err)
	}
	cids := make([]string, len(env.Effects.Inputs))
	for i, in := range env.Effects.Inputs {
		cids[i] = in.CID
	}
	return cids
}

func overlap(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

func executeWith(s *store.Store, kind string, prep *store.Prepared, caller string, signer storetest.Key) (store.Receipt, error) {
	return s.Execute(context.Background(), store.Execution{Kinds: []string{kind}, Hash: prep.Hash, Signature: signer.Sign(prep.Hash), Caller: caller})
}
