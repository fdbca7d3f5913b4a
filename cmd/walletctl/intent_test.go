package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"marketd/store"
	"marketd/store/storetest"
)

// pathProxy is someone on the path between walletctl and a real marketd: it forwards every
// request, may rewrite a prepare's request or answer on the way, and counts the executes that
// reach the server.
type pathProxy struct {
	target   string
	executes atomic.Int32
	tamper   atomic.Pointer[tamper]
}

// tamper rewrites the prepare requests to one path: the request body, or the answer (with the
// request that was sent, its Authorization header included).
type tamper struct {
	path     string
	request  func(body map[string]any)
	response func(p *pathProxy, r *http.Request, body []byte, answer map[string]any)
}

// proxied puts a pathProxy between the world's walletctl and its server, before any key signs
// in (a session is kept per server URL).
func (w *ctlWorld) proxied() *pathProxy {
	p := &pathProxy{target: w.server}
	hs := httptest.NewServer(p)
	w.t.Cleanup(hs.Close)
	w.server = hs.URL
	return p
}

func (p *pathProxy) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	tm := p.tamper.Load()
	hit := tm != nil && r.Method == "POST" && r.URL.Path == tm.path
	if hit && tm.request != nil {
		var m map[string]any
		if json.Unmarshal(body, &m) == nil {
			tm.request(m)
			body, _ = json.Marshal(m)
		}
	}
	if strings.HasSuffix(r.URL.Path, "/execute") || r.URL.Path == "/api/swap/intent/submit" {
		p.executes.Add(1)
	}
	status, answer := p.forward(r, body)
	if hit && tm.response != nil && status == http.StatusOK {
		var m map[string]any
		if json.Unmarshal(answer, &m) == nil {
			tm.response(p, r, body, m)
			answer, _ = json.Marshal(m)
		}
	}
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(status)
	rw.Write(answer)
}

// forward sends the request on to the server as it stands, token and all.
func (p *pathProxy) forward(r *http.Request, body []byte) (int, []byte) {
	req, _ := http.NewRequest(r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
	req.Header = r.Header.Clone()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return http.StatusBadGateway, []byte(err.Error())
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// swapAnswer is the attacker's own prepare, made with the token it saw on the path and the
// body rewritten: a transaction the server prepared, acting as the victim, with a hash that
// matches. The answer keeps its summary, which describes what the victim asked.
func swapAnswer(rewrite func(body map[string]any)) func(p *pathProxy, r *http.Request, body []byte, answer map[string]any) {
	return func(p *pathProxy, r *http.Request, body []byte, answer map[string]any) {
		var m map[string]any
		json.Unmarshal(body, &m)
		rewrite(m)
		b, _ := json.Marshal(m)
		req := r.Clone(context.Background())
		status, own := p.forward(req, b)
		var theirs map[string]any
		if status != http.StatusOK || json.Unmarshal(own, &theirs) != nil {
			panic(fmt.Sprintf("the attacker's prepare: %d %s", status, own))
		}
		answer["preparedTransaction"] = theirs["preparedTransaction"]
		answer["preparedTransactionHash"] = theirs["preparedTransactionHash"]
	}
}

// balances is what the parties hold, spendable/locked per instrument.
func (w *ctlWorld) balances(parties ...string) string {
	w.t.Helper()
	var out []string
	for _, p := range parties {
		bs, err := w.store.Balances(context.Background(), p)
		if err != nil {
			w.t.Fatal(err)
		}
		for _, b := range bs {
			out = append(out, fmt.Sprintf("%s %s %s/%s", p[:strings.Index(p, "::")], b.Instrument, b.Amount, b.Locked))
		}
	}
	return strings.Join(out, ", ")
}

// refusedUnsigned runs a shortcut through a tampering proxy and wants it refused before any
// execute reaches the server, with an error that says each of words, and nobody's balance
// changed.
func (w *ctlWorld) refusedUnsigned(p *pathProxy, tm *tamper, parties []string, words []string, key string, args ...string) {
	w.t.Helper()
	before := w.balances(parties...)
	executes := p.executes.Load()
	p.tamper.Store(tm)
	defer p.tamper.Store(nil)
	out, err := w.ctl(key, args...)
	if err == nil {
		w.t.Fatalf("walletctl %s through a proxy rewriting %s succeeded: %s", strings.Join(args, " "), tm.path, out)
	}
	w.t.Logf("walletctl %s: %v", args[0], err)
	for _, word := range append([]string{"not signing"}, words...) {
		if !strings.Contains(err.Error(), word) {
			w.t.Errorf("walletctl %s: error %q does not mention %q", strings.Join(args, " "), err, word)
		}
	}
	if n := p.executes.Load() - executes; n != 0 {
		w.t.Errorf("walletctl %s sent %d execute(s) after a refusal", strings.Join(args, " "), n)
	}
	if after := w.balances(parties...); after != before {
		w.t.Errorf("balances changed by a refused %s:\nbefore %s\nafter  %s", args[0], before, after)
	}
}

func TestSend_RefusesATransactionToAnotherReceiver(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		w := newCtlWorld(t, b)
		p := w.proxied()
		alice, bob, eve := w.party("alice"), w.party("bob"), w.party("eve")
		w.must("alice", "tap", "CC", "100")
		parties := []string{alice, bob, eve}

		// The proxy rewrites the receiver in the request: the server prepares a send to eve.
		toEve := func(m map[string]any) { m["receiver"] = eve }
		w.refusedUnsigned(p, &tamper{path: "/api/wallet/cc-transfer/prepare", request: toEve}, parties,
			[]string{"send 10 CC to " + bob, "send 10 CC to " + eve}, "alice", "send", bob, "10")

		// The proxy answers with a transaction of its own making, prepared with alice's token
		// for eve (a valid one, hash and actAs matching), under the summary of the send to bob.
		w.refusedUnsigned(p, &tamper{path: "/api/wallet/cc-transfer/prepare", response: swapAnswer(toEve)}, parties,
			[]string{"send 10 CC to " + bob, "send 10 CC to " + eve}, "alice", "send", bob, "10")

		// The same amount to bob, but only part of it: the rest goes to eve.
		w.refusedUnsigned(p, &tamper{path: "/api/wallet/cc-transfer/prepare", response: swapAnswer(func(m map[string]any) { m["amount"] = "4" })}, parties,
			[]string{"send 10 CC to " + bob, "send 4 CC to " + bob}, "alice", "send", bob, "10")

		// Untouched, the send goes through.
		w.must("alice", "send", bob, "10")
		if got := w.balances(alice, bob, eve); !strings.Contains(got, "alice CC 90/0") || !strings.Contains(got, "bob CC 10/0") || !strings.Contains(got, "eve CC 0/0") {
			t.Errorf("after the send: %s", got)
		}
	})
}

// renew signs the renewal it asked for, of its own kind, and nothing a proxy swaps in.
func TestRenew_SignsTheRenewalOfTheKindAsked(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		w := newCtlWorld(t, b)
		p := w.proxied()
		bob := w.party("bob")
		nft := w.must("bob", "preapprove", "nft")
		usdcx := w.must("bob", "preapprove", "usdcx")
		preapprovals := func() string {
			ps, err := w.store.Preapprovals(context.Background(), bob)
			if err != nil {
				t.Fatal(err)
			}
			return fmt.Sprint(ps)
		}
		before := preapprovals()

		// The proxy makes the renewal of usdcx one of nft.
		w.refusedUnsigned(p, &tamper{path: "/api/wallet/preapproval/renew/prepare", request: func(m map[string]any) { m["kind"] = "nft" }},
			[]string{bob}, []string{"renew your consent to receive usdcx", "kind is nft, not usdcx"}, "bob", "renew", "usdcx")
		if after := preapprovals(); after != before {
			t.Fatalf("a refused renewal changed bob's preapprovals:\nbefore %s\nafter  %s", before, after)
		}

		// Untouched, it is signed and executed: the usdcx preapproval is renewed, the nft one stays.
		executes := p.executes.Load()
		renewed := w.must("bob", "renew", "usdcx")
		if n := p.executes.Load() - executes; n != 1 || renewed["status"] != "committed" || renewed["cid"] == usdcx["cid"] {
			t.Fatalf("renew sent %d execute(s) and answered %v after %v", n, renewed, usdcx)
		}
		ps, err := w.store.Preapprovals(context.Background(), bob)
		if err != nil || len(ps) != 2 || ps[0].CID != nft["cid"] || ps[1].CID != renewed["cid"] {
			t.Fatalf("bob's preapprovals after renewing usdcx: %+v (%v)", ps, err)
		}
	})
}

// What walletctl shows before it signs comes from the signed bytes: a summary that lies is
// not shown, by a shortcut or by exec.
func TestSigning_ShowsWhatTheBytesDoNotTheServersSummary(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		w := newCtlWorld(t, b)
		p := w.proxied()
		alice, bob := w.party("alice"), w.party("bob")
		w.must("alice", "tap", "CC", "100")
		lie := func(p *pathProxy, r *http.Request, body []byte, answer map[string]any) {
			answer["summary"] = map[string]any{"action": "send 0.01 CC to charity"}
		}
		p.tamper.Store(&tamper{path: "/api/wallet/cc-transfer/prepare", response: lie})
		for _, args := range [][]string{
			{"send", bob, "10"},
			{"exec", "/api/wallet/cc-transfer", `{"receiver":"` + bob + `","amount":"10"}`},
		} {
			var out, log bytes.Buffer
			if err := run(append([]string{"--server", w.server, "--key", w.dir + "/alice.key"}, args...), &out, &log); err != nil {
				t.Fatalf("%s: %v", args[0], err)
			}
			shown := log.String()
			if strings.Contains(shown, "charity") || !strings.Contains(shown, "send 10 CC from "+alice+" to "+bob) ||
				!strings.Contains(shown, "creates 10 CC for "+bob) {
				t.Errorf("%s showed:\n%s", args[0], shown)
			}
			if args[0] == "exec" && !strings.Contains(shown, `"outputs": [`) {
				t.Errorf("exec does not show every effect:\n%s", shown)
			}
		}
	})
}

func TestNFTShortcuts_RefuseAnotherListingOrPrice(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		w := newCtlWorld(t, b)
		p := w.proxied()
		creator, alice, bob, eve := w.party("creator"), w.party("alice"), w.party("bob"), w.party("eve")
		w.apes(creator, "1")
		for _, k := range []string{"alice", "bob", "eve"} {
			w.must(k, "tap", "CC", "100")
		}
		mine := ids(w.must("alice", "mint", "apes"), "contractIds")[0]
		junk := ids(w.must("eve", "mint", "apes"), "contractIds")[0]
		cheap := w.must("alice", "list", mine, "5")["cid"].(string)
		dear := w.must("eve", "list", junk, "90")["cid"].(string)
		parties := []string{creator, alice, bob, eve}

		// bob buys alice's listing; the proxy makes it eve's dearer one.
		w.refusedUnsigned(p, &tamper{path: "/api/nft/buy/atomic/prepare", request: func(m map[string]any) { m["cid"] = dear }}, parties,
			[]string{"buy listing " + cheap, dear}, "bob", "buy", cheap)

		// eve lists a second NFT at 50; the proxy lowers the price for an accomplice to buy.
		other := ids(w.must("eve", "mint", "apes"), "contractIds")[0]
		w.refusedUnsigned(p, &tamper{path: "/api/nft/list/prepare", request: func(m map[string]any) { m["price"] = "0.01" }}, parties,
			[]string{"list NFT " + other + " for 50", "price is 0.01, not 50"}, "eve", "list", other, "50")

		// Untouched, both go through.
		w.must("bob", "buy", cheap)
		w.must("eve", "list", other, "50")
	})
}

func TestSwapSubmit_RefusesALoweredMinReceive(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		w := newCtlWorld(t, b)
		p := w.proxied()
		pool := w.swapPool()
		taker, lp := w.party("taker"), w.party("lp")
		w.must("taker", "tap", "USDCx", "100")
		w.must("lp", "tap", "CC", "100")
		ask := w.must("lp", "lp", "publish", pool, "ask", "2.5", "40")["cid"].(string)
		parties := []string{taker, lp}

		// The proxy lowers minReceive, so that the quote can fill it far below the asked price.
		w.refusedUnsigned(p, &tamper{path: "/api/swap/prepare", request: func(m map[string]any) { m["minReceive"] = "0.000001" }}, parties,
			[]string{"swap 10 USDCx for at least 3.9 on " + pool, "minReceive is 0.000001, not 3.9"}, "taker", "swap", "submit", pool, "USDCx", "10", "3.9")
		page, err := w.store.ActiveIntents(context.Background(), taker, store.PageRequest{})
		if err != nil || len(page.Items) != 0 {
			t.Errorf("intents after a refused submit: %v %v", page.Items, err)
		}

		// Untouched, it fills against the ask.
		if r := w.must("taker", "swap", "submit", pool, "USDCx", "10", "3.9"); r["intentStatus"] != "filled" {
			t.Errorf("submit: %v", r)
		}
		w.must("lp", "lp", "cancel", ask)
	})
}

// swapPool makes the CC/USDCx pool at an oracle price of 2.5 and returns its id.
func (w *ctlWorld) swapPool() string {
	w.t.Helper()
	ctx := context.Background()
	if _, err := w.store.SetOraclePrice(ctx, store.CC, store.USDCx, "2.5"); err != nil {
		w.t.Fatal(err)
	}
	p, err := w.store.CreatePool(ctx, store.CC, store.USDCx, 30)
	if err != nil {
		w.t.Fatal(err)
	}
	return p.PoolID
}

// The swap shortcuts' checks admit what the server prepares for them, untouched.
func TestSwapShortcuts_PublishSubmitCancelClaim(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		w := newCtlWorld(t, b)
		pool := w.swapPool()
		w.party("lp")
		w.party("taker")
		w.must("lp", "tap", "CC", "100")
		w.must("lp", "tap", "USDCx", "100")
		w.must("taker", "tap", "USDCx", "100")
		w.must("taker", "tap", "CC", "100")
		ask := w.must("lp", "lp", "publish", pool, "ask", "2.5", "40", "2h")["cid"].(string)
		bid := w.must("lp", "lp", "publish", pool, "bid", "2.4", "3.33")["cid"].(string)
		if r := w.must("taker", "swap", "submit", pool, "USDCx", "10", "3.9"); r["intentStatus"] != "filled" {
			t.Errorf("submit against the ask: %v", r)
		}
		pending := w.must("taker", "swap", "submit", pool, "CC", "50", "1000", "30m")
		if pending["intentStatus"] != "pending" {
			t.Fatalf("submit that waits: %v", pending)
		}
		w.must("taker", "swap", "cancel", pending["intentCid"].(string))
		w.must("lp", "lp", "cancel", ask)
		w.must("lp", "lp", "cancel", bid)
		w.must("lp", "lp", "claim", pool)
	})
}

func TestServer_PlainHTTPBeyondThisMachineIsWarnedAbout(t *testing.T) {
	for _, tc := range []struct {
		server string
		warned bool
	}{
		{"http://marketd.example:8080", true},
		{"http://10.0.0.7", true},
		{"http://[2001:db8::1]:8080", true},
		{"HTTP://marketd.example", true},
		{"http://localhost.marketd.example", true},
		{"https://marketd.example", false},
		{"http://localhost:8080", false},
		{"http://LOCALHOST", false},
		{"http://127.0.0.1:8080", false},
		{"http://127.8.9.10", false},
		{"http://[::1]:8080", false},
	} {
		var out, log bytes.Buffer
		// whoami with no session stops before any request: the warning comes first.
		err := run([]string{"--server", tc.server, "--key", t.TempDir() + "/none.key", "whoami"}, &out, &log)
		if err == nil {
			t.Fatalf("%s: whoami with no session succeeded", tc.server)
		}
		if got := strings.Contains(log.String(), "warning: "+tc.server+" is plain http"); got != tc.warned {
			t.Errorf("--server %s: warned %v, want %v (stderr %q)", tc.server, got, tc.warned, log.String())
		}
	}
	// Commands that never reach the server do not warn.
	var out, log bytes.Buffer
	if err := run([]string{"--server", "http://marketd.example", "--key", t.TempDir() + "/k.key", "keygen"}, &out, &log); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "warning") {
		t.Errorf("keygen warned: %q", log.String())
	}
}
