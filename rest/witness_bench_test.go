package rest

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"marketd/store/storetest"
	"marketd/store/translog"
)

// BenchmarkAddCheckpoint is a witness's add-checkpoint rate over HTTP: b.N checkpoints of a
// log growing one entry at a time, each with its consistency proof from the one before,
// submitted in order to POST /witness/add-checkpoint (each one reads the witness's record,
// verifies the log's signature and the proof, moves the record by compare-and-swap and
// cosigns). The submissions are made before the timer starts. Run:
//
//	TEST_DATABASE_URL=postgres://... go test -run '^$' -bench AddCheckpoint -benchtime 2000x ./rest/
func BenchmarkAddCheckpoint(b *testing.B) {
	for _, be := range storetest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			lg, api := newWitnessPair(b, be)
			ctx := context.Background()
			var bodies [][]byte
			prev := int64(0)
			for range b.N {
				lg.grow(1)
				tree, err := lg.s.LogTree(ctx)
				if err != nil {
					b.Fatal(err)
				}
				cp, err := lg.s.LogCheckpoint(ctx)
				if err != nil {
					b.Fatal(err)
				}
				a := &translog.AddCheckpoint{OldSize: prev, Checkpoint: cp}
				if prev > 0 {
					hr := translog.HashReader(tree, func(t tlog.Tile) ([]byte, error) { return lg.s.LogTile(ctx, t) })
					if a.Proof, err = tlog.ProveTree(tree.N, prev, hr); err != nil {
						b.Fatal(err)
					}
				}
				bodies = append(bodies, a.Marshal())
				prev = tree.N
			}
			client := &http.Client{}
			b.ResetTimer()
			for _, body := range bodies {
				res, err := client.Post(api.http.URL+"/witness/add-checkpoint", "text/plain", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					b.Fatalf("add-checkpoint: %d", res.StatusCode)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "checkpoints/s")
		})
	}
}
