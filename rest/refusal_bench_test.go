package rest

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"marketd/store"
	"marketd/store/storetest"
)

// BenchmarkRefusal is what one refused read costs the server, in process: the whole
// middleware stack (request id, access log as JSON, metrics, routing, the limiter, the
// problem body) for a client whose budget is spent.
func BenchmarkRefusal(b *testing.B) {
	sc := store.DefaultConfig()
	sc.Logger = slog.New(slog.DiscardHandler)
	s := storetest.Backends()[0].Open(b, sc)
	srv, err := New(s, Config{PublicURL: sc.PublicURL, RateRead: 1, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/api/nft/collections?limit=20", nil)
	req.RemoteAddr = "127.0.0.2:4000"
	srv.ServeHTTP(httptest.NewRecorder(), req) // the one read the budget allows
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		w := discardWriter{h: http.Header{}}
		srv.ServeHTTP(&w, req)
		if w.status != http.StatusTooManyRequests {
			b.Fatalf("status %d", w.status)
		}
	}
}

// discardWriter is a ResponseWriter that keeps only the status.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }
