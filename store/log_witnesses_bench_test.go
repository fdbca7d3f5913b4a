package store_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"marketd/rest"
	"marketd/store"
	"marketd/store/storetest"
	"marketd/store/translog"
)

// BenchmarkWitnessedWrites is the write path's rate on a store whose log two witnesses
// cosign (each a REST server of its own on loopback, asked every second as serve asks them)
// against a store with none, in turns on both as BenchmarkTransparencyLog_Interleaved runs
// them; the ratio reported is witnessed/alone. Run:
//
//	TEST_DATABASE_URL=postgres://... go test -run '^$' -bench WitnessedWrites -benchtime 20000x ./store/
func BenchmarkWitnessedWrites(b *testing.B) {
	for _, be := range storetest.Backends() {
		b.Run(fmt.Sprintf("%s/clients=16", be.Name), func(b *testing.B) {
			interleaved(b, be, 16, 256, [2]string{"witnessed", "alone"}, func(b *testing.B, i int, s *store.Store) {
				if i == 0 {
					askTwoWitnesses(b, be, s)
				}
			})
		})
	}
}

// askTwoWitnesses starts two witnesses of s's log and asks them every second until the
// benchmark ends, failing it if a round fails.
func askTwoWitnesses(b *testing.B, be storetest.Backend, s *store.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	logKey, err := s.LogVerifierKey(ctx)
	if err != nil {
		b.Fatal(err)
	}
	wl, err := translog.NewWitnessedLog(logKey)
	if err != nil {
		b.Fatal(err)
	}
	var ws []store.Witness
	for _, host := range []string{"w1.example", "w2.example"} {
		cfg := storetest.Config(storetest.NewClock(storetest.Epoch))
		cfg.PublicURL = "http://" + host
		st := be.Open(b, cfg)
		srv, err := rest.New(st, rest.Config{PublicURL: cfg.PublicURL, Dev: true, Logger: slog.New(slog.DiscardHandler), WitnessLogs: map[string]*translog.WitnessedLog{wl.Origin: wl}})
		if err != nil {
			b.Fatal(err)
		}
		hs := httptest.NewServer(srv)
		b.Cleanup(hs.Close)
		c, err := st.WitnessCosigner(ctx)
		if err != nil {
			b.Fatal(err)
		}
		w, err := store.ParseWitness(c.VerifierKey() + "@" + hs.URL + "/witness")
		if err != nil {
			b.Fatal(err)
		}
		ws = append(ws, w)
	}
	done := make(chan struct{})
	b.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			for _, r := range s.AskWitnesses(ctx, http.DefaultClient, ws) {
				if r.Err != nil && ctx.Err() == nil {
					b.Errorf("witness %s: %v", r.Witness, r.Err)
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}
