package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// BenchmarkNFTMix is what a dApp's shoppers send: 20,000 distinct pages of NFTs drawn from the
// demo market's own traits (storetest.NFTPageMix: 1 to 3 trait types with 1 or 2 values each,
// often listed only, sometimes a price floor, the three sorts), each sent once, from 32
// keep-alive clients, to a `marketd serve` process of its own (page cache at its default, rate
// limits off) on SQLite and on PostgreSQL (TEST_DATABASE_URL), over REST and as the same
// pages over GraphQL in each way dashboards write the query (storetest.NFTPageShapes: the
// grid's own, plain fields, Apollo's __typename and id on every object, fragments with
// variables; every one asks for each NFT's bestOffer, as REST's page carries it), next to a
// bare net/http handler in the same run. Run it with -benchtime 20000x so no page repeats.
// Before the first turn each server is warmed up with 2,000 other pages of each kind. It
// reports pages/s, the p99 and the server's peak resident memory. MARKETD_BENCH_NFTS sets the
// market's size (default 100,000; seeding it takes about 30 s per store without offers).
//
// The market is `marketd seed --demo --seed 1`, offers and all. MARKETD_BENCH_OFFERS=both
// seeds the same market twice, with its offers (sub-benchmarks sqlite-offers/...) and without
// them (--offers=false: sqlite-nooffers/...), serves both at once and runs each page kind on
// one and then the other, interleaved, so the two are measured in the same window: what
// bestOffer costs a read. MARKETD_BENCH_AGAINST=BINARY does the same with another build of
// marketd (the code before a change, which may predate offers): the market without offers,
// served by this build (sub-benchmarks sqlite/...) and by BINARY (sqlite-against/...), each
// page kind run on one and then the other. On SQLite both serve one market: BINARY seeds it
// and this build serves a copy, migrated up as it starts; on PostgreSQL each build seeds its
// own (the same seed, but the two builds' demo markets may differ). MARKETD_BENCH_ROUNDS=R
// runs every page kind R times on each market (R × 20,000 distinct pages drawn, a fresh 20,000
// each round), the market that goes first alternating, so the host's drift falls on both.
// MARKETD_BENCH_SEEDED=FILE serves a SQLite market seeded beforehand (`marketd seed --demo
// --seed 1 --nfts N` into FILE, its key file beside it) where it lies, instead of seeding one:
// a market of 1,000,000 NFTs takes longer to seed than to read, and its seed is timed on its own.
func BenchmarkNFTMix(b *testing.B) {
	nfts := storetest.BenchNFTs(b)
	bin, err := binary()
	if err != nil {
		b.Fatal(err)
	}
	type variant struct{ suffix, offers, bin string } // offers "" leaves the seed's flag out
	variants := []variant{{"", "true", bin}}
	switch v := os.Getenv("MARKETD_BENCH_OFFERS"); v {
	case "":
	case "both":
		variants = []variant{{"-offers", "true", bin}, {"-nooffers", "false", bin}}
	default:
		b.Fatalf("MARKETD_BENCH_OFFERS=%q: want both or nothing", v)
	}
	against := os.Getenv("MARKETD_BENCH_AGAINST")
	if against != "" {
		variants = []variant{{"", "false", bin}, {"-against", "", against}}
	}
	rounds := 1
	if v := os.Getenv("MARKETD_BENCH_ROUNDS"); v != "" {
		if rounds, err = strconv.Atoi(v); err != nil || rounds < 1 {
			b.Fatalf("MARKETD_BENCH_ROUNDS=%q: want a count of rounds", v)
		}
	}
	stores := make([][]struct{ name, dsn string }, len(variants)) // by variant, then backend
	for i := range variants {
		stores[i] = benchStores(b)
	}
	seeded := os.Getenv("MARKETD_BENCH_SEEDED")
	if seeded != "" {
		if len(variants) > 1 {
			b.Fatal("MARKETD_BENCH_SEEDED serves one market: leave MARKETD_BENCH_OFFERS and MARKETD_BENCH_AGAINST unset")
		}
		stores[0] = []struct{ name, dsn string }{{"sqlite", "sqlite://" + seeded}}
	}
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"items":[],"cursor":null}` + "\n"))
	}))
	defer bare.Close()
	// market is one seeded store served by its own process, and its pages.
	type market struct {
		name string
		in   *instance
		rest []string
		gql  map[string][][]byte
	}
	for k := range stores[0] {
		var markets []market
		for i, v := range variants {
			st := stores[i][k]
			name := st.name + v.suffix
			args := []string{"seed", "--demo", "--seed", "1", "--nfts", strconv.Itoa(nfts)}
			if v.offers != "" {
				args = append(args, "--offers="+v.offers)
			}
			file, sqlite := strings.CutPrefix(st.dsn, "sqlite://")
			seedWith, seedInto := v.bin, st.dsn
			if against != "" && sqlite { // one market for both builds: the other seeds it
				args = args[:len(args)-1]
				seedWith, seedInto = against, stores[1][k].dsn
			}
			started := time.Now()
			if seeded == "" && (against == "" || !sqlite || i == 0) {
				seed := exec.Command(seedWith, args...)
				seed.Env = append(os.Environ(), "MARKETD_DB="+seedInto)
				if out, err := seed.CombinedOutput(); err != nil {
					b.Fatalf("seed %s: %v: %s", name, err, out)
				}
				b.Logf("%s: seeded %d NFTs in %v", name, nfts, time.Since(started).Round(time.Second))
			}
			if against != "" && sqlite && i == 0 { // this build serves a copy, migrated at its start
				raw, err := os.ReadFile(strings.TrimPrefix(seedInto, "sqlite://"))
				if err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(file, raw, 0o600); err != nil {
					b.Fatal(err)
				}
			}
			started = time.Now()
			env := []string{"MARKETD_DB=" + st.dsn, "MARKETD_RATE_READ=0", "MARKETD_LOG_LEVEL=error"}
			var kek []byte    // the tests' key, which seeds made here are sealed under
			if seeded != "" { // sealed under the key the seed made beside it
				path := filepath.Join(filepath.Dir(seeded), kekFileName)
				if kek, err = store.ReadKEKFile(path); err != nil {
					b.Fatal(err)
				}
				env = append(env, "MARKETD_KEK_FILE="+path)
			}
			in := startInstanceOf(b, v.bin, env...)
			b.Logf("%s: ready %v after start", name, time.Since(started).Round(time.Millisecond))
			var rest []string
			var gql map[string][][]byte
			if v.bin == bin {
				rest, gql = nftMix(b, st.dsn, kek, in.url, rounds*20_000+warmPages)
			} else { // another build's store may not open with this one's: the first market's pages
				rest, gql = samePages(b, markets[0].in.url, in.url, markets[0].rest, markets[0].gql)
			}
			if v.offers == "true" && seeded == "" { // a market seeded beforehand has offers or not
				mustShowBestOffers(b, in.url, gql[storetest.NFTPageShapes[0].Name])
			}
			markets = append(markets, market{name, in, rest, gql})
		}
		// Each market serves warmPages pages of each kind, unmeasured and apart from the
		// measured ones, before the first turn: the market that goes first would otherwise
		// pay alone for its server's heap growing to its working size.
		for i, m := range markets {
			n := len(m.rest) - warmPages
			warmUp(b, m.rest[n:], m.in.url, m.gql, n)
			markets[i].rest = m.rest[:n]
			gql := map[string][][]byte{}
			for shape, bodies := range m.gql {
				gql[shape] = bodies[:n]
			}
			markets[i].gql = gql
		}
		rss := func(b *testing.B, in *instance) {
			status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", in.cmd.Process.Pid))
			if err != nil {
				return
			}
			for _, line := range strings.Split(string(status), "\n") {
				if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
					kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
					b.ReportMetric(float64(kb)/1024, "server-peak-rss-MB")
				}
			}
		}
		// inTurns runs kind on every market, rounds times, the first market alternating; a run
		// is given its round's share of the pages from off.
		inTurns := func(kind string, run func(b *testing.B, m market, off, per int)) {
			for r := range rounds {
				order := slices.Clone(markets)
				if r%2 == 1 {
					slices.Reverse(order)
				}
				for _, m := range order {
					per := len(m.rest) / rounds
					b.Run(m.name+"/"+kind, func(b *testing.B) {
						run(b, m, r*per, per)
						rss(b, m.in)
					})
				}
			}
		}
		inTurns("rest", func(b *testing.B, m market, off, per int) {
			benchOps(b, func(client *http.Client, buf *bytes.Buffer, i int) bool {
				req, _ := http.NewRequest("GET", m.rest[off+i%per], nil)
				return send(b, client, req, buf)
			})
		})
		for _, shape := range storetest.NFTPageShapes {
			inTurns("graphql-"+shape.Name, func(b *testing.B, m market, off, per int) {
				bodies := m.gql[shape.Name]
				benchOps(b, func(client *http.Client, buf *bytes.Buffer, i int) bool {
					req, _ := http.NewRequest("POST", m.in.url+"/graphql", bytes.NewReader(bodies[off+i%per]))
					req.Header.Set("Content-Type", "application/json")
					return send(b, client, req, buf)
				})
			})
		}
		for _, m := range markets {
			b.Run(m.name+"/bare", func(b *testing.B) {
				benchOps(b, func(client *http.Client, buf *bytes.Buffer, i int) bool {
					req, _ := http.NewRequest("GET", bare.URL+m.rest[i%len(m.rest)][len(m.in.url):], nil)
					return send(b, client, req, buf)
				})
			})
		}
	}
}

// warmPages is how many pages of each kind warm a market up before it is measured.
const warmPages = 2_000

// warmUp sends the REST pages rest and the GraphQL bodies of gql from from on to the server at
// base, from 32 clients, unmeasured.
func warmUp(b *testing.B, rest []string, base string, gql map[string][][]byte, from int) {
	var reqs []func() *http.Request
	for _, u := range rest {
		reqs = append(reqs, func() *http.Request { r, _ := http.NewRequest("GET", u, nil); return r })
	}
	for _, bodies := range gql {
		for _, body := range bodies[from:] {
			reqs = append(reqs, func() *http.Request {
				r, _ := http.NewRequest("POST", base+"/graphql", bytes.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				return r
			})
		}
	}
	var next atomic.Int64
	var clients sync.WaitGroup
	for range 32 {
		clients.Go(func() {
			client, buf := &http.Client{}, new(bytes.Buffer)
			for i := next.Add(1) - 1; i < int64(len(reqs)); i = next.Add(1) - 1 {
				send(b, client, reqs[i](), buf)
			}
		})
	}
	clients.Wait()
}

// samePages writes the pages rest and gql of the market served at from for the market of the
// same seed served at to: the collections' ids, which each seed draws anew, swapped by slug.
func samePages(b *testing.B, from, to string, rest []string, gql map[string][][]byte) ([]string, map[string][][]byte) {
	b.Helper()
	ids := func(base string) map[string]string { // slug -> id
		res, err := http.Get(base + "/api/nft/collections?limit=100")
		if err != nil {
			b.Fatal(err)
		}
		defer res.Body.Close()
		var page struct{ Items []struct{ ID, Slug string } }
		if err := json.NewDecoder(res.Body).Decode(&page); err != nil {
			b.Fatal(err)
		}
		m := map[string]string{}
		for _, c := range page.Items {
			m[c.Slug] = c.ID
		}
		return m
	}
	toIDs := ids(to)
	var swaps []string
	for slug, id := range ids(from) {
		if toIDs[slug] == "" {
			b.Fatalf("the market at %s has no collection %q", to, slug)
		}
		swaps = append(swaps, id, toIDs[slug])
	}
	swap := strings.NewReplacer(swaps...)
	var out []string
	for _, u := range rest {
		out = append(out, to+swap.Replace(strings.TrimPrefix(u, from)))
	}
	bodies := map[string][][]byte{}
	for shape, bs := range gql {
		for _, body := range bs {
			bodies[shape] = append(bodies[shape], []byte(swap.Replace(string(body))))
		}
	}
	return out, bodies
}

// mustShowBestOffers asks the first pages of bodies over GraphQL at base and fails unless some
// NFT of them has a best offer: the market with offers answers them.
func mustShowBestOffers(b *testing.B, base string, bodies [][]byte) {
	b.Helper()
	for _, body := range bodies[:min(len(bodies), 200)] {
		resp, err := http.Post(base+"/graphql", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			b.Fatal(err)
		}
		if bytes.Contains(got, []byte(`"bestOffer":{`)) {
			return
		}
	}
	b.Fatalf("no NFT of the first %d pages at %s has a bestOffer", min(len(bodies), 200), base)
}

// nftMix draws n pages from the store at dsn, sealed under kek (nil: the tests' key), and
// writes each as a REST URL on base and as the same page's GraphQL request in each of
// storetest.NFTPageShapes, by shape name.
func nftMix(b *testing.B, dsn string, kek []byte, base string, n int) (rest []string, gql map[string][][]byte) {
	cfg := storetest.Config(nil)
	cfg.DB = dsn
	if kek != nil {
		cfg.KEK = kek
	}
	s, err := store.Open(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	mix, err := storetest.NFTPageMix(context.Background(), s, n, 1)
	if err != nil {
		b.Fatal(err)
	}
	gql = map[string][][]byte{}
	for _, r := range mix {
		rest = append(rest, base+r.RESTPath())
		for _, shape := range storetest.NFTPageShapes {
			gql[shape.Name] = append(gql[shape.Name], r.GraphQLBodyAs(shape))
		}
	}
	return rest, gql
}

// benchStores names a fresh SQLite file and, with TEST_DATABASE_URL, a fresh PostgreSQL schema
// for a benchmark to run a marketd on each.
func benchStores(b *testing.B) []struct{ name, dsn string } {
	stores := []struct{ name, dsn string }{{"sqlite", "sqlite://" + filepath.Join(b.TempDir(), "m.db")}}
	for _, be := range storetest.Backends() {
		if be.Postgres {
			stores = append(stores, struct{ name, dsn string }{"postgres", be.DSN(b)})
		}
	}
	return stores
}
