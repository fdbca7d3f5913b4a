package rest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// walletUser is an onboarded, signed-in party.
type walletUser struct {
	*storetest.Party
	tok string
}

func (a *testAPI) walletUser(hint string) *walletUser {
	a.t.Helper()
	p := a.onboard(hint)
	return &walletUser{p, a.token(p)}
}

// decodeAs decodes a 200 body into v strictly: a field v does not know fails the test.
func decodeAs(t testing.TB, r *testResponse, v any) {
	t.Helper()
	r.ok(t)
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("body %s: %v", r.body, err)
	}
}

// walletTap credits u through the dev-mode tap.
func (a *testAPI) walletTap(u *walletUser, inst store.Instrument, amount string) map[string]any {
	a.t.Helper()
	return a.prepareExecute("/api/wallet/tap", map[string]string{"instrument": string(inst), "amount": amount}, u.Party, bearer(u.tok))
}

// walletSend sends amount CC from u to receiver and returns the receipt.
func (a *testAPI) walletSend(u *walletUser, receiver, amount string) map[string]any {
	a.t.Helper()
	return a.prepareExecute("/api/wallet/cc-transfer", map[string]string{"receiver": receiver, "amount": amount}, u.Party, bearer(u.tok))
}

// walletExecute signs the prepared transaction of a prepare response and executes it at base.
func (a *testAPI) walletExecute(base string, prep *testResponse, signer *storetest.Party, tok string) *testResponse {
	a.t.Helper()
	hash := prep.ok(a.t).str(a.t, "preparedTransactionHash")
	raw, _ := base64.StdEncoding.DecodeString(hash)
	return a.do("POST", base+"/execute", map[string]string{"preparedTransactionHash": hash, "signature": signer.SignBase64(raw)}, bearer(tok))
}

// balanceBody is GET /api/wallet/balance/{partyId}, amounts kept raw to check they are strings.
type balanceBody struct {
	PartyID  string `json:"partyId"`
	Balances []struct {
		Instrument string          `json:"instrument"`
		Amount     json.RawMessage `json:"amount"`
		Locked     json.RawMessage `json:"locked"`
		Holdings   int             `json:"holdings"`
	} `json:"balances"`
}

// walletBalance returns u's balances by instrument as "amount/locked/holdings".
func (a *testAPI) walletBalance(u *walletUser) map[string]string {
	a.t.Helper()
	var b balanceBody
	decodeAs(a.t, a.do("GET", "/api/wallet/balance/"+u.ID, nil, bearer(u.tok)), &b)
	if b.PartyID != u.ID {
		a.t.Fatalf("balance of %s answers for %s", u.ID, b.PartyID)
	}
	out := map[string]string{}
	for _, x := range b.Balances {
		var amount, locked string
		if json.Unmarshal(x.Amount, &amount) != nil || json.Unmarshal(x.Locked, &locked) != nil {
			a.t.Fatalf("amounts must be decimal strings: %+v", x)
		}
		if _, dup := out[x.Instrument]; dup {
			a.t.Fatalf("%s listed twice", x.Instrument)
		}
		out[x.Instrument] = fmt.Sprintf("%s/%s/%d", amount, locked, x.Holdings)
	}
	return out
}

func (a *testAPI) walletUTXOs(u *walletUser) map[string]int {
	a.t.Helper()
	var b struct {
		PartyID   string         `json:"partyId"`
		UTXOCount map[string]int `json:"utxoCount"`
	}
	decodeAs(a.t, a.do("GET", "/api/wallet/utxo-count/"+u.ID, nil, bearer(u.tok)), &b)
	if b.PartyID != u.ID {
		a.t.Fatalf("utxo-count of %s answers for %s", u.ID, b.PartyID)
	}
	return b.UTXOCount
}

// ghostParty is a well-formed party id nobody onboarded.
var ghostParty = "ghost::1220" + strings.Repeat("0f", 32)

func TestWallet_BalanceAndUTXOCountOfOwnPartyListBothInstruments(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice := a.walletUser("alice")
		if got, want := a.walletBalance(alice), map[string]string{"CC": "0/0/0", "USDCx": "0/0/0"}; !maps.Equal(got, want) {
			t.Fatalf("a new party's balance: %v, want %v", got, want)
		}
		if got := a.walletUTXOs(alice); !maps.Equal(got, map[string]int{"CC": 0, "USDCx": 0}) {
			t.Fatalf("a new party's utxo-count: %v", got)
		}
		a.walletTap(alice, store.CC, "12.5")
		a.walletTap(alice, store.CC, "0.0000000001")
		a.walletTap(alice, store.USDCx, "3.000001")
		if got, want := a.walletBalance(alice), map[string]string{"CC": "12.5000000001/0/2", "USDCx": "3.000001/0/1"}; !maps.Equal(got, want) {
			t.Fatalf("balance: %v, want %v", got, want)
		}
		if got := a.walletUTXOs(alice); !maps.Equal(got, map[string]int{"CC": 2, "USDCx": 1}) {
			t.Fatalf("utxo-count: %v", got)
		}
	})
}

func TestWallet_ReadsNamingAnotherPartyAre403PartyMismatch(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice, bob := a.walletUser("alice"), a.walletUser("bob")
		for _, path := range []string{
			"/api/wallet/balance/", "/api/wallet/utxo-count/", "/api/wallet/rewards/", "/api/wallet/preapprovals/",
		} {
			a.do("GET", path+bob.ID, nil, bearer(alice.tok)).wantProblem(t, http.StatusForbidden, store.CodePartyMismatch)
			a.do("GET", path+ghostParty, nil, bearer(alice.tok)).wantProblem(t, http.StatusForbidden, store.CodePartyMismatch)
			a.do("GET", path+alice.ID, nil, bearer(alice.tok)).ok(t)
			a.do("GET", path+alice.ID, nil).wantProblem(t, http.StatusUnauthorized, store.CodeUnauthenticated)
		}
		a.do("GET", "/api/wallet/rewards/"+bob.ID+"/history", nil, bearer(alice.tok)).wantProblem(t, http.StatusForbidden, store.CodePartyMismatch)
		a.do("GET", "/api/wallet/rewards/"+alice.ID+"/history", nil, bearer(alice.tok)).ok(t)
	})
}

// receiptBody is a cc-transfer or tap execute's answer.
type receiptBody struct {
	UpdateID string   `json:"updateId"`
	Status   string   `json:"status"`
	CIDs     []string `json:"cids"`
}

func TestWallet_CCTransferMovesTheMoneyAndTheReceiptListsCIDs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice, bob, carol := a.walletUser("alice"), a.walletUser("bob"), a.walletUser("carol")
		a.walletTap(alice, store.CC, "10")

		prep := a.do("POST", "/api/wallet/cc-transfer/prepare", map[string]string{"receiver": bob.ID, "amount": "2.5"}, bearer(alice.tok))
		var pr preparedView
		decodeAs(t, prep, &pr)
		if pr.HashingScheme != "sha256-v1" || pr.ActAs != alice.ID || pr.ExpiresAt <= a.clock.Now().Unix() || len(pr.Summary) == 0 || pr.PreparedTransaction == "" {
			t.Fatalf("prepare answered %s", prep.body)
		}

		// Signed by another key, or executed with another party's token: refused, nothing moves.
		raw, _ := base64.StdEncoding.DecodeString(pr.PreparedTransactionHash)
		a.do("POST", "/api/wallet/cc-transfer/execute", map[string]string{"preparedTransactionHash": pr.PreparedTransactionHash, "signature": carol.SignBase64(raw)}, bearer(alice.tok)).
			wantProblem(t, http.StatusUnauthorized, store.CodeInvalidSignature)
		a.do("POST", "/api/wallet/cc-transfer/execute", map[string]string{"preparedTransactionHash": pr.PreparedTransactionHash, "signature": alice.SignBase64(raw)}, bearer(carol.tok)).
			wantProblem(t, http.StatusForbidden, store.CodePartyMismatch)
		if got := a.walletBalance(alice)["CC"]; got != "10/0/1" {
			t.Fatalf("after refused executes alice has %s", got)
		}

		res := a.walletExecute("/api/wallet/cc-transfer", prep, alice.Party, alice.tok)
		var rc receiptBody
		decodeAs(t, res, &rc)
		if rc.Status != "committed" || rc.UpdateID == "" || len(rc.CIDs) != 2 {
			t.Fatalf("receipt %s: want committed with the receiver's holding and the change", res.body)
		}
		if got := a.walletBalance(alice)["CC"]; got != "7.5/0/1" {
			t.Errorf("alice has %s, want 7.5", got)
		}
		if got := a.walletBalance(bob)["CC"]; got != "2.5/0/1" {
			t.Errorf("bob has %s, want 2.5", got)
		}
		for _, cid := range rc.CIDs {
			h, err := a.store.HoldingByID(t.Context(), cid)
			if err != nil || h.CreatedUpdate != rc.UpdateID || !h.Active() {
				t.Errorf("receipt cid %s: %+v, %v", cid, h, err)
			}
		}

		// Executing again answers the same receipt and moves nothing.
		again := a.walletExecute("/api/wallet/cc-transfer", prep, alice.Party, alice.tok).ok(t)
		if string(again.body) != string(res.body) {
			t.Errorf("replay answered %s, want %s", again.body, res.body)
		}
		if got := a.walletBalance(bob)["CC"]; got != "2.5/0/1" {
			t.Errorf("after a replay bob has %s, want 2.5", got)
		}
	})
}

func TestWallet_SecondCCTransferOverSpentHoldingsIs409Stale(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice, bob := a.walletUser("alice"), a.walletUser("bob")
		a.walletTap(alice, store.CC, "10")
		body := map[string]string{"receiver": bob.ID, "amount": "6"}
		p1 := a.do("POST", "/api/wallet/cc-transfer/prepare", body, bearer(alice.tok)).ok(t)
		p2 := a.do("POST", "/api/wallet/cc-transfer/prepare", body, bearer(alice.tok)).ok(t)
		a.walletExecute("/api/wallet/cc-transfer", p1, alice.Party, alice.tok).ok(t)
		a.walletExecute("/api/wallet/cc-transfer", p2, alice.Party, alice.tok).wantProblem(t, http.StatusConflict, store.CodeStale)
		if got := a.walletBalance(bob)["CC"]; got != "6/0/1" {
			t.Errorf("bob has %s, want 6", got)
		}
	})
}

func TestWallet_CCTransferBeyondTheBalanceIs409InsufficientFunds(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice, bob := a.walletUser("alice"), a.walletUser("bob")
		a.do("POST", "/api/wallet/cc-transfer/prepare", map[string]string{"receiver": bob.ID, "amount": "1"}, bearer(alice.tok)).
			wantProblem(t, http.StatusConflict, store.CodeInsufficientFunds)
		a.walletTap(alice, store.CC, "10")
		a.walletTap(alice, store.USDCx, "100") // another instrument does not pay for CC
		a.do("POST", "/api/wallet/cc-transfer/prepare", map[string]string{"receiver": bob.ID, "amount": "10.0000000001"}, bearer(alice.tok)).
			wantProblem(t, http.StatusConflict, store.CodeInsufficientFunds)
		a.walletSend(alice, bob.ID, "10")
	})
}

func TestWallet_CCTransferWithABadAmountIs400(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice, bob := a.walletUser("alice"), a.walletUser("bob")
		a.walletTap(alice, store.CC, "100")
		for _, amount := range []string{
			`5`, `5.5`, `"-1"`, `"0"`, `"0.0"`, `"0.00000000001"`, `"1e3"`, `"1."`, `".5"`, `" 1"`, `""`, `null`, `"1,5"`, `"+1"`,
		} {
			body := fmt.Sprintf(`{"receiver": %q, "amount": %s}`, bob.ID, amount)
			a.do("POST", "/api/wallet/cc-transfer/prepare", body, bearer(alice.tok)).wantProblem(t, http.StatusBadRequest, store.CodeInvalidRequest)
		}
		for _, body := range []string{
			fmt.Sprintf(`{"receiver": %q}`, bob.ID),
			`{"amount": "1"}`,
			fmt.Sprintf(`{"receiver": %q, "amount": "1", "fee": "0"}`, bob.ID),
			`{"receiver": "bob", "amount": "1"}`,
		} {
			a.do("POST", "/api/wallet/cc-transfer/prepare", body, bearer(alice.tok)).wantProblem(t, http.StatusBadRequest, store.CodeInvalidRequest)
		}
		if got := a.walletBalance(bob)["CC"]; got != "0/0/0" {
			t.Errorf("bob has %s after refused transfers", got)
		}
	})
}

func TestWallet_CCTransferToAnUnknownReceiverIs404PartyNotFound(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice := a.walletUser("alice")
		a.walletTap(alice, store.CC, "10")
		a.do("POST", "/api/wallet/cc-transfer/prepare", map[string]string{"receiver": ghostParty, "amount": "1"}, bearer(alice.tok)).
			wantProblem(t, http.StatusNotFound, store.CodePartyNotFound)
	})
}

func TestWallet_CCTransferNamingAnotherSenderIs403PartyMismatch(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice, bob := a.walletUser("alice"), a.walletUser("bob")
		a.walletTap(alice, store.CC, "10")
		a.walletTap(bob, store.CC, "10")
		a.do("POST", "/api/wallet/cc-transfer/prepare", map[string]string{"sender": bob.ID, "receiver": alice.ID, "amount": "1"}, bearer(alice.tok)).
			wantProblem(t, http.StatusForbidden, store.CodePartyMismatch)
		a.do("POST", "/api/wallet/cc-transfer/prepare", map[string]string{"sender": ghostParty, "receiver": bob.ID, "amount": "1"}, bearer(alice.tok)).
			wantProblem(t, http.StatusForbidden, store.CodePartyMismatch)
		// Naming itself is allowed, and the money moves from the token's party.
		a.prepareExecute("/api/wallet/cc-transfer", map[string]string{"sender": alice.ID, "receiver": bob.ID, "amount": "1"}, alice.Party, bearer(alice.tok))
		if got := a.walletBalance(alice)["CC"]; got != "9/0/1" {
			t.Errorf("alice has %s, want 9", got)
		}
		if got := a.walletBalance(bob)["CC"]; got != "11/0/2" {
			t.Errorf("bob has %s, want 11 in 2 holdings", got)
		}
	})
}

// preapprovalBody is a preapproval execute's or renewal's answer.
type preapprovalBody struct {
	UpdateID  string `json:"updateId"`
	Status    string `json:"status"`
	CID       string `json:"cid"`
	ExpiresAt int64  `json:"expiresAt"`
}

func TestWallet_PreapprovalExecuteReturnsCIDAndExpiresAt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		bob := a.walletUser("bob")
		want := a.clock.Now().Add(a.store.Config().PreapprovalTTL).Unix()
		cids := map[string]bool{}
		for _, kind := range []string{"nft", "usdcx"} {
			base := "/api/wallet/" + kind + "-preapproval"
			prep := a.do("POST", base+"/prepare", map[string]string{}, bearer(bob.tok))
			var p preapprovalBody
			decodeAs(t, a.walletExecute(base, prep, bob.Party, bob.tok), &p)
			if p.Status != "committed" || p.UpdateID == "" || p.CID == "" || p.ExpiresAt != want || cids[p.CID] {
				t.Fatalf("%s preapproval: %+v, want a new cid expiring at %d", kind, p, want)
			}
			cids[p.CID] = true
		}
		var list struct {
			Preapprovals []struct {
				CID    string `json:"cid"`
				Kind   string `json:"kind"`
				Active bool   `json:"active"`
			} `json:"preapprovals"`
		}
		decodeAs(t, a.do("GET", "/api/wallet/preapprovals/"+bob.ID, nil, bearer(bob.tok)), &list)
		if len(list.Preapprovals) != 2 || !cids[list.Preapprovals[0].CID] || !cids[list.Preapprovals[1].CID] {
			t.Errorf("bob's preapprovals: %+v", list)
		}
		// The prepare takes no fields.
		a.do("POST", "/api/wallet/usdcx-preapproval/prepare", map[string]string{"kind": "nft"}, bearer(bob.tok)).
			wantProblem(t, http.StatusBadRequest, store.CodeInvalidRequest)
	})
}

func TestWallet_RenewMovesExpiresAtLater(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		bob := a.walletUser("bob")
		a.do("POST", "/api/wallet/preapproval/renew", map[string]string{"kind": "usdcx"}, bearer(bob.tok)).
			wantProblem(t, http.StatusNotFound, store.CodeNotFound)

		prep := a.do("POST", "/api/wallet/usdcx-preapproval/prepare", nil, bearer(bob.tok))
		var first preapprovalBody
		decodeAs(t, a.walletExecute("/api/wallet/usdcx-preapproval", prep, bob.Party, bob.tok), &first)

		a.clock.Advance(time.Hour) // within the token's lifetime
		var renewed preapprovalBody
		decodeAs(t, a.do("POST", "/api/wallet/preapproval/renew", map[string]string{"kind": "usdcx"}, bearer(bob.tok)), &renewed)
		if renewed.CID == "" || renewed.CID == first.CID || renewed.ExpiresAt <= first.ExpiresAt {
			t.Fatalf("renewal %+v after %+v: want a new cid expiring later", renewed, first)
		}
		if want := a.clock.Now().Add(a.store.Config().PreapprovalTTL).Unix(); renewed.ExpiresAt != want {
			t.Errorf("renewed to %d, want %d", renewed.ExpiresAt, want)
		}

		a.do("POST", "/api/wallet/preapproval/renew", map[string]string{"kind": "nft"}, bearer(bob.tok)).
			wantProblem(t, http.StatusNotFound, store.CodeNotFound)
		for _, body := range []string{`{"kind": "NFT"}`, `{"kind": "cc"}`, `{}`, `{"kind": 1}`} {
			a.do("POST", "/api/wallet/preapproval/renew", body, bearer(bob.tok)).wantProblem(t, http.StatusBadRequest, store.CodeInvalidRequest)
		}
		a.do("POST", "/api/wallet/preapproval/renew", map[string]string{"kind": "usdcx"}).wantProblem(t, http.StatusUnauthorized, store.CodeUnauthenticated)
	})
}

// The signed renewal: prepare names what the party signs; execute moves expiresAt only with
// the party's signature, once; an expired prepared renewal and a missing preapproval are refused.
func TestWallet_SignedRenewalMovesExpiresAtOnlyWithTheSignature(t *testing.T) {
	const base = "/api/wallet/preapproval/renew"
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		bob, carol := a.walletUser("bob"), a.walletUser("carol")
		a.do("POST", base+"/prepare", map[string]string{"kind": "usdcx"}, bearer(bob.tok)).
			wantProblem(t, http.StatusNotFound, store.CodeNotFound)
		for _, body := range []string{`{"kind": "NFT"}`, `{}`, `{"kind": "usdcx", "party": "x"}`} {
			a.do("POST", base+"/prepare", body, bearer(bob.tok)).wantProblem(t, http.StatusBadRequest, store.CodeInvalidRequest)
		}
		a.do("POST", base+"/prepare", map[string]string{"kind": "usdcx"}).wantProblem(t, http.StatusUnauthorized, store.CodeUnauthenticated)

		var first preapprovalBody
		decodeAs(t, a.walletExecute("/api/wallet/usdcx-preapproval", a.do("POST", "/api/wallet/usdcx-preapproval/prepare", nil, bearer(bob.tok)), bob.Party, bob.tok), &first)
		current := func() []preapprovalBody {
			var list struct{ Preapprovals []preapprovalBody }
			decodeAs(t, a.do("GET", "/api/wallet/preapprovals/"+bob.ID, nil, bearer(bob.tok)), &list)
			return list.Preapprovals
		}
		a.clock.Advance(time.Hour)
		prep := a.do("POST", base+"/prepare", map[string]string{"kind": "usdcx"}, bearer(bob.tok)).ok(t)
		a.walletExecute(base, prep, carol.Party, bob.tok).wantProblem(t, http.StatusUnauthorized, store.CodeInvalidSignature)
		a.walletExecute(base, prep, bob.Party, carol.tok).wantProblem(t, http.StatusForbidden, store.CodePartyMismatch)
		if got := current(); len(got) != 1 || got[0].CID != first.CID || got[0].ExpiresAt != first.ExpiresAt {
			t.Fatalf("a renewal without bob's signature changed his preapprovals: %+v, was %+v", got, first)
		}

		signed := a.walletExecute(base, prep, bob.Party, bob.tok).ok(t)
		var renewed preapprovalBody
		decodeAs(t, signed, &renewed)
		if want := a.clock.Now().Add(a.store.Config().PreapprovalTTL).Unix(); renewed.Status != "committed" || renewed.UpdateID == "" ||
			renewed.CID == "" || renewed.CID == first.CID || renewed.ExpiresAt != want {
			t.Fatalf("renewal %s after %+v: want a new cid expiring at %d", signed.body, first, want)
		}
		if got := current(); len(got) != 1 || got[0].CID != renewed.CID || got[0].ExpiresAt != renewed.ExpiresAt {
			t.Fatalf("after the renewal bob's preapprovals are %+v, want %+v", got, renewed)
		}
		if replay := a.walletExecute(base, prep, bob.Party, bob.tok).ok(t); !bytes.Equal(replay.body, signed.body) {
			t.Fatalf("replay answered %s, want the first receipt %s", replay.body, signed.body)
		}

		late := a.do("POST", base+"/prepare", map[string]string{"kind": "usdcx"}, bearer(bob.tok)).ok(t)
		a.clock.Advance(a.store.Config().PreparedTTL)
		a.walletExecute(base, late, bob.Party, bob.tok).wantProblem(t, http.StatusGone, store.CodePreparedExpired)
		if got := current(); len(got) != 1 || got[0].CID != renewed.CID || got[0].ExpiresAt != renewed.ExpiresAt {
			t.Fatalf("an expired prepared renewal changed bob's preapprovals: %+v, was %+v", got, renewed)
		}
		// The renewal's execute takes renewals only.
		tap := a.do("POST", "/api/wallet/tap/prepare", map[string]string{"instrument": "CC", "amount": "1"}, bearer(bob.tok))
		a.walletExecute(base, tap, bob.Party, bob.tok).wantProblem(t, http.StatusNotFound, store.CodePreparedNotFound)
	})
}

func TestWallet_TapCreditsInDevModeAndIs404Otherwise(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		dev := newTestAPI(t, b)
		alice := dev.walletUser("alice")
		var rc receiptBody
		res := dev.walletExecute("/api/wallet/tap", dev.do("POST", "/api/wallet/tap/prepare", map[string]string{"instrument": "USDCx", "amount": "5"}, bearer(alice.tok)), alice.Party, alice.tok)
		decodeAs(t, res, &rc)
		if rc.Status != "committed" || len(rc.CIDs) != 1 {
			t.Fatalf("tap receipt %s", res.body)
		}
		if got := dev.walletBalance(alice)["USDCx"]; got != "5/0/1" {
			t.Errorf("after a tap of 5 USDCx alice has %s", got)
		}
		for _, body := range []string{`{"instrument": "XYZ", "amount": "1"}`, `{"instrument": "USDCx", "amount": "0.0000001"}`, `{"instrument": "CC", "amount": 1}`, `{"instrument": "CC", "amount": "1000000.1"}`} {
			dev.do("POST", "/api/wallet/tap/prepare", body, bearer(alice.tok)).wantProblem(t, http.StatusBadRequest, store.CodeInvalidRequest)
		}
		dev.do("POST", "/api/wallet/tap/prepare", map[string]string{"instrument": "CC", "amount": "1"}).wantProblem(t, http.StatusUnauthorized, store.CodeUnauthenticated)

		prod := newTestAPI(t, b, func(sc *store.Config, rc *Config) { rc.Dev = false })
		bob := prod.walletUser("bob")
		for _, path := range []string{"/api/wallet/tap/prepare", "/api/wallet/tap/execute"} {
			prod.do("POST", path, map[string]string{"instrument": "CC", "amount": "1"}, bearer(bob.tok)).wantProblem(t, http.StatusNotFound, store.CodeNotFound)
		}
		if got := prod.walletBalance(bob); got["CC"] != "0/0/0" || got["USDCx"] != "0/0/0" {
			t.Errorf("outside dev mode bob has %v", got)
		}
	})
}

// rewardPage is a page of GET /api/wallet/rewards/{partyId}/history.
type rewardPage struct {
	Items []struct {
		UpdateID string `json:"updateId"`
		Kind     string `json:"kind"`
		Amount   string `json:"amount"`
		At       int64  `json:"at"`
	} `json:"items"`
	Cursor *string `json:"cursor"`
}

func TestWallet_RewardsHistoryIsNewestFirstWithPagination(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice, bob := a.walletUser("alice"), a.walletUser("bob")
		history := "/api/wallet/rewards/" + alice.ID + "/history"

		var empty rewardPage
		decodeAs(t, a.do("GET", history, nil, bearer(alice.tok)), &empty)
		if empty.Items == nil || len(empty.Items) != 0 || empty.Cursor != nil {
			t.Fatalf("history before any transfer: %+v, want items [] and cursor null", empty)
		}

		a.walletTap(alice, store.CC, "100")
		// Each transfer to bob earns 10 bps, rounded down to 10 decimals; a transfer to oneself
		// and one too small to earn anything do not appear.
		var wantIDs []string
		for k, amount := range []string{"1", "2.5", "3", "0.0000000999", "4.0000000009", "5"} {
			a.clock.Advance(time.Second)
			rc := a.walletSend(alice, bob.ID, amount)
			if k == 3 {
				continue
			}
			wantIDs = append(wantIDs, rc["updateId"].(string))
		}
		a.walletSend(alice, alice.ID, "10")
		wantAmounts := []string{"0.005", "0.004", "0.003", "0.0025", "0.001"}
		slices.Reverse(wantIDs)

		var bal struct {
			PartyID    string `json:"partyId"`
			Balance    string `json:"balance"`
			Instrument string `json:"instrument"`
		}
		decodeAs(t, a.do("GET", "/api/wallet/rewards/"+alice.ID, nil, bearer(alice.tok)), &bal)
		if bal.PartyID != alice.ID || bal.Balance != "0.0155" || bal.Instrument != "CC" {
			t.Errorf("rewards %+v, want 0.0155 CC", bal)
		}
		var bobBal struct{ Balance string }
		decodeAs(t, a.do("GET", "/api/wallet/rewards/"+bob.ID, nil, bearer(bob.tok)), &bobBal)
		if bobBal.Balance != "0" {
			t.Errorf("bob, who only received, has %s in rewards", bobBal.Balance)
		}

		var ids, amounts []string
		var lastAt int64 = 1 << 62
		cursor, pages := "", 0
		for {
			path := history + "?limit=2"
			if cursor != "" {
				path += "&cursor=" + url.QueryEscape(cursor)
			}
			var got rewardPage
			decodeAs(t, a.do("GET", path, nil, bearer(alice.tok)), &got)
			pages++
			if len(got.Items) > 2 || (got.Cursor != nil && len(got.Items) != 2) {
				t.Fatalf("page %d has %d items and cursor %v", pages, len(got.Items), got.Cursor)
			}
			for _, it := range got.Items {
				if it.Kind != store.KindCCTransfer || it.At > lastAt {
					t.Errorf("history item %+v out of order or of the wrong kind", it)
				}
				lastAt = it.At
				ids, amounts = append(ids, it.UpdateID), append(amounts, it.Amount)
			}
			if got.Cursor == nil {
				break
			}
			cursor = *got.Cursor
		}
		if pages != 3 || !slices.Equal(ids, wantIDs) || !slices.Equal(amounts, wantAmounts) {
			t.Errorf("history in %d pages: %v %v; want 3 pages %v %v", pages, ids, amounts, wantIDs, wantAmounts)
		}

		for _, q := range []string{"?limit=0", "?limit=101", "?limit=x"} {
			a.do("GET", history+q, nil, bearer(alice.tok)).wantProblem(t, http.StatusBadRequest, store.CodeInvalidRequest)
		}
		a.do("GET", history+"?cursor=bogus", nil, bearer(alice.tok)).wantProblem(t, http.StatusBadRequest, store.CodeInvalidCursor)
	})
}
