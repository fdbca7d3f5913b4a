package rest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"gopkg.in/yaml.v3"

	"marketd/store"
	"marketd/store/storetest"
	"marketd/store/wallet"
)

// openAPIMethods are the operation keys of an OpenAPI path item.
var openAPIMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// openAPIDoc parses the embedded rest/openapi.yaml into plain maps and slices.
func openAPIDoc(t testing.TB) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(openapiYAML, &doc); err != nil {
		t.Fatalf("openapi.yaml does not parse: %v", err)
	}
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		t.Fatalf("openapi: %q, want 3.1.x", v)
	}
	return doc
}

// openAPIOp is one documented operation.
type openAPIOp struct {
	method string // upper case, as in the route table
	path   string
	op     map[string]any
}

func (o openAPIOp) String() string { return o.method + " " + o.path }

// openAPIOps lists every documented operation, sorted by path then method.
func openAPIOps(t testing.TB, doc map[string]any) []openAPIOp {
	t.Helper()
	paths, ok := doc["paths"].(map[string]any)
	if !ok {
		t.Fatal("openapi.yaml has no paths object")
	}
	var ops []openAPIOp
	for path, item := range paths {
		pi, ok := item.(map[string]any)
		if !ok {
			t.Fatalf("path %s is not an object", path)
		}
		for _, m := range openAPIMethods {
			if op, ok := pi[m]; ok {
				opm, ok := op.(map[string]any)
				if !ok {
					t.Fatalf("%s %s is not an object", m, path)
				}
				ops = append(ops, openAPIOp{method: strings.ToUpper(m), path: path, op: opm})
			}
		}
	}
	slices.SortFunc(ops, func(a, b openAPIOp) int { return strings.Compare(a.String(), b.String()) })
	return ops
}

// openAPIResolve follows a local "$ref" ("#/a/b") inside doc.
func openAPIResolve(doc map[string]any, ref string) (any, error) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, fmt.Errorf("%q is not a local reference", ref)
	}
	if frag == "" {
		return doc, nil
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, fmt.Errorf("%q is not a JSON pointer", ref)
	}
	var cur any = doc
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("%q: no %q", ref, tok)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("%q: no index %q", ref, tok)
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("%q: %q is inside a scalar", ref, tok)
		}
	}
	return cur, nil
}

// openAPIDeref returns v itself, or what its "$ref" (followed transitively) names.
func openAPIDeref(t testing.TB, doc map[string]any, v any) map[string]any {
	t.Helper()
	for range 10 {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%v is not an object", v)
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		next, err := openAPIResolve(doc, ref)
		if err != nil {
			t.Fatal(err)
		}
		v = next
	}
	t.Fatalf("reference chain too long at %v", v)
	return nil
}

// openAPITestAPI is an API on one backend with its route table, for the document tests.
func openAPITestAPI(t *testing.T, b storetest.Backend) *testAPI {
	t.Helper()
	a := newTestAPI(t, b)
	if len(a.srv.routes) == 0 {
		t.Fatal("the server has no routes")
	}
	return a
}

func TestOpenAPI_EveryRouteIsDocumented(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := openAPITestAPI(t, b)
		doc := openAPIDoc(t)
		documented := map[string]bool{}
		for _, o := range openAPIOps(t, doc) {
			documented[o.String()] = true
		}
		for _, rt := range a.srv.routes {
			if !documented[rt.method+" "+rt.path] {
				t.Errorf("route %s %s is served but not documented in openapi.yaml", rt.method, rt.path)
			}
		}
	})
}

// openAPIUnrouted tells whether a response came from the router's fall-back (srv.unrouted)
// rather than from a route: 405 method_not_allowed, or 404 not_found for "no endpoint".
func openAPIUnrouted(r *testResponse) (bool, string) {
	var p problem
	_ = json.Unmarshal(r.body, &p)
	switch {
	case r.status == http.StatusMethodNotAllowed && p.Code == string(store.CodeMethodNotAllowed):
		return true, "405 method_not_allowed"
	case r.status == http.StatusNotFound && p.Code == string(store.CodeNotFound) && strings.HasPrefix(p.Detail, "no endpoint at "):
		return true, "404 not_found (no endpoint)"
	}
	return false, ""
}

var openAPIWildcard = regexp.MustCompile(`\{[^{}/]+\}`)

func TestOpenAPI_EveryDocumentedRouteIsServed(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := openAPITestAPI(t, b)
		doc := openAPIDoc(t)
		ops := openAPIOps(t, doc)
		if len(ops) == 0 {
			t.Fatal("openapi.yaml documents no operation")
		}
		for _, o := range ops {
			// Any concrete value will do for a wildcard: the router matches the shape, and a
			// handler's own 400/401/404 still proves the route exists.
			concrete := openAPIWildcard.ReplaceAllString(o.path, "probe")
			r := a.do(o.method, concrete, nil)
			if unrouted, why := openAPIUnrouted(r); unrouted {
				t.Errorf("%s is documented but not served: %s %s answered %s: %s", o, o.method, concrete, why, r.body)
			}
			req := httptest.NewRequest(o.method, concrete, nil)
			if _, pattern := a.srv.mux.Handler(req); pattern != o.method+" "+o.path {
				t.Errorf("%s %s is routed to pattern %q, want %q", o.method, concrete, pattern, o.method+" "+o.path)
			}
		}
	})
}

func TestOpenAPI_DocumentsNoUndefinedPathWildcards(t *testing.T) {
	doc := openAPIDoc(t)
	for _, o := range openAPIOps(t, doc) {
		declared := map[string]bool{}
		params := []any{}
		if pi, ok := doc["paths"].(map[string]any)[o.path].(map[string]any); ok {
			if ps, ok := pi["parameters"].([]any); ok {
				params = append(params, ps...)
			}
		}
		if ps, ok := o.op["parameters"].([]any); ok {
			params = append(params, ps...)
		}
		for _, p := range params {
			pm := openAPIDeref(t, doc, p)
			if pm["in"] == "path" {
				declared[pm["name"].(string)] = true
			}
		}
		for _, w := range openAPIWildcard.FindAllString(o.path, -1) {
			if name := strings.Trim(w, "{}"); !declared[name] {
				t.Errorf("%s: path wildcard %s has no path parameter", o, w)
			}
		}
	}
}

func TestOpenAPI_EveryRefResolves(t *testing.T) {
	doc := openAPIDoc(t)
	refs := 0
	var walk func(at string, v any)
	walk = func(at string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, child := range x {
				if k == "$ref" {
					ref, ok := child.(string)
					if !ok {
						t.Errorf("%s: $ref is not a string", at)
						continue
					}
					refs++
					if _, err := openAPIResolve(doc, ref); err != nil {
						t.Errorf("%s: %v", at, err)
					}
					continue
				}
				walk(at+"/"+k, child)
			}
		case []any:
			for i, child := range x {
				walk(at+"/"+strconv.Itoa(i), child)
			}
		}
	}
	walk("#", doc)
	if refs == 0 {
		t.Fatal("no $ref found: the walk is broken")
	}
}

func TestOpenAPI_EveryOperationHasAUniqueOperationID(t *testing.T) {
	doc := openAPIDoc(t)
	seen := map[string]string{}
	for _, o := range openAPIOps(t, doc) {
		id, _ := o.op["operationId"].(string)
		if id == "" {
			t.Errorf("%s has no operationId", o)
			continue
		}
		if prev, dup := seen[id]; dup {
			t.Errorf("operationId %q is used by %s and %s", id, prev, o)
		}
		seen[id] = o.String()
	}
}

func TestOpenAPI_EveryOperationHasSummaryDescriptionAndTags(t *testing.T) {
	doc := openAPIDoc(t)
	for _, o := range openAPIOps(t, doc) {
		for _, field := range []string{"summary", "description"} {
			if s, _ := o.op[field].(string); strings.TrimSpace(s) == "" {
				t.Errorf("%s has no %s", o, field)
			}
		}
		if tags, _ := o.op["tags"].([]any); len(tags) == 0 {
			t.Errorf("%s has no tag", o)
		}
	}
}

// openAPISecurity is an operation's effective security requirement: its own, else the document's.
func openAPISecurity(doc map[string]any, op map[string]any) []any {
	if s, ok := op["security"]; ok {
		l, _ := s.([]any)
		return l
	}
	l, _ := doc["security"].([]any)
	return l
}

// openAPIRoutes is every route the API can serve, by "METHOD path", the dev-mode-only ones
// included: the document describes them all.
func openAPIRoutes() map[string]route {
	routes := map[string]route{}
	for _, rt := range (&Server{cfg: Config{Dev: true}}).apiRoutes() {
		routes[rt.method+" "+rt.path] = rt
	}
	return routes
}

func TestOpenAPI_SecurityMatchesRouteAccess(t *testing.T) {
	doc := openAPIDoc(t)
	routes := openAPIRoutes()
	for _, o := range openAPIOps(t, doc) {
		rt, ok := routes[o.String()]
		if !ok {
			continue // TestOpenAPI_EveryDocumentedRouteIsServed reports it
		}
		sec := openAPISecurity(doc, o.op)
		switch rt.access {
		case public:
			if len(sec) != 0 {
				t.Errorf("%s needs no token but documents security %v; want security: []", o, sec)
			}
		case token:
			schemes := map[string]bool{}
			for _, req := range sec {
				for name := range req.(map[string]any) {
					schemes[name] = true
				}
			}
			if !schemes["bearerAuth"] || !schemes["cookieAuth"] {
				t.Errorf("%s needs a token but documents security %v; want bearerAuth and cookieAuth", o, sec)
			}
			if _, ok := o.op["responses"].(map[string]any)["401"]; !ok {
				t.Errorf("%s needs a token but documents no 401", o)
			}
		}
	}
	schemes := openAPIDeref(t, doc, map[string]any{"$ref": "#/components/securitySchemes"})
	cookie := openAPIDeref(t, doc, schemes["cookieAuth"])
	if cookie["type"] != "apiKey" || cookie["in"] != "cookie" || cookie["name"] != cookieName {
		t.Errorf("cookieAuth is %v, want apiKey in cookie %s", cookie, cookieName)
	}
	bearer := openAPIDeref(t, doc, schemes["bearerAuth"])
	if bearer["type"] != "http" || bearer["scheme"] != "bearer" {
		t.Errorf("bearerAuth is %v, want http bearer", bearer)
	}
}

// openAPIResponses returns an operation's responses, resolved, by status.
func openAPIResponses(t testing.TB, doc map[string]any, o openAPIOp) map[string]map[string]any {
	t.Helper()
	rs, ok := o.op["responses"].(map[string]any)
	if !ok || len(rs) == 0 {
		t.Fatalf("%s has no responses", o)
	}
	out := map[string]map[string]any{}
	for status, r := range rs {
		out[status] = openAPIDeref(t, doc, r)
	}
	return out
}

func openAPIHeaders(r map[string]any) map[string]any {
	h, _ := r["headers"].(map[string]any)
	return h
}

func TestOpenAPI_EveryResponseDocumentsRequestIdAndErrorsAreProblems(t *testing.T) {
	doc := openAPIDoc(t)
	for _, o := range openAPIOps(t, doc) {
		for status, r := range openAPIResponses(t, doc, o) {
			if _, ok := openAPIHeaders(r)["X-Request-Id"]; !ok {
				t.Errorf("%s %s: no X-Request-Id header", o, status)
			}
			if strings.HasPrefix(status, "2") {
				continue
			}
			content, _ := r["content"].(map[string]any)
			if spec, _ := o.op["x-protocol"].(string); spec != "" {
				// An operation of another protocol (a C2SP witness's add-checkpoint) answers its
				// refusals as that protocol says, except where this API's own layer refuses
				// first (the rate limit, an internal error).
				if _, ok := content["application/problem+json"]; !ok && status != "429" && status != "500" && len(content) == 1 {
					continue
				}
			}
			mt, ok := content["application/problem+json"].(map[string]any)
			if !ok || len(content) != 1 {
				t.Errorf("%s %s: want only application/problem+json content, have %v", o, status, content)
				continue
			}
			if ref, _ := mt["schema"].(map[string]any)["$ref"].(string); ref != "#/components/schemas/Problem" {
				t.Errorf("%s %s: problem schema is %v, want the Problem component", o, status, mt["schema"])
			}
			if status == "401" {
				if _, ok := openAPIHeaders(r)["WWW-Authenticate"]; !ok {
					t.Errorf("%s 401: no WWW-Authenticate header", o)
				}
			}
		}
	}
}

func TestOpenAPI_LimitedRoutesDocumentRateLimitHeadersAnd429(t *testing.T) {
	doc := openAPIDoc(t)
	routes := openAPIRoutes()
	for _, o := range openAPIOps(t, doc) {
		rt, ok := routes[o.String()]
		limited := ok && rt.budget() != "none"
		rs := openAPIResponses(t, doc, o)
		if !limited {
			if _, ok := rs["429"]; ok {
				t.Errorf("%s is never rate limited but documents 429", o)
			}
			continue
		}
		for status, r := range rs {
			if !strings.HasPrefix(status, "2") {
				continue
			}
			for _, h := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} {
				if _, ok := openAPIHeaders(r)[h]; !ok {
					t.Errorf("%s %s: no %s header", o, status, h)
				}
			}
		}
		r, ok := rs["429"]
		if !ok {
			t.Errorf("%s is rate limited but documents no 429", o)
			continue
		}
		if _, ok := openAPIHeaders(r)["Retry-After"]; !ok {
			t.Errorf("%s 429: no Retry-After header", o)
		}
	}
}

func TestOpenAPI_RequestBodiesAreStrict(t *testing.T) {
	doc := openAPIDoc(t)
	for _, o := range openAPIOps(t, doc) {
		rb, ok := o.op["requestBody"]
		if !ok {
			continue
		}
		body := openAPIDeref(t, doc, rb)
		if spec, _ := o.op["x-protocol"].(string); spec != "" {
			continue // its body is the other protocol's
		}
		mt, ok := body["content"].(map[string]any)["application/json"].(map[string]any)
		if !ok {
			t.Errorf("%s: request body is not application/json", o)
			continue
		}
		schema := openAPIDeref(t, doc, mt["schema"])
		if schema["additionalProperties"] != false {
			t.Errorf("%s: request schema allows additional properties", o)
		}
		props, _ := schema["properties"].(map[string]any)
		req, _ := schema["required"].([]any)
		if len(props) > 0 && len(req) == 0 {
			t.Errorf("%s: request schema requires no field", o)
		}
	}
}

func TestOpenAPI_GetOpenAPIServesTheEmbeddedFileAsYAML(t *testing.T) {
	onDisk, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(onDisk, openapiYAML) {
		t.Fatal("the embedded document differs from rest/openapi.yaml")
	}
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := openAPITestAPI(t, b)
		r := a.do("GET", "/openapi.yaml", nil).ok(t)
		if ct := r.header.Get("Content-Type"); ct != "application/yaml" {
			t.Errorf("Content-Type %q, want application/yaml", ct)
		}
		if !bytes.Equal(r.body, openapiYAML) {
			t.Errorf("GET /openapi.yaml served %d bytes that differ from the embedded %d", len(r.body), len(openapiYAML))
		}
		if r.header.Get("X-Request-Id") == "" {
			t.Error("no X-Request-Id")
		}
	})
}

// openAPIKinDoc loads the document with kin-openapi, resolving every reference.
func openAPIKinDoc(t testing.TB) *openapi3.T {
	t.Helper()
	l := openapi3.NewLoader()
	doc, err := l.LoadFromData(openapiYAML)
	if err != nil {
		t.Fatalf("kin-openapi cannot load openapi.yaml: %v", err)
	}
	return doc
}

func TestOpenAPI_IsValidOpenAPI31WithValidExamples(t *testing.T) {
	doc := openAPIKinDoc(t)
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi %q is not 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background(), openapi3.EnableExamplesValidation()); err != nil {
		t.Fatalf("openapi.yaml is not a valid OpenAPI 3.1 document: %v", err)
	}
}

// openAPIResponseChecker checks real responses against the operation documented for them.
type openAPIResponseChecker struct {
	t   *testing.T
	doc *openapi3.T
}

// check fails the test unless the response's status is documented for method path, its
// body matches the documented schema of its content type, and every header the document
// says is required is present.
func (c openAPIResponseChecker) check(method, path string, r *testResponse) {
	c.t.Helper()
	item := c.doc.Paths.Value(path)
	if item == nil {
		c.t.Fatalf("%s is not documented", path)
	}
	op := item.GetOperation(method)
	if op == nil {
		c.t.Fatalf("%s %s is not documented", method, path)
	}
	ref := op.Responses.Status(r.status)
	if ref == nil || ref.Value == nil {
		c.t.Errorf("%s %s answered %d, which is not documented: %s", method, path, r.status, r.body)
		return
	}
	for name, h := range ref.Value.Headers {
		if h.Value != nil && h.Value.Required && r.header.Get(name) == "" {
			c.t.Errorf("%s %s %d: required header %s is missing", method, path, r.status, name)
		}
	}
	if len(ref.Value.Content) == 0 {
		if len(r.body) != 0 {
			c.t.Errorf("%s %s %d: documented without a body, got %s", method, path, r.status, r.body)
		}
		return
	}
	ct := r.header.Get("Content-Type")
	mt := ref.Value.Content.Get(ct)
	if mt == nil || ref.Value.Content[ct] == nil {
		c.t.Errorf("%s %s %d: Content-Type %q is not documented", method, path, r.status, ct)
		return
	}
	if mt.Schema == nil || !strings.Contains(ct, "json") {
		return
	}
	var body any
	if err := json.Unmarshal(r.body, &body); err != nil {
		c.t.Errorf("%s %s %d: body is not JSON: %v", method, path, r.status, err)
		return
	}
	if err := mt.Schema.Value.VisitJSON(body, openapi3.EnableJSONSchema2020()); err != nil {
		c.t.Errorf("%s %s %d: body does not match the documented schema: %v\nbody: %s", method, path, r.status, err, r.body)
		return
	}
	for _, p := range undocumented(mt.Schema.Value, body, "body") {
		c.t.Errorf("%s %s %d: %s is not in the document (a field clients cannot know of)", method, path, r.status, p)
	}
}

// undocumented lists the members of v, a body that matches schema, that the schema does not
// name: an object's property that none of its properties (nor those of its allOf) declares,
// where it does not allow others. A property that several allOf parts declare is undocumented
// within only where each of them leaves it so; within oneOf and anyOf it follows the first
// branch v matches.
func undocumented(schema *openapi3.Schema, v any, at string) []string {
	if schema == nil {
		return nil
	}
	for _, branches := range [][]*openapi3.SchemaRef{schema.OneOf, schema.AnyOf} {
		for _, b := range branches {
			if b.Value != nil && b.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()) == nil {
				return undocumented(b.Value, v, at)
			}
		}
	}
	var out []string
	switch v := v.(type) {
	case []any:
		if schema.Items != nil {
			for i, e := range v {
				out = append(out, undocumented(schema.Items.Value, e, fmt.Sprintf("%s[%d]", at, i))...)
			}
		}
	case map[string]any:
		props := map[string][]*openapi3.Schema{}
		open := false
		var parts func(s *openapi3.Schema)
		parts = func(s *openapi3.Schema) {
			if s == nil {
				return
			}
			open = open || s.AdditionalProperties.Has != nil && *s.AdditionalProperties.Has || s.AdditionalProperties.Schema != nil ||
				len(s.Properties) == 0 && len(s.AllOf) == 0 && len(s.OneOf) == 0 && len(s.AnyOf) == 0
			for k, p := range s.Properties {
				props[k] = append(props[k], p.Value)
			}
			for _, b := range s.AllOf {
				parts(b.Value)
			}
		}
		parts(schema)
		for k, e := range v {
			switch ps, ok := props[k]; {
			case ok:
				out = append(out, undocumentedInEach(ps, e, at+"."+k)...)
			case schema.AdditionalProperties.Schema != nil:
				out = append(out, undocumented(schema.AdditionalProperties.Schema.Value, e, at+"."+k)...)
			case !open:
				out = append(out, at+"."+k)
			}
		}
	}
	return out
}

// undocumentedInEach is what undocumented finds of v under every one of schemas.
func undocumentedInEach(schemas []*openapi3.Schema, v any, at string) []string {
	out := undocumented(schemas[0], v, at)
	for _, s := range schemas[1:] {
		also := undocumented(s, v, at)
		out = slices.DeleteFunc(out, func(p string) bool { return !slices.Contains(also, p) })
	}
	return out
}

func TestOpenAPI_RealResponsesMatchTheDocument(t *testing.T) {
	doc := openAPIKinDoc(t)
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b, func(sc *store.Config, rc *Config) { rc.RateRead, rc.RatePrepare = 2, 1 })
		c := openAPIResponseChecker{t: t, doc: doc}

		c.check("GET", "/healthz", a.do("GET", "/healthz", nil))
		c.check("GET", "/readyz", a.do("GET", "/readyz", nil))
		c.check("GET", "/openapi.yaml", a.do("GET", "/openapi.yaml", nil))
		c.check("GET", "/.well-known/jwks.json", a.do("GET", "/.well-known/jwks.json", nil))

		// Onboarding: prepare (then 429 over the prepare limit of 1), execute, a replay, errors.
		alice := storetest.NewParty("alice")
		onboard := map[string]string{"publicKey": alice.PublicBase64(), "hint": "alice"}
		prep := a.do("POST", "/api/parties/onboard/prepare", onboard)
		c.check("POST", "/api/parties/onboard/prepare", prep)
		prep.ok(t)
		c.check("POST", "/api/parties/onboard/prepare", a.do("POST", "/api/parties/onboard/prepare", onboard))
		c.check("POST", "/api/parties/onboard/execute", a.do("POST", "/api/parties/onboard/execute", `{"preparedTransactionHash": 1}`))
		c.check("POST", "/api/parties/onboard/execute", a.do("POST", "/api/parties/onboard/execute", "<x/>", withHeader("Content-Type", "text/xml")))
		hash64 := prep.str(t, "preparedTransactionHash")
		hash, _ := base64.StdEncoding.DecodeString(hash64)
		other := make([]byte, 32)
		c.check("POST", "/api/parties/onboard/execute", a.do("POST", "/api/parties/onboard/execute", map[string]string{
			"preparedTransactionHash": base64.StdEncoding.EncodeToString(other), "signature": alice.SignBase64(other)}))
		c.check("POST", "/api/parties/onboard/execute", a.do("POST", "/api/parties/onboard/execute", map[string]string{
			"preparedTransactionHash": hash64, "signature": alice.SignBase64([]byte("not the hash"))}))
		for range 2 { // the replay answers the first receipt
			res := a.do("POST", "/api/parties/onboard/execute", map[string]string{"preparedTransactionHash": hash64, "signature": alice.SignBase64(hash)})
			c.check("POST", "/api/parties/onboard/execute", res)
			res.ok(t)
		}

		// Sign-in.
		c.check("POST", "/api/auth/nonce", a.do("POST", "/api/auth/nonce", map[string]string{"partyId": "nobody"}))
		c.check("POST", "/api/auth/nonce", a.do("POST", "/api/auth/nonce", map[string]string{"partyId": "bob::1220" + strings.Repeat("0", 64)}))
		nonce := a.do("POST", "/api/auth/nonce", map[string]string{"partyId": alice.ID})
		c.check("POST", "/api/auth/nonce", nonce)
		msg, n := nonce.str(t, "message"), nonce.str(t, "nonce")
		if _, err := wallet.ParseChallenge(msg); err != nil {
			t.Errorf("the challenge does not have the documented layout: %v", err)
		}
		verify := a.do("POST", "/api/auth/verify", map[string]string{"partyId": alice.ID, "nonce": n, "signature": alice.SignBase64([]byte(msg))})
		c.check("POST", "/api/auth/verify", verify)
		tok := verify.ok(t).str(t, "token")
		cookie := verify.sessionCookie()
		if cookie == nil {
			t.Fatal("verify set no session cookie")
		}
		c.check("POST", "/api/auth/verify", a.do("POST", "/api/auth/verify", map[string]string{"partyId": alice.ID, "nonce": n, "signature": alice.SignBase64([]byte(msg))}))

		// Authenticated reads: a 200, a 429 over the read limit of 2, then the next window.
		c.check("GET", "/api/auth/me", a.do("GET", "/api/auth/me", nil, bearer(tok)))
		c.check("GET", "/api/auth/sessions", a.do("GET", "/api/auth/sessions", nil, bearer(tok)))
		c.check("GET", "/api/auth/me", a.do("GET", "/api/auth/me", nil, bearer(tok)))
		a.clock.Advance(time.Minute)
		c.check("GET", "/api/auth/sessions", a.do("GET", "/api/auth/sessions?limit=0", nil, bearer(tok)))
		c.check("GET", "/api/auth/me", a.do("GET", "/api/auth/me?taker=bob", nil, bearer(tok)))
		a.clock.Advance(time.Minute)
		c.check("GET", "/api/auth/me", a.do("GET", "/api/auth/me", nil))

		// Rotation through the cookie: the 200 then carries Set-Cookie and X-Auth-*.
		a.clock.Advance(31 * time.Minute)
		rotated := a.do("GET", "/api/auth/me", nil, withCookie(cookie))
		c.check("GET", "/api/auth/me", rotated)
		if rotated.header.Get("X-Auth-Token") == "" || rotated.header.Get("X-Auth-Expires-At") == "" || rotated.sessionCookie() == nil {
			t.Errorf("a cookie older than 30 minutes was not rotated: %v", rotated.header)
		}

		// Logout: cross-origin with the cookie, then 204, then refused.
		c.check("POST", "/api/auth/logout", a.do("POST", "/api/auth/logout", nil, withCookie(rotated.sessionCookie()), withHeader("Origin", "https://evil.example")))
		c.check("POST", "/api/auth/logout", a.do("POST", "/api/auth/logout", `{"x":1}`, bearer(tok)))
		out := a.do("POST", "/api/auth/logout", nil, bearer(tok))
		c.check("POST", "/api/auth/logout", out)
		if out.status != http.StatusNoContent {
			t.Fatalf("logout answered %d: %s", out.status, out.body)
		}
		c.check("POST", "/api/auth/logout", a.do("POST", "/api/auth/logout", nil, bearer(tok)))

		// The 413 every body-taking endpoint documents.
		big := `{"partyId":"` + strings.Repeat("a", maxBody) + `"}`
		c.check("POST", "/api/auth/nonce", a.do("POST", "/api/auth/nonce", big))

		// 410 once the prepared transaction's lifetime is over.
		late := a.do("POST", "/api/parties/onboard/prepare", onboard)
		c.check("POST", "/api/parties/onboard/prepare", late)
		late64 := late.ok(t).str(t, "preparedTransactionHash")
		lateHash, _ := base64.StdEncoding.DecodeString(late64)
		a.clock.Advance(10 * time.Minute)
		gone := a.do("POST", "/api/parties/onboard/execute", map[string]string{"preparedTransactionHash": late64, "signature": alice.SignBase64(lateHash)})
		c.check("POST", "/api/parties/onboard/execute", gone)
		gone.wantProblem(t, http.StatusGone, store.CodePreparedExpired)
	})
}

func TestOpenAPI_DevModeOnlyRoutesSaySoAndDocument404(t *testing.T) {
	doc := openAPIDoc(t)
	prod := map[string]bool{}
	for _, rt := range (&Server{}).apiRoutes() {
		prod[rt.method+" "+rt.path] = true
	}
	all := openAPIRoutes()
	devOnly := 0
	for _, o := range openAPIOps(t, doc) {
		if _, served := all[o.String()]; !served || prod[o.String()] {
			continue
		}
		devOnly++
		if desc, _ := o.op["description"].(string); !strings.Contains(desc, "MARKETD_DEV=1") {
			t.Errorf("%s exists only in dev mode, but its description does not say MARKETD_DEV=1", o)
		}
		if _, ok := o.op["responses"].(map[string]any)["404"]; !ok {
			t.Errorf("%s exists only in dev mode, but documents no 404 for when it does not", o)
		}
	}
	if devOnly == 0 {
		t.Fatal("no dev-mode-only route is documented: the tap is missing")
	}
}

// openAPIPreparedContent returns the contentSchema a prepare response's schema gives its
// preparedTransaction (what the base64 decodes to), or nil.
func openAPIPreparedContent(schema *openapi3.Schema) *openapi3.SchemaRef {
	if schema == nil {
		return nil
	}
	for _, part := range append([]*openapi3.SchemaRef{{Value: schema}}, schema.AllOf...) {
		if p := part.Value.Properties["preparedTransaction"]; p != nil && p.Value != nil && p.Value.ContentSchema != nil && p.Value.ContentSchema.Value != nil {
			return p.Value.ContentSchema
		}
	}
	return nil
}

func TestOpenAPI_PrepareExamplesAreSelfConsistent(t *testing.T) {
	doc := openAPIKinDoc(t)
	checked := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			ref := op.Responses.Status(http.StatusOK)
			if ref == nil || ref.Value == nil || ref.Value.Content.Get("application/json") == nil {
				continue
			}
			mt := ref.Value.Content.Get("application/json")
			ex, _ := mt.Example.(map[string]any)
			tx, ok := ex["preparedTransaction"].(string)
			if !ok {
				continue
			}
			checked++
			where := method + " " + path + " 200 example"
			raw, err := base64.StdEncoding.DecodeString(tx)
			if err != nil {
				t.Errorf("%s: preparedTransaction is not base64: %v", where, err)
				continue
			}
			if sum := sha256.Sum256(raw); base64.StdEncoding.EncodeToString(sum[:]) != ex["preparedTransactionHash"] {
				t.Errorf("%s: preparedTransactionHash is not the SHA-256 of the decoded preparedTransaction", where)
			}
			var env map[string]any
			if err := json.Unmarshal(raw, &env); err != nil {
				t.Errorf("%s: preparedTransaction is not JSON: %v", where, err)
				continue
			}
			for _, field := range []string{"actAs", "expiresAt"} {
				if fmt.Sprint(env[field]) != fmt.Sprint(ex[field]) {
					t.Errorf("%s: %s is %v, the decoded transaction says %v", where, field, ex[field], env[field])
				}
			}
			if content := openAPIPreparedContent(mt.Schema.Value); content != nil {
				if err := content.Value.VisitJSON(env, openapi3.EnableJSONSchema2020()); err != nil {
					t.Errorf("%s: the decoded preparedTransaction does not match %s: %v", where, content.Ref, err)
				}
			}
		}
	}
	if checked < 5 {
		t.Errorf("checked %d prepare examples; the onboarding, tap, transfer and preapproval ones are missing", checked)
	}
}

// checkPrepared checks a prepare's answer like check and, on a 200, that preparedTransaction
// decodes to what the document's contentSchema for it describes and hashes to
// preparedTransactionHash.
func (c openAPIResponseChecker) checkPrepared(method, path string, r *testResponse) {
	c.t.Helper()
	c.check(method, path, r)
	if r.status != http.StatusOK {
		return
	}
	ref := c.doc.Paths.Value(path).GetOperation(method).Responses.Status(http.StatusOK)
	content := openAPIPreparedContent(ref.Value.Content.Get("application/json").Schema.Value)
	if content == nil {
		c.t.Errorf("%s %s 200: the document does not say what preparedTransaction decodes to (contentSchema)", method, path)
		return
	}
	var p preparedView
	if err := json.Unmarshal(r.body, &p); err != nil {
		c.t.Fatalf("%s %s 200: %v", method, path, err)
	}
	raw, err := base64.StdEncoding.DecodeString(p.PreparedTransaction)
	if err != nil {
		c.t.Errorf("%s %s 200: preparedTransaction is not base64: %v", method, path, err)
		return
	}
	if sum := sha256.Sum256(raw); base64.StdEncoding.EncodeToString(sum[:]) != p.PreparedTransactionHash {
		c.t.Errorf("%s %s 200: preparedTransactionHash is not the SHA-256 of the decoded preparedTransaction", method, path)
	}
	var body any
	if err := json.Unmarshal(raw, &body); err != nil {
		c.t.Errorf("%s %s 200: preparedTransaction is not JSON: %v", method, path, err)
		return
	}
	if err := content.Value.VisitJSON(body, openapi3.EnableJSONSchema2020()); err != nil {
		c.t.Errorf("%s %s 200: the decoded preparedTransaction does not match %s: %v\n%s", method, path, content.Ref, err, raw)
	}
}

func TestOpenAPI_RealWalletResponsesMatchTheDocument(t *testing.T) {
	doc := openAPIKinDoc(t)
	const (
		balance      = "/api/wallet/balance/{partyId}"
		utxoCount    = "/api/wallet/utxo-count/{partyId}"
		preapprovals = "/api/wallet/preapprovals/{partyId}"
		rewards      = "/api/wallet/rewards/{partyId}"
		history      = "/api/wallet/rewards/{partyId}/history"
		tapPrep      = "/api/wallet/tap/prepare"
		tapExec      = "/api/wallet/tap/execute"
		sendPrep     = "/api/wallet/cc-transfer/prepare"
		sendExec     = "/api/wallet/cc-transfer/execute"
		nftPrep      = "/api/wallet/nft-preapproval/prepare"
		nftExec      = "/api/wallet/nft-preapproval/execute"
		usdcxPrep    = "/api/wallet/usdcx-preapproval/prepare"
		usdcxExec    = "/api/wallet/usdcx-preapproval/execute"
		renew        = "/api/wallet/preapproval/renew"
		renewPrep    = "/api/wallet/preapproval/renew/prepare"
		renewExec    = "/api/wallet/preapproval/renew/execute"
	)
	at := func(tmpl, party string) string { return strings.Replace(tmpl, "{partyId}", party, 1) }
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b, withRates(1000, 1000))
		c := openAPIResponseChecker{t: t, doc: doc}
		alice, bob, carol := a.walletUser("alice"), a.walletUser("bob"), a.walletUser("carol")
		exec := func(path string, prep *testResponse, signer *walletUser, tok string) *testResponse {
			t.Helper()
			hash := prep.ok(t).str(t, "preparedTransactionHash")
			raw, _ := base64.StdEncoding.DecodeString(hash)
			r := a.do("POST", path, map[string]string{"preparedTransactionHash": hash, "signature": signer.SignBase64(raw)}, bearer(tok))
			c.check("POST", path, r)
			return r
		}

		// Every read: the party's own (200), another party's (403), without a token (401).
		for _, tmpl := range []string{balance, utxoCount, preapprovals, rewards, history} {
			c.check("GET", tmpl, a.do("GET", at(tmpl, alice.ID), nil, bearer(alice.tok)).ok(t))
			c.check("GET", tmpl, a.do("GET", at(tmpl, bob.ID), nil, bearer(alice.tok)))
			c.check("GET", tmpl, a.do("GET", at(tmpl, alice.ID), nil))
		}

		// The dev tap: credits, a replay, bad amounts.
		for _, tap := range []map[string]string{
			{"instrument": "CC", "amount": "10"}, {"instrument": "CC", "amount": "0.5"},
			{"instrument": "CC", "amount": "0.25"}, {"instrument": "USDCx", "amount": "100"},
		} {
			prep := a.do("POST", tapPrep, tap, bearer(alice.tok))
			c.checkPrepared("POST", tapPrep, prep)
			for range 2 {
				exec(tapExec, prep, alice, alice.tok).ok(t)
			}
		}
		for _, body := range []string{`{"instrument": "USDCx", "amount": "0.0000001"}`, `{"instrument": "CC", "amount": "1000000.1"}`, `{"instrument": "EUR", "amount": "1"}`} {
			c.check("POST", tapPrep, a.do("POST", tapPrep, body, bearer(alice.tok)))
		}

		// A transfer that consolidates, prepared twice over the same holdings: the first
		// execute commits (and replays), the second is stale.
		send := map[string]string{"receiver": bob.ID, "amount": "2.5"}
		p1 := a.do("POST", sendPrep, send, bearer(alice.tok))
		c.checkPrepared("POST", sendPrep, p1)
		p2 := a.do("POST", sendPrep, send, bearer(alice.tok))
		c.checkPrepared("POST", sendPrep, p2)
		var effects struct {
			Effects struct {
				Inputs  []map[string]string `json:"inputs"`
				Outputs []map[string]string `json:"outputs"`
			} `json:"effects"`
		}
		raw, _ := base64.StdEncoding.DecodeString(p1.str(t, "preparedTransaction"))
		if err := json.Unmarshal(raw, &effects); err != nil || len(effects.Effects.Inputs) != 3 || len(effects.Effects.Outputs) != 2 ||
			effects.Effects.Outputs[0]["owner"] != bob.ID || effects.Effects.Outputs[1]["owner"] != alice.ID {
			t.Errorf("a transfer of 2.5 from holdings of 10, 0.5 and 0.25 should spend all three and pay bob then the change: %s", raw)
		}
		hash1 := p1.str(t, "preparedTransactionHash")
		sig1, _ := base64.StdEncoding.DecodeString(hash1)
		c.check("POST", sendExec, a.do("POST", sendExec, map[string]string{"preparedTransactionHash": hash1, "signature": carol.SignBase64(sig1)}, bearer(alice.tok)))
		c.check("POST", sendExec, a.do("POST", sendExec, map[string]string{"preparedTransactionHash": hash1, "signature": alice.SignBase64(sig1)}, bearer(bob.tok)))
		tapHash := a.do("POST", tapPrep, map[string]string{"instrument": "CC", "amount": "1"}, bearer(alice.tok)).ok(t).str(t, "preparedTransactionHash")
		tapRaw, _ := base64.StdEncoding.DecodeString(tapHash)
		c.check("POST", sendExec, a.do("POST", sendExec, map[string]string{"preparedTransactionHash": tapHash, "signature": alice.SignBase64(tapRaw)}, bearer(alice.tok)))
		for range 2 {
			exec(sendExec, p1, alice, alice.tok).ok(t)
		}
		exec(sendExec, p2, alice, alice.tok).wantProblem(t, http.StatusConflict, store.CodeStale)

		// Transfers refused at prepare.
		for _, tc := range []struct {
			body   any
			status int
		}{
			{map[string]string{"receiver": bob.ID, "amount": "0"}, http.StatusBadRequest},
			{map[string]string{"receiver": bob.ID, "amount": "1.00000000001"}, http.StatusBadRequest},
			{`{"receiver": "bob", "amount": 1}`, http.StatusBadRequest},
			{map[string]string{"receiver": ghostParty, "amount": "1"}, http.StatusNotFound},
			{map[string]string{"sender": bob.ID, "receiver": carol.ID, "amount": "1"}, http.StatusForbidden},
			{map[string]string{"receiver": bob.ID, "amount": "1000"}, http.StatusConflict},
			{`{"receiver": "` + strings.Repeat("b", maxBody) + `"}`, http.StatusRequestEntityTooLarge},
		} {
			r := a.do("POST", sendPrep, tc.body, bearer(alice.tok))
			c.check("POST", sendPrep, r)
			if r.status != tc.status {
				t.Errorf("cc-transfer prepare answered %d, want %d: %s", r.status, tc.status, r.body)
			}
		}
		c.check("POST", sendPrep, a.do("POST", sendPrep, "<x/>", bearer(alice.tok), withHeader("Content-Type", "text/xml")))
		cookie := a.signIn(alice.Party).sessionCookie()
		c.check("POST", sendPrep, a.do("POST", sendPrep, send, withCookie(cookie), withHeader("Origin", "https://evil.example")))

		// A second rewarded transfer, so the history has two pages of one.
		a.clock.Advance(time.Second)
		a.walletSend(alice, bob.ID, "1")
		for _, tmpl := range []string{balance, utxoCount, rewards} {
			c.check("GET", tmpl, a.do("GET", at(tmpl, alice.ID), nil, bearer(alice.tok)).ok(t))
		}
		first := a.do("GET", at(history, alice.ID)+"?limit=1", nil, bearer(alice.tok))
		c.check("GET", history, first)
		next, ok := first.ok(t).obj(t)["cursor"].(string)
		if !ok {
			t.Fatalf("two rewards in pages of one: the first page has no cursor: %s", first.body)
		}
		last := a.do("GET", at(history, alice.ID)+"?limit=1&cursor="+url.QueryEscape(next), nil, bearer(alice.tok))
		c.check("GET", history, last)
		if last.ok(t).obj(t)["cursor"] != nil {
			t.Errorf("the last page has a cursor: %s", last.body)
		}
		for _, q := range []string{"?limit=0", "?cursor=bogus"} {
			c.check("GET", history, a.do("GET", at(history, alice.ID)+q, nil, bearer(alice.tok)))
		}

		// Preapprovals: both kinds, a replacement, a renewal that makes the replacement stale.
		for _, pe := range [][2]string{{nftPrep, nftExec}, {usdcxPrep, usdcxExec}} {
			prep := a.do("POST", pe[0], nil, bearer(bob.tok))
			c.checkPrepared("POST", pe[0], prep)
			exec(pe[1], prep, bob, bob.tok).ok(t)
			c.check("POST", pe[0], a.do("POST", pe[0], map[string]string{"kind": "nft"}, bearer(bob.tok)))
		}
		replacing := a.do("POST", usdcxPrep, map[string]string{}, bearer(bob.tok))
		c.checkPrepared("POST", usdcxPrep, replacing)
		if !strings.Contains(replacing.obj(t)["summary"].(map[string]any)["action"].(string), "USDCx") {
			t.Errorf("usdcx preapproval summary: %s", replacing.body)
		}
		a.clock.Advance(time.Minute)
		c.check("POST", renew, a.do("POST", renew, map[string]string{"kind": "usdcx"}, bearer(bob.tok)).ok(t))
		exec(usdcxExec, replacing, bob, bob.tok).wantProblem(t, http.StatusConflict, store.CodeStale)
		c.check("POST", renew, a.do("POST", renew, map[string]string{"kind": "nft"}, bearer(carol.tok)))
		c.check("POST", renew, a.do("POST", renew, `{"kind": "NFT"}`, bearer(bob.tok)))
		c.check("POST", renew, a.do("POST", renew, map[string]string{"kind": "nft"}))
		// The signed renewal: prepared, executed (and replayed), refused without the signature,
		// 404 with nothing to renew.
		renewal := a.do("POST", renewPrep, map[string]string{"kind": "usdcx"}, bearer(bob.tok))
		c.checkPrepared("POST", renewPrep, renewal)
		exec(renewExec, renewal, carol, bob.tok).wantProblem(t, http.StatusUnauthorized, store.CodeInvalidSignature)
		for range 2 {
			exec(renewExec, renewal, bob, bob.tok).ok(t)
		}
		c.check("POST", renewPrep, a.do("POST", renewPrep, map[string]string{"kind": "nft"}, bearer(carol.tok)))
		c.check("POST", renewPrep, a.do("POST", renewPrep, `{"kind": "NFT"}`, bearer(bob.tok)))
		c.check("GET", preapprovals, a.do("GET", at(preapprovals, bob.ID), nil, bearer(bob.tok)).ok(t))

		// 410 once a prepared transfer's lifetime is over.
		late := a.do("POST", sendPrep, map[string]string{"receiver": carol.ID, "amount": "1"}, bearer(alice.tok))
		c.checkPrepared("POST", sendPrep, late)
		a.clock.Advance(10 * time.Minute)
		exec(sendExec, late, alice, alice.tok).wantProblem(t, http.StatusGone, store.CodePreparedExpired)

		// 429 over the read and the prepare limits.
		limited := newTestAPI(t, b, withRates(1, 1))
		dave := limited.walletUser("dave")
		for range 2 {
			c.check("GET", balance, limited.do("GET", at(balance, dave.ID), nil, bearer(dave.tok)))
			c.check("POST", tapPrep, limited.do("POST", tapPrep, map[string]string{"instrument": "CC", "amount": "1"}, bearer(dave.tok)))
		}

		// Outside dev mode the tap does not exist.
		prod := newTestAPI(t, b, func(sc *store.Config, rc *Config) { rc.Dev = false })
		erin := prod.walletUser("erin")
		for _, path := range []string{tapPrep, tapExec} {
			r := prod.do("POST", path, map[string]string{"instrument": "CC", "amount": "1"}, bearer(erin.tok))
			c.check("POST", path, r)
			r.wantProblem(t, http.StatusNotFound, store.CodeNotFound)
		}
	})
}
