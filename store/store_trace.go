package store

import (
	"context"

	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracer names the store's spans; it follows the global tracer provider, a no-op until the
// command sets one (cmd/marketd: tracing.go).
var tracer = otel.Tracer("marketd/store")

// startSpan starts a child span of ctx's span, named name, when ctx's span records; otherwise
// it starts nothing (a statement of the store's background work makes no root span, and an
// unsampled request costs no span of the store's).
func startSpan(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	return tracer.Start(ctx, name, trace.WithAttributes(attrs...))
}

// endSpan records err, if any, on span and ends it; a span that does not record ignores both.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, errorCode(err))
	}
	span.End()
}

// errorCode is err's problem code when the store made it, else "error": a span's status
// never carries an error's text, which may quote what a caller sent.
func errorCode(err error) string {
	if c := ErrorCode(err); c != "" {
		return string(c)
	}
	return "error"
}

// sqlSpans makes a span of each SQL statement the store runs for a traced request: its
// operation and table, never its text (bun formats the arguments into it) nor its arguments.
type sqlSpans struct{ system string }

type sqlSpanKey struct{}

func (h sqlSpans) BeforeQuery(ctx context.Context, e *bun.QueryEvent) context.Context {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx
	}
	op := e.Operation()
	name, attrs := op, []attribute.KeyValue{attribute.String("db.system.name", h.system), attribute.String("db.operation.name", op)}
	if t, ok := e.IQuery.(interface{ GetTableName() string }); ok && e.IQuery != nil {
		if table := t.GetTableName(); table != "" {
			name += " " + table
			attrs = append(attrs, attribute.String("db.collection.name", table))
		}
	}
	attrs = append(attrs, attribute.String("db.query.summary", name))
	// The statement's span is not the parent of what follows in the context returned: bun
	// runs a transaction in BEGIN's context, whose work belongs to the caller's span.
	_, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return context.WithValue(ctx, sqlSpanKey{}, span)
}

func (h sqlSpans) AfterQuery(ctx context.Context, e *bun.QueryEvent) {
	span, ok := ctx.Value(sqlSpanKey{}).(trace.Span)
	if !ok {
		return
	}
	if e.Err != nil && !isNoRows(e.Err) {
		span.SetStatus(codes.Error, "error")
	}
	span.End()
}

// sqlSystem is the OpenTelemetry db.system.name of dialect.
func sqlSystem(d Dialect) string {
	if d == Postgres {
		return "postgresql"
	}
	return "sqlite"
}
