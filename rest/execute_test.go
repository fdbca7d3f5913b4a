package rest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
	"marketd/store/wallet"
)

func TestPrepare_ResponseCarriesTheSignableTransaction(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		k := newTestKey()
		r := a.do("POST", "/api/parties/onboard/prepare", k.onboardBody("alice")).ok(t)
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("Content-Type %q", ct)
		}
		raw := r.obj(t)
		for _, f := range []string{"preparedTransaction", "preparedTransactionHash", "hashingScheme", "actAs", "expiresAt", "summary", "partyId"} {
			if _, ok := raw[f]; !ok {
				t.Fatalf("no %q in %s", f, r.body)
			}
		}
		if _, ok := raw["summary"].(map[string]any); !ok {
			t.Fatalf("summary is not an object: %s", r.body)
		}
		if _, ok := raw["expiresAt"].(float64); !ok {
			t.Fatalf("expiresAt is not a number: %s", r.body)
		}

		var p preparedView
		if err := json.Unmarshal(r.body, &p); err != nil {
			t.Fatal(err)
		}
		tx, err := base64.StdEncoding.Strict().DecodeString(p.PreparedTransaction)
		if err != nil || len(tx) == 0 {
			t.Fatalf("preparedTransaction is not standard base64: %v", err)
		}
		sum := sha256.Sum256(tx)
		if want := base64.StdEncoding.EncodeToString(sum[:]); p.PreparedTransactionHash != want {
			t.Fatalf("preparedTransactionHash = %s, want base64(SHA-256(preparedTransaction)) = %s", p.PreparedTransactionHash, want)
		}
		wantID := wallet.PartyIDFor("alice", k.Public())
		if p.HashingScheme != "sha256-v1" || p.ActAs != wantID || p.PartyID != wantID {
			t.Fatalf("hashingScheme %q actAs %q partyId %q, want sha256-v1 and %s", p.HashingScheme, p.ActAs, p.PartyID, wantID)
		}
		if want := storetest.Epoch.Add(10 * time.Minute).Unix(); p.ExpiresAt != want {
			t.Fatalf("expiresAt = %d, want now + 10m = %d", p.ExpiresAt, want)
		}
		if len(p.Summary) == 0 {
			t.Fatal("summary is empty")
		}

		// Two prepares of the same effects are two transactions.
		if again := a.prepareOnboarding(k, "alice"); again.PreparedTransactionHash == p.PreparedTransactionHash {
			t.Fatal("a second prepare returned the same hash")
		}
	})
}

func TestPrepare_ExpiresAtFollowsPreparedTTL(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b, func(sc *store.Config, rc *Config) { sc.PreparedTTL = 90 * time.Second })
		p := a.prepareOnboarding(newTestKey(), "alice")
		if want := storetest.Epoch.Add(90 * time.Second).Unix(); p.ExpiresAt != want {
			t.Fatalf("expiresAt = %d, want %d", p.ExpiresAt, want)
		}
	})
}

func TestExecute_ReplayReturnsFirstReceipt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		k, p := a.preparedAlice()
		sig := k.signHash(t, p.PreparedTransactionHash)
		first := a.executeOnboarding(p.PreparedTransactionHash, sig).ok(t)
		receipt := first.obj(t)
		updateID, _ := receipt["updateId"].(string)
		if updateID == "" || receipt["status"] != "committed" || receipt["partyId"] != p.PartyID {
			t.Fatalf("receipt %s, want updateId, status committed and partyId %s", first.body, p.PartyID)
		}

		// Replays, signed the same way or as hex, answer the same bytes.
		for i, s := range []string{base64.StdEncoding.EncodeToString(sig), hex.EncodeToString(sig)} {
			again := a.do("POST", "/api/parties/onboard/execute", map[string]string{"preparedTransactionHash": p.PreparedTransactionHash, "signature": s}).ok(t)
			if !bytes.Equal(again.body, first.body) {
				t.Fatalf("replay %d:\n got %s\nwant %s", i+1, again.body, first.body)
			}
		}
		// Nothing was applied twice: the party is the one the first execute created.
		wantPartyCreatedBy(t, a, p.PartyID, updateID)
	})
}

func TestExecute_AtExpiresAtIs410AndAppliesNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		k, p := a.preparedAlice()
		a.clock.Set(unixTime(p.ExpiresAt))
		r := a.executeOnboarding(p.PreparedTransactionHash, k.signHash(t, p.PreparedTransactionHash))
		r.wantProblem(t, http.StatusGone, store.CodePreparedExpired)
		a.do("POST", "/api/auth/nonce", map[string]string{"partyId": p.PartyID}).wantProblem(t, http.StatusNotFound, store.CodePartyNotFound)

		// The refusal is final: it stays expired.
		a.clock.Advance(time.Hour)
		a.executeOnboarding(p.PreparedTransactionHash, k.signHash(t, p.PreparedTransactionHash)).wantProblem(t, http.StatusGone, store.CodePreparedExpired)
	})
}

func TestExecute_JustBeforeExpiresAtSucceeds(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		k, p := a.preparedAlice()
		a.clock.Set(unixTime(p.ExpiresAt).Add(-time.Microsecond))
		a.executeOnboarding(p.PreparedTransactionHash, k.signHash(t, p.PreparedTransactionHash)).ok(t)
	})
}

func TestExecute_ReplayAfterExpiryReturnsFirstReceipt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		k, p := a.preparedAlice()
		sig := k.signHash(t, p.PreparedTransactionHash)
		first := a.executeOnboarding(p.PreparedTransactionHash, sig).ok(t)
		a.clock.Set(unixTime(p.ExpiresAt).Add(time.Hour))
		again := a.executeOnboarding(p.PreparedTransactionHash, sig).ok(t)
		if !bytes.Equal(again.body, first.body) {
			t.Fatalf("replay after expiry:\n got %s\nwant %s", again.body, first.body)
		}
	})
}

func TestExecute_SignatureByAnotherKeyIs401AndAppliesNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		k, mallory := newTestKey(), newTestKey()
		p := a.prepareOnboarding(k, "alice")
		a.executeOnboarding(p.PreparedTransactionHash, mallory.signHash(t, p.PreparedTransactionHash)).
			wantProblem(t, http.StatusUnauthorized, store.CodeInvalidSignature)
		// The right key over other bytes (the transaction rather than its hash) does not verify either.
		tx, _ := base64.StdEncoding.DecodeString(p.PreparedTransaction)
		a.executeOnboarding(p.PreparedTransactionHash, k.signHash(t, base64.StdEncoding.EncodeToString(tx))).
			wantProblem(t, http.StatusUnauthorized, store.CodeInvalidSignature)
		a.do("POST", "/api/auth/nonce", map[string]string{"partyId": p.PartyID}).wantProblem(t, http.StatusNotFound, store.CodePartyNotFound)

		// The refusals changed nothing: the right signature still executes it.
		a.executeOnboarding(p.PreparedTransactionHash, k.signHash(t, p.PreparedTransactionHash)).ok(t)
		a.do("POST", "/api/auth/nonce", map[string]string{"partyId": p.PartyID}).ok(t)
	})
}

func TestExecute_LowercaseHexSignatureIsAccepted(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		k, p := a.preparedAlice()
		sig := hex.EncodeToString(k.signHash(t, p.PreparedTransactionHash))
		r := a.do("POST", "/api/parties/onboard/execute", map[string]string{"preparedTransactionHash": p.PreparedTransactionHash, "signature": sig}).ok(t)
		if r.obj(t)["partyId"] != p.PartyID {
			t.Fatalf("receipt %s", r.body)
		}
	})
}

func TestExecute_BadHashOrSignature(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		k, p := a.preparedAlice()
		sig := base64.StdEncoding.EncodeToString(k.signHash(t, p.PreparedTransactionHash))
		unknown := sha256.Sum256([]byte("never prepared"))
		cases := []struct {
			name, hash, sig string
			status          int
			code            store.Code
		}{
			{"unknown hash", base64.StdEncoding.EncodeToString(unknown[:]), sig, 404, store.CodePreparedNotFound},
			{"hash not base64", "not base64!", sig, 400, store.CodeInvalidRequest},
			{"hash unpadded", base64.RawStdEncoding.EncodeToString(unknown[:]), sig, 400, store.CodeInvalidRequest},
			{"hash 16 bytes", base64.StdEncoding.EncodeToString(unknown[:16]), sig, 400, store.CodeInvalidRequest},
			{"hash as hex", hex.EncodeToString(unknown[:]), sig, 400, store.CodeInvalidRequest},
			{"hash missing", "", sig, 400, store.CodeInvalidRequest},
			{"signature missing", p.PreparedTransactionHash, "", 400, store.CodeInvalidRequest},
			{"signature short", p.PreparedTransactionHash, base64.StdEncoding.EncodeToString(make([]byte, 32)), 400, store.CodeInvalidRequest},
			{"signature garbage", p.PreparedTransactionHash, "%%%", 400, store.CodeInvalidRequest},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := a.do("POST", "/api/parties/onboard/execute", map[string]string{"preparedTransactionHash": c.hash, "signature": c.sig})
				r.wantProblem(t, c.status, c.code)
			})
		}
	})
}

func TestExecute_ConcurrentExecutesOfOnePreparedTxApplyOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		k, p := a.preparedAlice()
		body := map[string]string{
			"preparedTransactionHash": p.PreparedTransactionHash,
			"signature":               base64.StdEncoding.EncodeToString(k.signHash(t, p.PreparedTransactionHash)),
		}
		results := concurrently(20, func(int) rawResponse { return a.postJSON("/api/parties/onboard/execute", body) })
		for i, r := range results {
			if r.err != nil {
				t.Fatalf("execute %d: %v", i, r.err)
			}
			if r.status != http.StatusOK {
				t.Fatalf("execute %d: status %d: %s", i, r.status, r.body)
			}
			if !bytes.Equal(r.body, results[0].body) {
				t.Fatalf("execute %d answered another receipt:\n%s\n%s", i, r.body, results[0].body)
			}
		}
		var receipt struct{ UpdateID string }
		json.Unmarshal(results[0].body, &receipt)
		wantPartyCreatedBy(t, a, p.PartyID, receipt.UpdateID)
	})
}

func TestOnboard_SameKeyTwiceReturnsTheSameParty(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		k := newTestKey()
		want := wallet.PartyIDFor("alice", k.Public())
		for i, hint := range []string{"alice", "alice", "another-hint"} {
			p := a.prepareOnboarding(k, hint)
			if p.PartyID != want || p.ActAs != want {
				t.Fatalf("onboarding %d (%s): prepare names %s / %s, want %s", i+1, hint, p.PartyID, p.ActAs, want)
			}
			r := a.executeOnboarding(p.PreparedTransactionHash, k.signHash(t, p.PreparedTransactionHash))
			if r.status != http.StatusOK || r.obj(t)["partyId"] != want {
				t.Fatalf("onboarding %d (%s): %d %s, want 200 with %s", i+1, hint, r.status, r.body, want)
			}
		}
		// Another hint never made another party.
		a.do("POST", "/api/auth/nonce", map[string]string{"partyId": wallet.PartyIDFor("another-hint", k.Public())}).
			wantProblem(t, http.StatusNotFound, store.CodePartyNotFound)
	})
}

func TestOnboard_PreparesOfOneKeyExecutedConcurrentlyYieldOneParty(t *testing.T) {
	// Prepares taken before the key is onboarded each name a new party; executing them at
	// once must still create one party and answer every execute with it.
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		k := newTestKey()
		const n = 8
		bodies := make([]map[string]string, n)
		for i := range n {
			hint := "alice"
			if i%2 == 1 {
				hint = "alice-too"
			}
			p := a.prepareOnboarding(k, hint)
			bodies[i] = map[string]string{
				"preparedTransactionHash": p.PreparedTransactionHash,
				"signature":               base64.StdEncoding.EncodeToString(k.signHash(t, p.PreparedTransactionHash)),
			}
		}
		results := concurrently(n, func(i int) rawResponse { return a.postJSON("/api/parties/onboard/execute", bodies[i]) })
		var party string
		for i, r := range results {
			if r.err != nil || r.status != http.StatusOK {
				t.Fatalf("execute %d: %v %d %s", i, r.err, r.status, r.body)
			}
			var receipt struct{ PartyID string }
			json.Unmarshal(r.body, &receipt)
			if party == "" {
				party = receipt.PartyID
			}
			if receipt.PartyID != party {
				t.Fatalf("execute %d onboarded %s, another %s", i, receipt.PartyID, party)
			}
		}
		// Whichever hint won, the key now has that one party, and onboarding it again says so.
		if again := a.prepareOnboarding(k, "third"); again.PartyID != party {
			t.Fatalf("the key is party %s, an execute said %s", again.PartyID, party)
		}
	})
}

// preparedAlice prepares the onboarding of a new key as "alice".
func (a *testAPI) preparedAlice() (testKey, preparedView) {
	a.t.Helper()
	k := newTestKey()
	return k, a.prepareOnboarding(k, "alice")
}

// wantPartyCreatedBy fails unless partyID is onboarded, by the update updateID.
func wantPartyCreatedBy(t testing.TB, a *testAPI, partyID, updateID string) {
	t.Helper()
	party, err := a.store.Party(context.Background(), partyID)
	if err != nil {
		t.Fatal(err)
	}
	if updateID == "" || party.UpdateID != updateID {
		t.Fatalf("party %s created by update %q, the receipt says %q", partyID, party.UpdateID, updateID)
	}
}

// concurrently runs call(0..n-1) in n goroutines released at once and returns the results.
func concurrently(n int, call func(i int) rawResponse) []rawResponse {
	results := make([]rawResponse, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			results[i] = call(i)
		})
	}
	close(start)
	wg.Wait()
	return results
}
