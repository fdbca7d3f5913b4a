package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"marketd/store/storetest"
)

// Writes killed mid-flight: traders mint, list, cancel, buy, sweep, transfer and burn NFTs,
// post and cancel LP quotes, swap, cancel intents and claim fees, while a crowd of wallets
// mints from one open phase (a drop, whose mints apply in batches), through a marketd process
// that is SIGKILLed at a random moment, then restarted, several rounds on each store. After
// every round: each acknowledged write is in the store, each instrument is conserved (locked
// amounts and unclaimed fees included), each NFT has one live contract and at most one live
// listing, every mint of the drop applied once, the restarted instance's NFT index
// answers every page exactly as an instance reading by SQL (MARKETD_NFT_INDEX=off) does, and
// the transparency log holds one entry per update, in offset order, whose root recomputes.
func TestCrash_WritesKilledMidFlightLoseNothingAndTheIndexAgreesWithSQL(t *testing.T) {
	stores := []struct{ name, dsn, driver, raw string }{}
	file := filepath.Join(t.TempDir(), "m.db")
	stores = append(stores, struct{ name, dsn, driver, raw string }{"sqlite", "sqlite://" + file, "sqlite", "file:" + file + "?_pragma=busy_timeout(10000)"})
	for _, b := range storetest.Backends() {
		if b.Postgres {
			dsn := b.DSN(t)
			stores = append(stores, struct{ name, dsn, driver, raw string }{"postgres", dsn, "pgx", dsn})
		}
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			env := []string{"MARKETD_DB=" + st.dsn, "MARKETD_RATE_READ=0"}
			in := startInstance(t, env...)
			c := newClient(t)
			traders, minters := onboardTraders(c, in.url, 4), onboardMinters(c, in.url, 12)
			col := createCrashCollection(t, st.dsn, traders[0].ID)
			drop := createDrop(t, st.dsn, traders[0].ID)
			pool := createCrashPool(t, st.dsn)
			db, err := sql.Open(st.driver, st.raw)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var acked []string
			// Three rounds at least; more (up to maxRounds) while some kind of write has not
			// committed yet, as on a loaded machine, where a round commits fewer writes (a
			// sweep needs two listings of others standing at once).
			const maxRounds = 20
			for round := 0; round < 3 || (round < maxRounds && len(uncommittedKinds(t, db)) > 0); round++ {
				// From the fourth round on, half the traders' steps make a kind of write
				// not committed yet: the rare ones (a cancel needs a listing of one's own
				// still standing) may miss three rounds by chance.
				var wanted []string
				if round >= 3 {
					wanted = uncommittedKinds(t, db)
				}
				load := startMixedWrites(c, in.url, crashMarket{col, drop, pool}, traders, minters, uint64(round), wanted...)
				time.Sleep(time.Duration(400+mrand.IntN(800)) * time.Millisecond)
				in.cmd.Process.Signal(syscall.SIGKILL)
				<-in.done
				acked = append(acked, load.stop()...)
				in = startInstance(t, env...)
				checkAfterCrash(t, db, acked, len(traders), len(minters))
				checkDrop(t, db, drop)
				checkLogAfterCrash(t, db, st.driver == "sqlite", in.url)
				sqlInstance := startInstance(t, append(env, "MARKETD_NFT_INDEX=off")...)
				comparePages(t, c, in.url, sqlInstance.url, col, traders)
				compareAggregates(t, c, in.url, db, pool, "2")
				sqlInstance.cmd.Process.Kill()
				<-sqlInstance.done
				t.Logf("round %d: %d writes acknowledged so far", round, len(acked))
			}
			if missing := uncommittedKinds(t, db); len(missing) > 0 {
				t.Errorf("no %v committed in %d rounds: the load did not exercise every kind of write", missing, maxRounds)
			}
		})
	}
}

// onboardTraders onboards n traders with 1,000 CC and 1,000 USDCx each and their NFT and USDCx
// receive-preapprovals: others may send them NFTs and USDCx.
func onboardTraders(c *client, base string, n int) []*party {
	c.t.Helper()
	traders := make([]*party, n)
	for i := range traders {
		p := c.onboard(base, fmt.Sprintf("trader%d", i))
		for _, inst := range []string{"CC", "USDCx"} {
			h := c.prepare(base, "/api/wallet/tap", p, map[string]string{"instrument": inst, "amount": "1000"})
			c.ok("POST", base+"/api/wallet/tap/execute", p.tok, map[string]string{"preparedTransactionHash": h, "signature": p.SignHash(c.t, h)})
		}
		for _, kind := range []string{"nft", "usdcx"} {
			h := c.prepare(base, "/api/wallet/"+kind+"-preapproval", p, map[string]string{})
			c.ok("POST", base+"/api/wallet/"+kind+"-preapproval/execute", p.tok, map[string]string{"preparedTransactionHash": h, "signature": p.SignHash(c.t, h)})
		}
		traders[i] = p
	}
	return traders
}

// onboardMinters onboards n wallets with 1,000 CC each, to mint from the drop.
func onboardMinters(c *client, base string, n int) []*party {
	c.t.Helper()
	minters := make([]*party, n)
	for i := range minters {
		minters[i] = c.onboard(base, fmt.Sprintf("minter%d", i))
		c.tap(base, minters[i], "1000")
	}
	return minters
}

// crashMarket is what the mixed writes trade in: a collection, a drop and a pool.
type crashMarket struct{ col, drop, pool string }

// mixedWrites is a load of random writes under way: each trader makes NFT and swap writes,
// each minter mints from the drop, until stop.
type mixedWrites struct {
	mu     sync.Mutex
	acked  []string
	halt   atomic.Bool
	groups sync.WaitGroup
}

// startMixedWrites starts the writes through the instance at base; seed picks their random
// choices, and half the traders' steps make one of the kinds wanted (update kinds), when any
// are. Failures (an instance or store gone, a lost race) are tolerated and not counted.
func startMixedWrites(c *client, base string, m crashMarket, traders, minters []*party, seed uint64, wanted ...string) *mixedWrites {
	w := &mixedWrites{}
	for i, p := range traders {
		w.groups.Go(func() {
			rng := mrand.New(mrand.NewPCG(seed, uint64(i)))
			for !w.halt.Load() {
				if len(wanted) > 0 && rng.IntN(2) == 0 {
					kind := wanted[rng.IntN(len(wanted))]
					if choice, ok := nftSteps[kind]; ok {
						w.note(nftStep(c, base, m.col, p, traders, rng, choice))
					} else if choice, ok := swapSteps[kind]; ok {
						w.note(swapStep(c, base, m.pool, p, rng, choice))
					}
					continue
				}
				if rng.IntN(2) == 0 {
					w.note(swapStep(c, base, m.pool, p, rng, rng.IntN(6)))
				} else if choice := rng.IntN(8); choice != 7 || rng.IntN(4) == 0 { // burns are rarer: the supply is finite
					w.note(nftStep(c, base, m.col, p, traders, rng, choice))
				}
			}
		})
	}
	for _, p := range minters {
		w.groups.Go(func() {
			for !w.halt.Load() {
				w.note(c.write(base, p, "/api/nft/mint/atomic/prepare", "/api/nft/mint/atomic/execute", map[string]string{"collectionId": m.drop}))
			}
		})
	}
	return w
}

// note keeps the update id of an acknowledged write.
func (w *mixedWrites) note(id string, ok bool) {
	if ok {
		w.mu.Lock()
		w.acked = append(w.acked, id)
		w.mu.Unlock()
	}
}

// count is how many writes were acknowledged so far.
func (w *mixedWrites) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// stop ends the writes, waits for those under way and returns the acknowledged ones' ids.
func (w *mixedWrites) stop() []string {
	w.halt.Store(true)
	w.groups.Wait()
	return w.acked
}

// uncommittedKinds lists the kinds of write the crash test must see committed that the store
// has none of yet.
func uncommittedKinds(t *testing.T, db *sql.DB) []string {
	t.Helper()
	kinds := map[string]int{}
	rows, err := db.Query("SELECT kind, count(*) FROM updates GROUP BY kind")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			t.Fatal(err)
		}
		kinds[k] = n
	}
	var missing []string
	for _, k := range []string{"nft.mint", "nft.list", "nft.cancel", "nft.buy", "nft.sweep", "nft.transfer", "nft.burn",
		"swap.lp-quote", "swap.lp-quote-cancel", "swap.intent", "swap.intent-cancel", "swap.lp-claim-fees"} {
		if kinds[k] == 0 {
			missing = append(missing, k)
		}
	}
	return missing
}

// createCrashCollection makes a collection of 400 NFTs with traits and an open mint phase,
// with the operator's commands, and returns its id.
func createCrashCollection(t *testing.T, dsn, creator string) string {
	var items []map[string]any
	for i := range 400 {
		items = append(items, map[string]any{"name": fmt.Sprintf("Crash #%d", i+1), "image": "https://img.example/crash.png",
			"traits": []map[string]string{{"type": "Hat", "value": []string{"Cap", "Crown", "Halo"}[i%3]}, {"type": "Eyes", "value": []string{"Bored", "Laser"}[i%2]}}})
	}
	itemsFile := filepath.Join(t.TempDir(), "items.json")
	b, _ := json.Marshal(items)
	if err := os.WriteFile(itemsFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) []byte { return runMarketd(t, dsn, args...) }
	var col struct{ ID string }
	json.Unmarshal(run("collection", "create", "--slug", "crash", "--name", "Crash", "--creator", creator, "--currency", "CC",
		"--supply", "400", "--items", itemsFile), &col)
	now := time.Now().Unix()
	run("collection", "add-phase", "--collection", "crash", "--name", "open", "--price", "1",
		"--start", fmt.Sprint(now-3600), "--end", fmt.Sprint(now+86400), "--per-party-limit", "400")
	return col.ID
}

// runMarketd runs an operator command of marketd on the store at dsn and returns its output.
func runMarketd(t *testing.T, dsn string, args ...string) []byte {
	t.Helper()
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "MARKETD_DB="+dsn)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("marketd %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return out
}

// createDrop creates the "drop" collection, 5,000 items, and opens its mint phase: 1 CC a
// mint, as many as a wallet likes.
func createDrop(t *testing.T, dsn, creator string) string {
	var col struct{ ID string }
	json.Unmarshal(runMarketd(t, dsn, "collection", "create", "--slug", "drop", "--name", "Drop", "--creator", creator, "--currency", "CC", "--supply", "5000"), &col)
	now := time.Now().Unix()
	runMarketd(t, dsn, "collection", "add-phase", "--collection", "drop", "--name", "public", "--price", "1",
		"--start", fmt.Sprint(now-3600), "--end", fmt.Sprint(now+86400), "--per-party-limit", "5000")
	return col.ID
}

// checkDrop checks that every mint of the drop applied once: the collection counts as many
// mints as there are NFTs of it, and so do its phase and the phase's count per wallet.
func checkDrop(t *testing.T, db *sql.DB, drop string) {
	t.Helper()
	var minted, nfts, phase, perWallet int
	for q, dest := range map[string]*int{
		"SELECT minted FROM collections WHERE collection_id = '" + drop + "'":                   &minted,
		"SELECT count(DISTINCT nft_id) FROM nfts WHERE collection_id = '" + drop + "'":          &nfts,
		"SELECT minted FROM mint_phases WHERE collection_id = '" + drop + "'":                   &phase,
		"SELECT coalesce(sum(minted), 0) FROM phase_mints WHERE collection_id = '" + drop + "'": &perWallet,
	} {
		if err := db.QueryRow(q).Scan(dest); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if minted != nfts || phase != nfts || perWallet != nfts {
		t.Fatalf("the drop counts %d minted, its phase %d, its wallets %d; it has %d NFTs", minted, phase, perWallet, nfts)
	}
}

// nftSteps and swapSteps are the choice of nftStep and swapStep that makes each kind of write.
var (
	nftSteps = map[string]int{"nft.mint": 0, "nft.list": 2, "nft.cancel": 3, "nft.buy": 4, "nft.transfer": 5, "nft.sweep": 6, "nft.burn": 7}
	// swapSteps' 5 cancels an intent when p has one, and claims fees otherwise (or by chance).
	swapSteps = map[string]int{"swap.lp-quote": 0, "swap.lp-quote-cancel": 2, "swap.intent": 3, "swap.intent-cancel": 5, "swap.lp-claim-fees": 5}
)

// nftStep makes the NFT write of choice (0 to 7, at random in it) as p and returns its update
// id when it was acknowledged.
func nftStep(c *client, base, col string, p *party, traders []*party, rng *mrand.Rand, choice int) (string, bool) {
	get := func(query string) []map[string]any {
		r, err := c.try("GET", base+"/api/nft/collection/"+col+"/nfts?"+query, "", nil)
		if err != nil || r.status != 200 {
			return nil
		}
		items, _ := r.body["items"].([]any)
		var out []map[string]any
		for _, it := range items {
			out = append(out, it.(map[string]any))
		}
		return out
	}
	pick := func(xs []map[string]any) map[string]any {
		if len(xs) == 0 {
			return nil
		}
		return xs[rng.IntN(len(xs))]
	}
	exec := func(prepare, execute string, body any) (string, bool) {
		return c.write(base, p, prepare, execute, body)
	}
	mine := func(listed bool) map[string]any {
		var out []map[string]any
		for _, n := range get("owner=" + url.QueryEscape(p.ID) + "&limit=100") {
			if (n["listing"] != nil) == listed {
				out = append(out, n)
			}
		}
		return pick(out)
	}
	switch choice {
	case 0, 1:
		return exec("/api/nft/mint/atomic/prepare", "/api/nft/mint/atomic/execute", map[string]string{"collectionId": col})
	case 2:
		if n := mine(false); n != nil {
			return exec("/api/nft/list/prepare", "/api/nft/list/execute", map[string]string{"contractId": n["contractId"].(string), "price": fmt.Sprint(1 + rng.IntN(20))})
		}
	case 3: // a listing of one's own, listed first when none stands (the listing goes unnoted)
		n := mine(true)
		if n == nil {
			if n = mine(false); n == nil {
				break
			}
			if _, ok := exec("/api/nft/list/prepare", "/api/nft/list/execute", map[string]string{"contractId": n["contractId"].(string), "price": fmt.Sprint(1 + rng.IntN(20))}); !ok {
				break
			}
			if n = mine(true); n == nil {
				break
			}
		}
		cid := n["listing"].(map[string]any)["cid"].(string)
		return exec("/api/nft/list/"+cid+"/cancel/prepare", "/api/nft/list/cancel/execute", map[string]string{})
	case 4:
		var others []map[string]any
		for _, n := range get("listed=true&sort=price_asc&limit=50") {
			if n["owner"] != p.ID {
				others = append(others, n)
			}
		}
		if n := pick(others); n != nil {
			return exec("/api/nft/buy/atomic/prepare", "/api/nft/buy/atomic/execute", map[string]string{"cid": n["listing"].(map[string]any)["cid"].(string)})
		}
	case 5:
		if n := mine(false); n != nil {
			to := traders[rng.IntN(len(traders))]
			if to != p {
				return exec("/api/nft/transfer/prepare", "/api/nft/transfer/execute", map[string]string{"contractId": n["contractId"].(string), "receiver": to.ID})
			}
		}
	case 6: // the two cheapest listings, whoever's (one's own fails and is retried)
		return exec("/api/nft/sweep/buy/prepare", "/api/nft/sweep/buy/execute", map[string]any{"collectionId": col, "count": 2, "maxTotal": "50"})
	case 7:
		if n := mine(rng.IntN(2) == 0); n != nil {
			return exec("/api/nft/burn/prepare", "/api/nft/burn/execute", map[string]string{"contractId": n["contractId"].(string)})
		}
	}
	return "", false
}

// checkAfterCrash checks the store directly: every acknowledged write is there, CC is
// conserved, and each NFT has one live contract and at most one live listing. The traders
// tapped 1,000 of each instrument, the minters 1,000 CC.
func checkAfterCrash(t *testing.T, db *sql.DB, acked []string, traders, minters int) {
	t.Helper()
	for _, id := range acked {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM updates WHERE update_id = '" + id + "'").Scan(&n); err != nil || n != 1 {
			t.Fatalf("acknowledged update %s: %d in the store (%v)", id, n, err)
		}
	}
	// Every instrument is conserved: what was tapped is in holdings, locked in open LP quotes
	// and pending intents, or retained as unclaimed fees.
	held := map[string]decimal.Decimal{}
	for _, table := range []string{"holdings", "lp_quotes", "swap_intents", "lp_fees"} {
		for inst, a := range liveAmounts(t, db, table, "") {
			held[inst] = held[inst].Add(a)
		}
	}
	for inst, tapped := range map[string]int{"CC": 1000 * (traders + minters), "USDCx": 1000 * traders} {
		if !held[inst].Equal(decimal.NewFromInt(int64(tapped))) {
			t.Fatalf("%s held or locked %s, tapped %d", inst, held[inst], tapped)
		}
	}
	for _, q := range []string{
		"SELECT nft_id FROM nfts WHERE consumed_update IS NULL GROUP BY nft_id HAVING count(*) > 1",
		"SELECT nft_cid FROM listings WHERE consumed_update IS NULL GROUP BY nft_cid HAVING count(*) > 1",
		"SELECT l.cid FROM listings l LEFT JOIN nfts n ON n.cid = l.nft_cid AND n.consumed_update IS NULL WHERE l.consumed_update IS NULL AND n.cid IS NULL",
	} {
		var bad string
		err := db.QueryRow(q).Scan(&bad)
		if err != sql.ErrNoRows {
			t.Fatalf("%s: %q %v", q, bad, err)
		}
	}
}

// comparePages reads the same pages from the instance with the NFT index and from one that
// reads by SQL, and wants the same bytes: every NFT in each order, the listed ones, each
// trader's, each trait value's, following every cursor.
func comparePages(t *testing.T, c *client, indexed, bySQL, col string, traders []*party) {
	t.Helper()
	queries := []string{"sort=serial", "sort=price_asc", "sort=price_desc", "listed=true&sort=price_asc", "listed=true&sort=serial",
		"trait=Hat:Crown&sort=price_desc", "trait=Hat:Cap&trait=Hat:Halo&trait=Eyes:Laser&sort=price_asc", "minPrice=5&maxPrice=15&sort=price_asc"}
	for _, p := range traders {
		queries = append(queries, "owner="+url.QueryEscape(p.ID)+"&sort=price_asc")
	}
	for _, q := range queries {
		cursor := ""
		for pages := 0; pages < 50; pages++ {
			path := "/api/nft/collection/" + col + "/nfts?limit=17&" + q
			if cursor != "" {
				path += "&cursor=" + url.QueryEscape(cursor)
			}
			a, errA := c.try("GET", indexed+path, "", nil)
			b, errB := c.try("GET", bySQL+path, "", nil)
			if errA != nil || errB != nil || a.status != 200 || !bytes.Equal(a.raw, b.raw) {
				t.Fatalf("GET %s: the NFT index answers %d %s (%v), SQL answers %d %s (%v)", path, a.status, a.raw, errA, b.status, b.raw, errB)
			}
			next, _ := a.body["cursor"].(string)
			if next == "" {
				break
			}
			cursor = next
		}
	}
}

// liveAmounts sums what the live contracts of a valued template hold, by instrument (those of
// one pool when pool is set).
func liveAmounts(t *testing.T, db *sql.DB, table, pool string) map[string]decimal.Decimal {
	t.Helper()
	q := "SELECT instrument, CAST(amount AS TEXT) FROM " + table + " WHERE consumed_update IS NULL"
	if pool != "" {
		q += " AND pool_id = '" + pool + "'"
	}
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	sum := map[string]decimal.Decimal{"CC": decimal.Zero, "USDCx": decimal.Zero}
	for rows.Next() {
		var inst, a string
		if err := rows.Scan(&inst, &a); err != nil {
			t.Fatal(err)
		}
		sum[inst] = sum[inst].Add(decimal.RequireFromString(a))
	}
	return sum
}

// compareAggregates reads the pool's aggregates from the instance (its running figures) and
// wants what the pool's live quotes and fees in the store give at the oracle price.
func compareAggregates(t *testing.T, c *client, url string, db *sql.DB, pool, oracle string) {
	t.Helper()
	o := decimal.RequireFromString(oracle)
	tvl, depth, weighted := decimal.Zero, decimal.Zero, decimal.Zero
	lps := map[string]bool{}
	rows, err := db.Query("SELECT lp, side, CAST(price AS TEXT), CAST(remaining AS TEXT), CAST(amount AS TEXT) FROM lp_quotes WHERE consumed_update IS NULL AND pool_id = '" + pool + "'")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var lp, side, price, remaining, amount string
		if err := rows.Scan(&lp, &side, &price, &remaining, &amount); err != nil {
			t.Fatal(err)
		}
		lps[lp] = true
		a, r := decimal.RequireFromString(amount), decimal.RequireFromString(remaining)
		if side == "ask" {
			a = a.Mul(o)
		}
		tvl, depth = tvl.Add(a), depth.Add(r)
		weighted = weighted.Add(r.Mul(decimal.RequireFromString(price).Sub(o).Abs()))
	}
	rows.Close()
	fees := liveAmounts(t, db, "lp_fees", pool)
	spread := decimal.Zero
	if depth.IsPositive() {
		spread = weighted.Mul(decimal.NewFromInt(20000)).DivRound(o.Mul(depth), 8).Truncate(2)
	}
	r, err := c.try("GET", url+"/api/swap/pool/"+pool+"/aggregates", "", nil)
	if err != nil || r.status != 200 {
		t.Fatalf("aggregates: %d %s (%v)", r.status, r.raw, err)
	}
	num := func(k string) decimal.Decimal { return decimal.RequireFromString(fmt.Sprint(r.body[k])) }
	acc := r.body["accruedFees"].(map[string]any)
	if !num("tvl").Equal(tvl.Truncate(6)) || fmt.Sprint(r.body["lpCount"]) != fmt.Sprint(len(lps)) || !num("depthWeightedSpreadBps").Equal(spread) ||
		!decimal.RequireFromString(acc["CC"].(string)).Equal(fees["CC"]) || !decimal.RequireFromString(acc["USDCx"].(string)).Equal(fees["USDCx"]) {
		t.Fatalf("aggregates after the crash %s; the store's quotes and fees give tvl %s, %d LPs, spread %s, fees %v", r.raw, tvl.Truncate(6), len(lps), spread, fees)
	}
}

// createCrashPool sets the CC/USDCx oracle price and creates a pool with a 30 bps fee, with
// the operator's commands, and returns its id.
func createCrashPool(t *testing.T, dsn string) string {
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"oracle", "set", "--base", "CC", "--quote", "USDCx", "--price", "2"},
		{"pool", "create", "--base", "CC", "--quote", "USDCx", "--fee-bps", "30"},
	} {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "MARKETD_DB="+dsn)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("marketd %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return "CC-USDCx-30"
}

// swapStep makes one random swap write as p (an LP quote or its cancel, a swap or its cancel,
// a fee claim) and returns its update id when it was acknowledged.
func swapStep(c *client, base, pool string, p *party, rng *mrand.Rand, choice int) (string, bool) {
	exec := func(prepare, execute string, body any) (string, bool) {
		return c.write(base, p, prepare, execute, body)
	}
	active := func(path, field string) string {
		r, err := c.try("GET", base+path, p.tok, nil)
		if err != nil || r.status != 200 {
			return ""
		}
		items, _ := r.body["items"].([]any)
		if len(items) == 0 {
			return ""
		}
		s, _ := items[rng.IntN(len(items))].(map[string]any)[field].(string)
		return s
	}
	later := time.Now().Add(time.Hour).Unix()
	switch choice {
	case 0, 1:
		side := []string{"bid", "ask"}[rng.IntN(2)]
		price := fmt.Sprintf("%.2f", 1.9+0.2*rng.Float64())
		return exec("/api/swap/lp-quote/prepare", "/api/swap/lp-quote/execute",
			map[string]any{"poolId": pool, "side": side, "price": price, "size": fmt.Sprint(1 + rng.IntN(10)), "expiresAt": later})
	case 2:
		if cid := active("/api/swap/lp-quote/active", "cid"); cid != "" {
			return exec("/api/swap/lp-quote/cancel/prepare", "/api/swap/lp-quote/cancel/execute", map[string]string{"cid": cid})
		}
	case 3, 4:
		sell := []string{"CC", "USDCx"}[rng.IntN(2)]
		min := "0.1"
		if rng.IntN(2) == 0 {
			min = "100" // more than the book pays: the intent waits, locked, until cancelled
		}
		return exec("/api/swap/prepare", "/api/swap/intent/submit",
			map[string]any{"poolId": pool, "sell": sell, "amount": fmt.Sprint(1 + rng.IntN(3)), "minReceive": min, "deadline": later})
	case 5:
		if rng.IntN(3) > 0 {
			if cid := active("/api/swap/intent/active", "intentCid"); cid != "" {
				return exec("/api/swap/intent/cancel/prepare", "/api/swap/intent/cancel/execute", map[string]string{"intentCid": cid})
			}
		}
		return exec("/api/swap/lp-quote/claim-fees/prepare", "/api/swap/lp-quote/claim-fees/execute", map[string]string{"poolId": pool})
	}
	return "", false
}

// write prepares with body at prepare, signs as p and executes at execute, tolerating any
// failure (a killed instance, a lost race); it returns the update id of an acknowledged write.
func (c *client) write(base string, p *party, prepare, execute string, body any) (string, bool) {
	r, err := c.try("POST", base+prepare, p.tok, body)
	if err != nil || r.status != 200 {
		return "", false
	}
	h := r.str("preparedTransactionHash")
	r, err = c.try("POST", base+execute, p.tok, map[string]string{"preparedTransactionHash": h, "signature": p.SignHash(c.t, h)})
	if err != nil || r.status != 200 {
		return "", false
	}
	return r.str("updateId"), true
}
