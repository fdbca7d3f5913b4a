package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracer names the GraphQL door's spans; it follows the global tracer provider.
var tracer = otel.Tracer("marketd/graph")

// operationSpans gives each GraphQL operation a span, a child of its request's span (over
// HTTP) or of its socket's upgrade (over a websocket): named by the operation's type and name,
// never carrying its document or variables. A subscription's span lasts until its stream ends.
type operationSpans struct{}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationInterceptor
} = operationSpans{}

func (operationSpans) ExtensionName() string                   { return "OperationSpans" }
func (operationSpans) Validate(graphql.ExecutableSchema) error { return nil }

func (operationSpans) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return next(ctx)
	}
	oc := graphql.GetOperationContext(ctx)
	kind, opName := "operation", oc.OperationName
	if oc.Operation != nil {
		kind = string(oc.Operation.Operation)
		if opName == "" {
			opName = oc.Operation.Name // the document's one operation, named in it
		}
	}
	name := kind
	if opName != "" {
		name += " " + opName
	}
	ctx, span := tracer.Start(ctx, name, trace.WithAttributes(
		attribute.String("graphql.operation.type", kind), attribute.String("graphql.operation.name", opName)))
	responses := next(ctx)
	// The transport calls the handler with a context of its own: the span is put in it, so
	// the resolvers' store and SQL spans are the operation's children.
	return func(ctx context.Context) *graphql.Response {
		resp := responses(trace.ContextWithSpan(ctx, span))
		if kind != "subscription" || resp == nil { // a query or mutation has one response
			endOperationSpan(span, resp)
		}
		return resp
	}
}

// endOperationSpan ends span, an error status when resp has errors (their codes only).
func endOperationSpan(span trace.Span, resp *graphql.Response) {
	if resp != nil && len(resp.Errors) > 0 {
		span.SetStatus(codes.Error, "graphql errors")
	}
	span.End()
}
