package store_test

import (
	"context"
	"strings"
	"testing"

	"marketd/store"
	"marketd/store/storetest"
)

func TestOperator_IsCreatedOnceWithItsReceivePreapprovals(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(storetest.NewClock(storetest.Epoch)))
		op, err := s.OperatorParty(ctx)
		if err != nil || !strings.HasPrefix(op, "operator::1220") {
			t.Fatalf("operator party %q, %v", op, err)
		}
		if _, err := s.Migrate(ctx); err != nil { // a second start
			t.Fatal(err)
		}
		again, err := s.OperatorParty(ctx)
		if err != nil || again != op {
			t.Fatalf("after a second migration the operator is %q (%v), was %q", again, err, op)
		}
		ps, err := s.Preapprovals(ctx, op)
		if err != nil || len(ps) != 2 || ps[0].Kind != store.PreapprovalNFT || ps[1].Kind != store.PreapprovalUSDCx {
			t.Fatalf("operator preapprovals %+v, %v; want one nft and one usdcx", ps, err)
		}
		for _, p := range ps {
			if p.ExpiresAt.Before(storetest.Epoch.AddDate(50, 0, 0)) {
				t.Errorf("operator %s preapproval expires at %s; it must outlive any deployment", p.Kind, p.ExpiresAt)
			}
		}
		us, err := s.UpdatesAfter(ctx, 0, 10)
		if err != nil || len(us) != 1 || us[0].ActAs != op || us[0].Kind != store.KindOnboard {
			t.Fatalf("the log after two migrations: %+v, %v; want the operator's onboarding once", us, err)
		}
	})
}
