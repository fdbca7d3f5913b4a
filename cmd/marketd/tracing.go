package main

import (
	"context"
	endian "encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// tracing is the OpenTelemetry set-up of marketd serve, from the standard OTEL_ variables:
// spans are exported by OTLP over HTTP (protobuf) only when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set; without one, the global tracer provider is a
// no-op, no door is wrapped and nothing is exported.
type tracing struct {
	provider *sdktrace.TracerProvider // nil when tracing is off
	root     sdktrace.Sampler         // the sampler of the traces requests start
}

// setupTracing reads the OTEL_ variables and sets the global tracer provider and propagator.
// Its sampler always follows the parent a request names in its traceparent (sampled or not);
// OTEL_TRACES_SAMPLER (always_on, always_off, traceidratio, or their parentbased_ names) with
// OTEL_TRACES_SAMPLER_ARG samples the traces a request starts.
func setupTracing(ctx context.Context) (*tracing, error) {
	endpoint := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") + os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	if endpoint == "" || strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") || os.Getenv("OTEL_TRACES_EXPORTER") == "none" {
		otel.SetTracerProvider(noop.NewTracerProvider())
		return &tracing{}, nil
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := os.Getenv(v); p != "" && p != "http/protobuf" {
			return nil, fmt.Errorf("%s=%s: marketd exports traces by OTLP over HTTP only: set it to http/protobuf or unset it", v, p)
		}
	}
	root, err := rootSampler(os.Getenv("OTEL_TRACES_SAMPLER"), os.Getenv("OTEL_TRACES_SAMPLER_ARG"))
	if err != nil {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx) // the endpoint, headers, timeout and TLS from OTEL_EXPORTER_OTLP_*
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	attrs := resource.NewSchemaless(semconv.ServiceName("marketd"))
	res, err := resource.Merge(attrs, resource.Environment()) // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp), // OTEL_BSP_* size its queue and batches
		sdktrace.WithSampler(sdktrace.ParentBased(root)),
		sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(presetIDs{}),
	)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagator)
	return &tracing{provider: tp, root: root}, nil
}

// propagator reads and writes W3C traceparent, tracestate and baggage: the global one, and
// the doors'.
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// rootSampler is the sampler of a trace a request starts, named as OTEL_TRACES_SAMPLER names
// it; the parent-based names give the same root sampler (marketd always follows a parent).
func rootSampler(name, arg string) (sdktrace.Sampler, error) {
	switch strings.TrimPrefix(name, "parentbased_") {
	case "", "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "traceidratio":
		ratio := 1.0
		if arg != "" {
			r, err := strconv.ParseFloat(arg, 64)
			if err != nil || r < 0 || r > 1 {
				return nil, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%q: want a ratio from 0 to 1", arg)
			}
			ratio = r
		}
		return sdktrace.TraceIDRatioBased(ratio), nil
	}
	return nil, fmt.Errorf("OTEL_TRACES_SAMPLER=%q: want always_on, always_off, traceidratio or their parentbased_ names", name)
}

// on tells whether spans are exported.
func (t *tracing) on() bool { return t.provider != nil }

// wrap gives every request through h a span (a server span continuing the traceparent sent),
// named by its method until the door that routes it names it by its route's pattern; h itself
// when tracing is off. A request whose trace is not sampled (its parent's flag says so, or the
// root sampler drops the trace id drawn for it) goes to h with no span at all, its trace id in
// its context for the request id: a sampler keeping 1% of traces spares the other 99% what a
// span costs (otelhttp's attributes, writer wrapping and timing), not only its export.
func (t *tracing) wrap(h http.Handler) http.Handler {
	if !t.on() {
		return h
	}
	traced := otelhttp.NewHandler(h, "marketd",
		otelhttp.WithTracerProvider(t.provider),
		otelhttp.WithPropagators(propagator),
		otelhttp.WithSpanNameFormatter(spanName),
		otelhttp.WithFilter(func(r *http.Request) bool { return r.URL.Path != "/healthz" && r.URL.Path != "/readyz" }))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		parent := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(r.Header)))
		switch {
		case parent.IsValid() && parent.IsSampled():
			traced.ServeHTTP(w, r)
		case parent.IsValid(): // the parent is not sampled: neither is anything under it
			h.ServeHTTP(w, r.WithContext(trace.ContextWithRemoteSpanContext(ctx, parent)))
		default:
			id := &presetTrace{id: randomTraceID()}
			if t.root.ShouldSample(sdktrace.SamplingParameters{ParentContext: ctx, TraceID: id.id, Name: r.Method, Kind: trace.SpanKindServer}).Decision == sdktrace.Drop {
				sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: id.id, SpanID: randomSpanID()})
				h.ServeHTTP(w, r.WithContext(trace.ContextWithSpanContext(ctx, sc)))
				return
			}
			// The span otelhttp starts takes the trace id the decision was made on, and the
			// provider's sampler, given the same id, decides the same.
			traced.ServeHTTP(w, r.WithContext(context.WithValue(ctx, presetTraceKey{}, id)))
		}
	})
}

type presetTraceKey struct{}

// presetTrace is the trace id a request's sampling was decided on, for its first root span.
type presetTrace struct {
	id   trace.TraceID
	used atomic.Bool
}

// presetIDs draws span and trace ids at random, but gives the first root span of a request
// whose sampling wrap decided the trace id it decided on.
type presetIDs struct{}

func (presetIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if p, ok := ctx.Value(presetTraceKey{}).(*presetTrace); ok && p.used.CompareAndSwap(false, true) {
		return p.id, randomSpanID()
	}
	return randomTraceID(), randomSpanID()
}

func (presetIDs) NewSpanID(context.Context, trace.TraceID) trace.SpanID { return randomSpanID() }

// randomTraceID is a random trace id, never the invalid zero one.
func randomTraceID() (id trace.TraceID) {
	for !id.IsValid() {
		endian.LittleEndian.PutUint64(id[:8], rand.Uint64())
		endian.LittleEndian.PutUint64(id[8:], rand.Uint64())
	}
	return id
}

// randomSpanID is a random span id, never the invalid zero one.
func randomSpanID() (id trace.SpanID) {
	for !id.IsValid() {
		endian.LittleEndian.PutUint64(id[:], rand.Uint64())
	}
	return id
}

// spanName is a request's span's name: its method when the span starts; once served, the
// name the doors gave it by its route (otelhttp asks again when a mux routed it, and would
// otherwise name it by the front door's pattern alone).
func spanName(_ string, r *http.Request) string {
	if named, ok := trace.SpanFromContext(r.Context()).(interface{ Name() string }); ok {
		return named.Name()
	}
	return r.Method
}

// shutdown exports the spans still queued, within ctx.
func (t *tracing) shutdown(ctx context.Context) error {
	if !t.on() {
		return nil
	}
	return t.provider.Shutdown(ctx)
}
