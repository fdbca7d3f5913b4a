package store_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// Renewal extends a consent that still holds; an expired one must be given anew, signed.
func TestPreapproval_RenewingAnExpiredOneIs404(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		clock := storetest.NewClock(storetest.Epoch)
		s := b.Open(t, storetest.Config(clock))
		alice := storetest.Onboard(t, s, "alice")
		prep, err := s.PreparePreapproval(ctx, alice.ID, store.PreapprovalUSDCx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := alice.Execute(s, store.KindUSDCxPreapproval, prep); err != nil {
			t.Fatal(err)
		}
		clock.Advance(s.Config().PreapprovalTTL - time.Microsecond)
		if _, err := s.RenewPreapproval(ctx, alice.ID, store.PreapprovalUSDCx); err != nil {
			t.Fatalf("renew just before expiry: %v", err)
		}
		clock.Advance(s.Config().PreapprovalTTL + time.Second)
		if _, err := s.RenewPreapproval(ctx, alice.ID, store.PreapprovalUSDCx); store.ErrorCode(err) != store.CodeNotFound {
			t.Fatalf("renew after expiry: %v, want not_found", err)
		}
	})
}

// A party has one preapproval of each kind: of two prepared while it had none, the second
// to execute is stale, whether they run one after the other or at once.
func TestPreapproval_TwoFirstOnesCommitOnlyOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(new(storetest.Clock)))
		for _, concurrent := range []bool{false, true} {
			p := storetest.Onboard(t, s, "p")
			var preps []*store.Prepared
			for range 4 {
				prep, err := s.PreparePreapproval(ctx, p.ID, store.PreapprovalNFT)
				if err != nil {
					t.Fatal(err)
				}
				preps = append(preps, prep)
			}
			errs := make([]error, len(preps))
			var wg sync.WaitGroup
			for i, prep := range preps {
				run := func() { _, errs[i] = p.Execute(s, store.KindNFTPreapproval, prep) }
				if concurrent {
					wg.Go(run)
				} else {
					run()
				}
			}
			wg.Wait()
			committed := 0
			for _, err := range errs {
				switch {
				case err == nil:
					committed++
				case store.ErrorCode(err) != store.CodeStale:
					t.Fatalf("concurrent=%v: %v, want stale", concurrent, err)
				}
			}
			ps, err := s.Preapprovals(ctx, p.ID)
			if committed != 1 || err != nil || len(ps) != 1 {
				t.Fatalf("concurrent=%v: %d committed, %d preapprovals (%v); want 1 and 1", concurrent, committed, len(ps), err)
			}
		}
	})
}

// A renewal is a write the party signs: prepared, then applied once by an execute whose
// signature checks. Without one, or once the prepared renewal expired, nothing moves.
func TestPreapproval_RenewalIsSignedAndAppliedOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		clock := storetest.NewClock(storetest.Epoch)
		s := b.Open(t, storetest.Config(clock))
		alice, mallory := storetest.Onboard(t, s, "alice"), storetest.Onboard(t, s, "mallory")
		if _, err := s.PrepareRenewal(ctx, alice.ID, store.PreapprovalUSDCx); store.ErrorCode(err) != store.CodeNotFound {
			t.Fatalf("renewing a preapproval alice does not have: %v, want not_found", err)
		}
		prep, err := s.PreparePreapproval(ctx, alice.ID, store.PreapprovalUSDCx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := alice.Execute(s, store.KindUSDCxPreapproval, prep); err != nil {
			t.Fatal(err)
		}
		before, err := s.Preapprovals(ctx, alice.ID)
		if err != nil || len(before) != 1 {
			t.Fatalf("alice's preapprovals: %+v, %v", before, err)
		}
		unchanged := func(what string) {
			t.Helper()
			after, err := s.Preapprovals(ctx, alice.ID)
			if err != nil || len(after) != 1 || after[0].CID != before[0].CID || !after[0].ExpiresAt.Equal(before[0].ExpiresAt.Time) {
				t.Fatalf("%s changed alice's preapprovals: %+v (%v), was %+v", what, after, err, before)
			}
		}

		clock.Advance(time.Hour)
		renewal, err := s.PrepareRenewal(ctx, alice.ID, store.PreapprovalUSDCx)
		if err != nil {
			t.Fatal(err)
		}
		renew := store.Execution{Kinds: []string{store.KindPreapprovalRenew}, Hash: renewal.Hash, Caller: alice.ID}
		for _, sig := range [][]byte{nil, make([]byte, ed25519.SignatureSize), mallory.Sign(renewal.Hash)} {
			forged := renew
			forged.Signature = sig
			if _, err := s.Execute(ctx, forged); store.ErrorCode(err) != store.CodeInvalidSignature {
				t.Fatalf("a renewal signed %x: %v, want invalid_signature", sig, err)
			}
			unchanged("a renewal without alice's signature")
		}

		receipt, err := alice.Execute(s, store.KindPreapprovalRenew, renewal)
		if err != nil {
			t.Fatal(err)
		}
		var got store.PreapprovalResult
		if err := json.Unmarshal(receipt, &got); err != nil {
			t.Fatal(err)
		}
		want := clock.Now().Add(s.Config().PreapprovalTTL).Unix()
		if got.CID == "" || got.CID == before[0].CID || got.ExpiresAt != want {
			t.Fatalf("renewal receipt %s: want a new cid expiring at %d", receipt, want)
		}
		if ps, err := s.Preapprovals(ctx, alice.ID); err != nil || len(ps) != 1 || ps[0].CID != got.CID || ps[0].ExpiresAt.Unix() != want {
			t.Fatalf("after the renewal alice's preapprovals are %+v (%v), want only %+v", ps, err, got)
		}
		again, err := alice.Execute(s, store.KindPreapprovalRenew, renewal)
		if err != nil || !bytes.Equal(again, receipt) {
			t.Fatalf("replay: %s, %v; want the first receipt %s", again, err, receipt)
		}

		// An expired prepared renewal is refused and changes nothing.
		before, _ = s.Preapprovals(ctx, alice.ID)
		late, err := s.PrepareRenewal(ctx, alice.ID, store.PreapprovalUSDCx)
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(s.Config().PreparedTTL)
		if _, err := alice.Execute(s, store.KindPreapprovalRenew, late); store.ErrorCode(err) != store.CodePreparedExpired {
			t.Fatalf("an expired prepared renewal: %v, want prepared_expired", err)
		}
		unchanged("an expired prepared renewal")
	})
}

// A prepared renewal names the preapproval it renews: once that one is replaced, the renewal
// is stale; once it expires, there is nothing to renew.
func TestPreapproval_RenewalOfAPreapprovalGoneSincePrepareIsRefused(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		clock := storetest.NewClock(storetest.Epoch)
		s := b.Open(t, storetest.Config(clock))
		alice := storetest.Onboard(t, s, "alice")
		prep, err := s.PreparePreapproval(ctx, alice.ID, store.PreapprovalNFT)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := alice.Execute(s, store.KindNFTPreapproval, prep); err != nil {
			t.Fatal(err)
		}
		var renewals [2]*store.Prepared
		for i := range renewals {
			if renewals[i], err = s.PrepareRenewal(ctx, alice.ID, store.PreapprovalNFT); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := alice.Execute(s, store.KindPreapprovalRenew, renewals[0]); err != nil {
			t.Fatal(err)
		}
		if _, err := alice.Execute(s, store.KindPreapprovalRenew, renewals[1]); store.ErrorCode(err) != store.CodeStale {
			t.Fatalf("a renewal of a preapproval renewed since: %v, want stale", err)
		}

		clock.Advance(s.Config().PreapprovalTTL - time.Second)
		expiring, err := s.PrepareRenewal(ctx, alice.ID, store.PreapprovalNFT)
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(2 * time.Second)
		if _, err := alice.Execute(s, store.KindPreapprovalRenew, expiring); store.ErrorCode(err) != store.CodeNotFound {
			t.Fatalf("a renewal of a preapproval that expired since prepare: %v, want not_found", err)
		}
		if ps, err := s.Preapprovals(ctx, alice.ID); err != nil || len(ps) != 1 || ps[0].ActiveAt(clock.Now()) {
			t.Fatalf("alice's preapprovals: %+v (%v), want the one expired", ps, err)
		}
	})
}
