package ratelimit

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// childSpans is the global tracer provider's tracers, starting a span only as the child of one
// that records: a round trip of the limiter's own (its flush each second) makes no trace of
// its own, and an unsampled request none.
type childSpans struct{ embedded.TracerProvider }

func (childSpans) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return childTracer{t: otel.GetTracerProvider().Tracer(name, opts...)}
}

// childTracer is a tracer of childSpans.
type childTracer struct {
	embedded.Tracer
	t trace.Tracer
}

func (c childTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if parent := trace.SpanFromContext(ctx); !parent.IsRecording() {
		return ctx, parent
	}
	return c.t.Start(ctx, name, opts...)
}
