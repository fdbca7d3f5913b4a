package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"

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
	)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return &tracing{provider: tp}, nil
}

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
// when tracing is off.
func (t *tracing) wrap(h http.Handler) http.Handler {
	if !t.on() {
		return h
	}
	return otelhttp.NewHandler(h, "marketd",
		otelhttp.WithSpanNameFormatter(spanName),
		otelhttp.WithFilter(func(r *http.Request) bool { return r.URL.Path != "/healthz" && r.URL.Path != "/readyz" }))
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
