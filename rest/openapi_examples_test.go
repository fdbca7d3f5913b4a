package rest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// openAPIExample is one example value of a document and the schema it must satisfy.
type openAPIExample struct {
	where  string // a JSON-pointer-like path to the example, for the failure message
	value  any
	schema *openapi3.Schema
}

// openAPIExamples finds every example of doc with the schema it illustrates: the `example`
// and `examples` of parameters and headers, of request-body and response media types, and of
// every schema and subschema (properties, items, compositions, conditionals), in paths and in
// components alike. A value given only as an externalValue is not fetched, so not listed.
func openAPIExamples(doc *openapi3.T) []openAPIExample {
	w := exampleWalk{seen: map[*openapi3.Schema]bool{}}
	for _, path := range slices.Sorted(maps.Keys(doc.Paths.Map())) {
		item := doc.Paths.Value(path)
		at := "paths/" + path
		for i, p := range item.Parameters {
			w.parameter(fmt.Sprintf("%s/parameters/%d", at, i), p)
		}
		ops := item.Operations()
		for _, method := range slices.Sorted(maps.Keys(ops)) {
			op, at := ops[method], at+"/"+strings.ToLower(method)
			for i, p := range op.Parameters {
				w.parameter(fmt.Sprintf("%s/parameters/%d", at, i), p)
			}
			if op.RequestBody != nil && op.RequestBody.Value != nil {
				w.content(at+"/requestBody", op.RequestBody.Value.Content)
			}
			if op.Responses != nil {
				for _, status := range slices.Sorted(maps.Keys(op.Responses.Map())) {
					w.response(at+"/responses/"+status, op.Responses.Value(status))
				}
			}
		}
	}
	c := doc.Components
	if c == nil {
		return w.found
	}
	for _, name := range slices.Sorted(maps.Keys(c.Schemas)) {
		w.schema("components/schemas/"+name, c.Schemas[name])
	}
	for _, name := range slices.Sorted(maps.Keys(c.Parameters)) {
		w.parameter("components/parameters/"+name, c.Parameters[name])
	}
	for _, name := range slices.Sorted(maps.Keys(c.Headers)) {
		if h := c.Headers[name]; h != nil && h.Value != nil {
			w.parameterValue("components/headers/"+name, &h.Value.Parameter)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.RequestBodies)) {
		if b := c.RequestBodies[name]; b != nil && b.Value != nil {
			w.content("components/requestBodies/"+name, b.Value.Content)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Responses)) {
		w.response("components/responses/"+name, c.Responses[name])
	}
	return w.found
}

// exampleWalk collects examples; seen keeps a schema reached by many references from being
// walked more than once (and a recursive one from being walked forever).
type exampleWalk struct {
	found []openAPIExample
	seen  map[*openapi3.Schema]bool
}

func (w *exampleWalk) add(where string, value any, s *openapi3.SchemaRef) {
	if s == nil || s.Value == nil {
		w.found = append(w.found, openAPIExample{where: where, value: value}) // no schema: reported
		return
	}
	w.found = append(w.found, openAPIExample{where: where, value: value, schema: s.Value})
}

// examples adds an `example` and the values of an `examples` map, all for schema s.
func (w *exampleWalk) examples(at string, example any, examples openapi3.Examples, s *openapi3.SchemaRef) {
	if example != nil {
		w.add(at+"/example", example, s)
	}
	for _, name := range slices.Sorted(maps.Keys(examples)) {
		if e := examples[name]; e != nil && e.Value != nil && e.Value.Value != nil {
			w.add(at+"/examples/"+name+"/value", e.Value.Value, s)
		}
	}
}

func (w *exampleWalk) parameter(at string, p *openapi3.ParameterRef) {
	if p != nil && p.Value != nil {
		w.parameterValue(at, p.Value)
	}
}

func (w *exampleWalk) parameterValue(at string, p *openapi3.Parameter) {
	w.examples(at, p.Example, p.Examples, p.Schema)
	w.schema(at+"/schema", p.Schema)
	w.content(at, p.Content)
}

func (w *exampleWalk) response(at string, r *openapi3.ResponseRef) {
	if r == nil || r.Value == nil {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(r.Value.Headers)) {
		if h := r.Value.Headers[name]; h != nil && h.Value != nil {
			w.parameterValue(at+"/headers/"+name, &h.Value.Parameter)
		}
	}
	w.content(at, r.Value.Content)
}

func (w *exampleWalk) content(at string, c openapi3.Content) {
	for _, mt := range slices.Sorted(maps.Keys(c)) {
		m, at := c[mt], at+"/content/"+mt
		if m == nil {
			continue
		}
		w.examples(at, m.Example, m.Examples, m.Schema)
		w.schema(at+"/schema", m.Schema)
	}
}

// schema adds a schema's own `example` and `examples`, each checked against that schema, and
// walks every subschema.
func (w *exampleWalk) schema(at string, ref *openapi3.SchemaRef) {
	if ref == nil || ref.Value == nil || w.seen[ref.Value] {
		return
	}
	s := ref.Value
	w.seen[s] = true
	if ref.Ref != "" {
		at = strings.TrimPrefix(ref.Ref, "#/") // name it where it is written
	}
	if s.Example != nil {
		w.add(at+"/example", s.Example, ref)
	}
	for i, v := range s.Examples {
		w.add(fmt.Sprintf("%s/examples/%d", at, i), v, ref)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		w.schema(at+"/properties/"+name, s.Properties[name])
	}
	for _, name := range slices.Sorted(maps.Keys(s.PatternProperties)) {
		w.schema(at+"/patternProperties/"+name, s.PatternProperties[name])
	}
	for _, name := range slices.Sorted(maps.Keys(s.DependentSchemas)) {
		w.schema(at+"/dependentSchemas/"+name, s.DependentSchemas[name])
	}
	for _, name := range slices.Sorted(maps.Keys(s.Defs)) {
		w.schema(at+"/$defs/"+name, s.Defs[name])
	}
	for kw, list := range map[string]openapi3.SchemaRefs{"allOf": s.AllOf, "anyOf": s.AnyOf, "oneOf": s.OneOf, "prefixItems": s.PrefixItems} {
		for i, sub := range list {
			w.schema(fmt.Sprintf("%s/%s/%d", at, kw, i), sub)
		}
	}
	for kw, sub := range map[string]*openapi3.SchemaRef{
		"items": s.Items, "not": s.Not, "if": s.If, "then": s.Then, "else": s.Else,
		"contains": s.Contains, "propertyNames": s.PropertyNames, "contentSchema": s.ContentSchema,
		"additionalProperties": s.AdditionalProperties.Schema, "unevaluatedProperties": s.UnevaluatedProperties.Schema,
		"unevaluatedItems": s.UnevaluatedItems.Schema,
	} {
		w.schema(at+"/"+kw, sub)
	}
}

// openAPIExampleErrors validates every example of doc against its schema as JSON Schema
// 2020-12 (the dialect of OpenAPI 3.1) and returns how many it checked and what failed.
func openAPIExampleErrors(doc *openapi3.T) (checked int, failures []string) {
	for _, ex := range openAPIExamples(doc) {
		checked++
		if ex.schema == nil {
			failures = append(failures, ex.where+": an example with no schema to check it against")
			continue
		}
		if err := ex.schema.VisitJSON(ex.value, openapi3.EnableJSONSchema2020()); err != nil {
			msg, _, _ := strings.Cut(err.Error(), "\n") // kin-openapi goes on to print the schema
			failures = append(failures, ex.where+": "+msg)
		}
	}
	return checked, failures
}

func TestOpenAPI_EveryExampleMatchesItsSchema(t *testing.T) {
	checked, failures := openAPIExampleErrors(openAPIKinDoc(t))
	for _, f := range failures {
		t.Error(f)
	}
	// The document has examples on most parameters, bodies, responses and scalar schemas; a
	// walk that finds few has lost its way, and would pass whatever the examples say.
	if checked < 200 {
		t.Errorf("checked %d examples; the walk misses most of the document's", checked)
	}
	t.Logf("checked %d examples", checked)
}

// TestOpenAPI_ExampleCheckCatchesAWrongExampleAnywhere runs the check on a small document
// with one wrong example in each place an example can be, beside right ones, and wants
// exactly the wrong ones reported: the check above cannot pass by not looking.
func TestOpenAPI_ExampleCheckCatchesAWrongExampleAnywhere(t *testing.T) {
	const spec = `
openapi: 3.1.0
info: {title: t, version: '1'}
paths:
  /things/{id}:
    parameters:
      - {name: id, in: path, required: true, schema: {type: string, pattern: '^t_[0-9]+$'}, example: t_1}
    get:
      parameters:
        - {name: listed, in: query, schema: {type: boolean}, example: 'true'}
        - name: limit
          in: query
          schema: {type: integer, maximum: 100}
          examples:
            ok: {value: 20}
            tooMany: {value: 101}
      responses:
        '200':
          description: ok
          headers:
            X-Count: {schema: {type: integer}, example: many}
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Thing'}
              examples:
                right: {value: {id: t_1, price: '1.5'}}
                extraField: {value: {id: t_1, price: '1.5', colour: red}}
    post:
      requestBody:
        content:
          application/json:
            schema: {$ref: '#/components/schemas/Thing'}
            example: {id: t_1, price: 1.5}
      responses:
        '200': {description: ok}
components:
  schemas:
    Thing:
      type: object
      additionalProperties: false
      required: [id, price]
      properties:
        id: {type: string, pattern: '^t_[0-9]+$', examples: [t_1, thing-one]}
        price: {$ref: '#/components/schemas/Amount'}
        kind:
          type: string
          enum: [a, b]
          if: {const: a}
          then: {maxLength: 1}
          else: {maxLength: 1, example: bb}
    Amount: {type: string, pattern: '^[0-9]+(\.[0-9]+)?$', examples: ['12.5', '-1']}
  parameters:
    Sort: {name: sort, in: query, schema: {type: string, enum: [asc, desc]}, example: up}
  headers:
    Remaining: {schema: {type: integer, minimum: 0}, example: -1}
`
	doc, err := openapi3.NewLoader().LoadFromData([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	checked, failures := openAPIExampleErrors(doc)
	var got []string
	for _, f := range failures {
		where, _, _ := strings.Cut(f, ": ")
		got = append(got, where)
	}
	slices.Sort(got)
	want := []string{
		"components/headers/Remaining/example",
		"components/parameters/Sort/example",
		"components/schemas/Amount/examples/1",
		"components/schemas/Thing/properties/id/examples/1",
		"components/schemas/Thing/properties/kind/else/example",
		"paths//things/{id}/get/parameters/0/example",
		"paths//things/{id}/get/parameters/1/examples/tooMany/value",
		"paths//things/{id}/get/responses/200/content/application/json/examples/extraField/value",
		"paths//things/{id}/get/responses/200/headers/X-Count/example",
		"paths//things/{id}/post/requestBody/content/application/json/example",
	}
	if !slices.Equal(got, want) {
		t.Errorf("reported\n  %s\nwant\n  %s\nfailures:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "), strings.Join(failures, "\n  "))
	}
	// The right ones are checked too: the path's id, limit's ok, the right response body,
	// Thing's first id and Amount's 12.5.
	if checked != len(want)+5 {
		t.Errorf("checked %d examples, want %d", checked, len(want)+5)
	}
}
