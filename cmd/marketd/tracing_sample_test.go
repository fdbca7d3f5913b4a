package main

import (
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// The door decides a request's sampling before any span is made, and the span it then makes
// agrees: with a root sampler keeping half the traces, every request has a trace id (the
// request id's), a recording span exactly when the sampler keeps that id, and each span
// exported carries the id decided on; about half are kept. A traceparent's flag decides for
// the requests that send one: an unsampled parent's trace id is the request's, with no span,
// and a sampled parent is continued by a recording span.
func TestTracing_TheDoorDecidesSamplingBeforeASpanIsMadeAndTheSpanAgrees(t *testing.T) {
	root := sdktrace.TraceIDRatioBased(0.5)
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(root)),
		sdktrace.WithIDGenerator(presetIDs{}), sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(t.Context())
	tr := &tracing{provider: tp, root: root}
	var got trace.SpanContext
	var recording bool
	h := tr.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		span := trace.SpanFromContext(r.Context())
		got, recording = span.SpanContext(), span.IsRecording()
	}))
	const n = 400
	kept := map[trace.TraceID]bool{}
	for range n {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/api/nft/collections", nil))
		if !got.HasTraceID() {
			t.Fatal("a request without a traceparent has no trace id")
		}
		keep := root.ShouldSample(sdktrace.SamplingParameters{TraceID: got.TraceID()}).Decision == sdktrace.RecordAndSample
		if recording != keep {
			t.Fatalf("trace %s: recording %v, the sampler keeps it: %v", got.TraceID(), recording, keep)
		}
		if keep {
			kept[got.TraceID()] = true
		}
	}
	if len(kept) < n/2-60 || len(kept) > n/2+60 {
		t.Errorf("%d of %d traces kept at a ratio of 0.5", len(kept), n)
	}
	ended := spans.Ended()
	if len(ended) != len(kept) {
		t.Errorf("%d spans exported, %d traces kept", len(ended), len(kept))
	}
	for _, s := range ended {
		if !kept[s.SpanContext().TraceID()] {
			t.Errorf("span %q of trace %s: not a trace the door decided to keep", s.Name(), s.SpanContext().TraceID())
		}
	}

	for _, c := range []struct {
		flags     string
		recording bool
	}{{"00", false}, {"01", true}} {
		r := httptest.NewRequest("GET", "/api/nft/collections", nil)
		r.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-"+c.flags)
		h.ServeHTTP(httptest.NewRecorder(), r)
		if got.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || recording != c.recording {
			t.Errorf("parent flags %s: trace %s, recording %v; want the parent's trace, recording %v", c.flags, got.TraceID(), recording, c.recording)
		}
	}
}
