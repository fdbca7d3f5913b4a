package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// market is an API with a collection whose creator and a few users are signed in.
type market struct {
	*testAPI
	creator *walletUser
	col     *store.Collection
}

// collectionOpts shape a test collection.
type collectionOpts struct {
	currency   store.Instrument
	royaltyBps int
	supply     int
	price      string // of the open phase
	perParty   int
	allow      []string
	items      []store.ItemSpec
	noPhase    bool
}

// newMarket starts an API and creates a collection with one open phase.
func newMarket(t *testing.T, b storetest.Backend, o collectionOpts) *market {
	t.Helper()
	a := newTestAPI(t, b)
	m := &market{testAPI: a, creator: a.walletUser("creator")}
	m.col = m.addCollection(t, "apes", m.creator.ID, o)
	return m
}

func (m *market) addCollection(t *testing.T, slug, creator string, o collectionOpts) *store.Collection {
	t.Helper()
	ctx := context.Background()
	if o.currency == "" {
		o.currency = store.CC
	}
	if o.supply == 0 {
		o.supply = 20
	}
	if o.price == "" {
		o.price = "1"
	}
	if o.perParty == 0 {
		o.perParty = 10
	}
	c, err := m.store.CreateCollection(ctx, store.CollectionSpec{Slug: slug, Name: strings.ToUpper(slug), Description: "test", Image: "https://img.example/" + slug,
		Creator: creator, Currency: o.currency, RoyaltyBps: o.royaltyBps, Supply: o.supply, Items: o.items})
	if err != nil {
		t.Fatal(err)
	}
	if !o.noPhase {
		now := m.clock.Now()
		if _, err := m.store.AddPhase(ctx, store.PhaseSpec{Collection: c.ID, Name: "public", Price: o.price,
			Start: now.Add(-time.Hour), End: now.Add(24 * time.Hour), PerPartyLimit: o.perParty, Allow: o.allow}); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// funded is a signed-in user with a tap of CC and USDCx and both preapprovals.
func (m *market) funded(hint string) *walletUser {
	m.t.Helper()
	u := m.walletUser(hint)
	m.walletTap(u, store.CC, "1000")
	m.walletTap(u, store.USDCx, "1000")
	m.preapprove(u, "nft")
	m.preapprove(u, "usdcx")
	return u
}

func (m *market) preapprove(u *walletUser, kind string) {
	m.t.Helper()
	m.prepareExecute("/api/wallet/"+kind+"-preapproval", map[string]string{}, u.Party, bearer(u.tok))
}

// pe runs base/prepare with body as u and executes it; it returns the execute response.
func (m *market) pe(u *walletUser, base string, body any) *testResponse {
	m.t.Helper()
	prep := m.do("POST", base+"/prepare", body, bearer(u.tok))
	if prep.status != http.StatusOK {
		return prep
	}
	exec := strings.TrimSuffix(base, "/"+lastSegment(base)) + "/" + lastSegment(base)
	if strings.HasSuffix(base, "/cancel") && strings.HasPrefix(base, "/api/nft/list/") {
		exec = "/api/nft/list/cancel"
	}
	return m.walletExecute(exec, prep, u.Party, u.tok)
}

func lastSegment(p string) string { return p[strings.LastIndex(p, "/")+1:] }

func (m *market) mint(u *walletUser, n int) []string {
	m.t.Helper()
	var r *testResponse
	if n == 1 {
		r = m.pe(u, "/api/nft/mint/atomic", map[string]any{"collectionId": m.col.ID}).ok(m.t)
	} else {
		r = m.pe(u, "/api/nft/mint/batch/atomic", map[string]any{"collectionId": m.col.ID, "quantity": n}).ok(m.t)
	}
	var out struct {
		ContractIDs []string `json:"contractIds"`
	}
	decodeAs(m.t, r, &out)
	if len(out.ContractIDs) != n {
		m.t.Fatalf("mint of %d answered %s", n, r.body)
	}
	return out.ContractIDs
}

func (m *market) list(u *walletUser, contractID, price string) string {
	m.t.Helper()
	return m.pe(u, "/api/nft/list", map[string]any{"contractId": contractID, "price": price}).ok(m.t).str(m.t, "cid")
}

// nft reads an NFT's detail.
func (m *market) nft(contractID string) nftDetailView {
	m.t.Helper()
	var d nftDetailView
	decodeAs(m.t, m.do("GET", "/api/nft/token/"+contractID, nil), &d)
	return d
}

func (m *market) collection() collectionView {
	m.t.Helper()
	var c collectionView
	decodeAs(m.t, m.do("GET", "/api/nft/slug/"+m.col.Slug, nil), &c)
	return c
}

func amountOf(b map[string]string, inst store.Instrument) string {
	amount, _, _ := strings.Cut(b[string(inst)], "/")
	return amount
}

func TestNFT_MintListBuySettlesEveryShareAtomically(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newMarket(t, b, collectionOpts{currency: store.USDCx, royaltyBps: 500, price: "2"})
		m.preapprove(m.creator, "usdcx")
		seller, buyer := m.funded("seller"), m.funded("buyer")
		nft := m.mint(seller, 1)[0]
		if got := amountOf(m.walletBalance(seller), store.USDCx); got != "998" {
			t.Fatalf("seller paid the mint price: USDCx %s, want 998", got)
		}
		cid := m.list(seller, nft, "100.000003")
		if d := m.nft(nft); d.Listing == nil || d.Listing.CID != cid || d.Listing.Price.String() != "100.000003" {
			t.Fatalf("listed NFT: %+v", d)
		}
		res := m.pe(buyer, "/api/nft/buy/atomic", map[string]string{"cid": cid}).ok(t)
		var got struct {
			UpdateID   string           `json:"updateId"`
			Status     string           `json:"status"`
			ContractID string           `json:"contractId"`
			Contracts  []string         `json:"contractIds"`
			Settlement store.Settlement `json:"settlement"`
		}
		decodeAs(t, res, &got)
		op, _ := m.store.OperatorParty(context.Background())
		// 250 bps fee and 500 bps royalty of 100.000003, each rounded down to 6 decimals.
		st := got.Settlement
		if st.Price.String() != "100.000003" || st.Fee.Amount.String() != "2.5" || *st.Fee.Party != op ||
			st.Royalty.Amount.String() != "5" || *st.Royalty.Party != m.creator.ID ||
			st.Seller.Amount.String() != "92.500003" || *st.Seller.Party != seller.ID {
			t.Fatalf("settlement %s", res.body)
		}
		if amountOf(m.walletBalance(buyer), store.USDCx) != "899.999997" {
			t.Errorf("buyer balance %v", m.walletBalance(buyer))
		}
		if amountOf(m.walletBalance(seller), store.USDCx) != "1090.500003" {
			t.Errorf("seller balance %v", m.walletBalance(seller))
		}
		if amountOf(m.walletBalance(m.creator), store.USDCx) != "7" { // mint 2 + royalty 5
			t.Errorf("creator balance %v", m.walletBalance(m.creator))
		}
		d := m.nft(got.ContractID)
		if d.Owner != buyer.ID || d.Listing != nil || d.ContractID != got.ContractID {
			t.Fatalf("bought NFT: %+v", d)
		}
		kinds := []string{}
		for _, e := range d.History {
			kinds = append(kinds, e.Kind)
		}
		if strings.Join(kinds, ",") != "sold,listed,minted" {
			t.Errorf("history %v, want sold,listed,minted (newest first)", kinds)
		}
		c := m.collection()
		if c.Minted != 1 || c.ListedCount != 0 || c.FloorPrice != nil || c.Owners != 1 || c.Volume.String() != "100.000003" {
			t.Errorf("collection stats %+v", c)
		}
		// The old contract id still names the NFT, as it is now.
		if d := m.nft(nft); d.ContractID != got.ContractID {
			t.Errorf("old contract id answers %+v", d)
		}
	})
}

func TestNFT_HundredConcurrentBuysOfOneListingCommitOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		m := newMarket(t, b, collectionOpts{currency: store.CC, royaltyBps: 1000, price: "0"})
		seller := m.funded("seller")
		nft := m.mint(seller, 1)[0]
		cid := m.list(seller, nft, "10")
		const buyers = 100
		users := make([]*walletUser, buyers)
		for i := range users {
			users[i] = m.walletUser(fmt.Sprintf("b%d", i))
			m.walletTap(users[i], store.CC, "50")
		}
		var wg sync.WaitGroup
		statuses := make([]int, buyers)
		codes := make([]string, buyers)
		start := make(chan struct{})
		for i, u := range users {
			wg.Go(func() {
				<-start
				prep := m.postAuthed(u, "/api/nft/buy/atomic/prepare", map[string]string{"cid": cid})
				if prep.status != http.StatusOK {
					statuses[i], codes[i] = prep.status, problemCode(prep.body)
					return
				}
				var p preparedView
				json.Unmarshal(prep.body, &p)
				raw := mustB64(p.PreparedTransactionHash)
				exec := m.postAuthed(u, "/api/nft/buy/atomic/execute", map[string]string{"preparedTransactionHash": p.PreparedTransactionHash, "signature": u.SignBase64(raw)})
				statuses[i], codes[i] = exec.status, problemCode(exec.body)
			})
		}
		close(start)
		wg.Wait()
		winners := 0
		var winner *walletUser
		for i := range users {
			switch {
			case statuses[i] == http.StatusOK:
				winners++
				winner = users[i]
			case statuses[i] == http.StatusConflict && (codes[i] == "stale" || codes[i] == "conflict"):
			default:
				t.Errorf("buyer %d: %d %s", i, statuses[i], codes[i])
			}
		}
		if winners != 1 {
			t.Fatalf("%d buys committed, want exactly 1", winners)
		}
		op, _ := m.store.OperatorParty(context.Background())
		for _, u := range users {
			want := "50"
			if u == winner {
				want = "40"
			}
			if got := amountOf(m.walletBalance(u), store.CC); got != want {
				t.Errorf("buyer %s has %s CC, want %s", u.ID, got, want)
			}
		}
		// seller: 1000 tapped + 10 - 0.25 fee - 1 royalty; creator 1 royalty; operator 0.25.
		if got := amountOf(m.walletBalance(seller), store.CC); got != "1008.75" {
			t.Errorf("seller has %s CC, want 1008.75", got)
		}
		if got := amountOf(m.walletBalance(m.creator), store.CC); got != "1" {
			t.Errorf("creator has %s CC, want 1", got)
		}
		bs, err := m.store.Balances(context.Background(), op)
		if err != nil || bs[0].Amount.String() != "0.25" {
			t.Errorf("operator balances %+v %v, want 0.25 CC", bs, err)
		}
		detail := m.nft(nft)
		if detail.Owner != winner.ID {
			t.Errorf("the NFT belongs to %s, the buyer that committed is %s", detail.Owner, winner.ID)
		}
		supply, err := m.store.Supply(context.Background())
		if err != nil || supply[store.CC].String() != fmt.Sprint(1000+buyers*50) {
			t.Errorf("CC supply %v %v, want %d", supply, err, 1000+buyers*50)
		}
	})
}

// postAuthed posts body as u from any goroutine.
func (a *testAPI) postAuthed(u *walletUser, path string, body any) rawResponse {
	j, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", a.http.URL+path, strings.NewReader(string(j)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+u.tok)
	res, err := a.http.Client().Do(req)
	if err != nil {
		return rawResponse{err: err}
	}
	defer res.Body.Close()
	var buf strings.Builder
	var b [4096]byte
	for {
		n, err := res.Body.Read(b[:])
		buf.Write(b[:n])
		if err != nil {
			break
		}
	}
	return rawResponse{status: res.StatusCode, header: res.Header, body: []byte(buf.String())}
}

func problemCode(body []byte) string {
	var p problem
	json.Unmarshal(body, &p)
	return p.Code
}

func mustB64(s string) []byte {
	b, err := base64Std(s)
	if err != nil {
		panic(err)
	}
	return b
}
