package graph

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"marketd/store/storetest"
)

// BenchmarkNFTPageIDs runs (never reuses) a page of 100 NFTs with and without their global
// ids and their collection's: what the id fields add to gqlgen's work per answer.
func BenchmarkNFTPageIDs(b *testing.B) {
	g := newTestGraph(b, storetest.Backends()[0], 300)
	hs := httptest.NewServer(NewHandler(g.store, Options{Logger: slog.New(slog.DiscardHandler), RunEveryQuery: true}))
	b.Cleanup(hs.Close)
	for _, c := range []struct{ name, fields string }{
		{"without-ids", "serial owner listing { price }"},
		{"with-ids", "id serial owner listing { price }"},
	} {
		body, _ := json.Marshal(map[string]any{"query": `{ collection(slug: "ledger-apes") { nfts(first: 100) { edges { node { ` + c.fields + ` } } } } }`})
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				res, err := http.Post(hs.URL+"/graphql", "application/json", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
		})
	}
}
