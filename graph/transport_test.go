package graph

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"marketd/store/storetest"
)

func TestWriteResponse_WritesWhatJSONMarshalWrites(t *testing.T) {
	yes := true
	for name, resp := range map[string]*graphql.Response{
		"data":                 {Data: json.RawMessage(`{"a":"b","n":[1,2.5,null,true]}`)},
		"no data":              {},
		"null data":            {Data: json.RawMessage(`null`)},
		"html in data":         {Data: json.RawMessage(`{"s":"<b>a & b</b>"}`)},
		"separators in data":   {Data: json.RawMessage("{\"s\":\"a\u2028b\u2029c\u2027d\u00e2\"}")},
		"a lone E2 at the end": {Data: json.RawMessage("{\"s\":\"\u20ac\"}")},
		"errors and data": {
			Errors: gqlerror.List{{Message: "no <such> thing", Path: ast.Path{ast.PathName("a"), ast.PathIndex(2)}, Extensions: map[string]any{"code": "not_found"}}},
			Data:   json.RawMessage(`{"a":null}`),
		},
		"every field": {
			Data: json.RawMessage(`{}`), Label: "l&", Path: ast.Path{ast.PathName("x")}, HasNext: &yes,
			Extensions: map[string]any{"b": 1, "a": "<"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			want, err := json.Marshal(resp)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			writeResponse(&got, resp)
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("wrote  %s\nwanted %s", got.Bytes(), want)
			}
		})
	}
}

// The transport answers every request, well formed or not, as gqlgen's POST transport does:
// the same status, media type and body.
func TestPostJSON_AnswersAsGqlgensPOSTTransport(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		g := newTestGraph(t, b, 20)
		serve := func(tr graphql.Transport) http.Handler {
			gql := handler.New(NewExecutableSchema(config(g.store)))
			gql.AddTransport(tr)
			gql.SetErrorPresenter(presentError(slog.New(slog.DiscardHandler)))
			return withCaller(nil, withLoaders(g.store, gql))
		}
		ours, theirs := serve(postJSON{}), serve(transport.POST{})
		page := `{"query":"query($id: ID!) { collection(id: $id) { name nfts(first: 3) { edges { node { contractId traits { type value } } } } } }","variables":{"id":"` + g.collectionID("ledger-apes") + `"}}`
		for _, c := range []struct{ name, body, accept string }{
			{"a page", page, ""},
			{"a page asked as graphql-response+json", page, "application/graphql-response+json"},
			{"a page asked with a wildcard", page, "text/html, */*"},
			{"a page asked as something else", page, "text/html"},
			{"a resolver error", `{"query":"{ collection(id: \"a\", slug: \"b\") { name } }"}`, ""},
			{"a body that is not JSON", `{"query":`, ""},
			{"a query that does not parse", `{"query":"{ collection("}`, ""},
			{"a query that does not parse, asked as graphql-response+json", `{"query":"{ collection("}`, "application/graphql-response+json"},
			{"a query that does not validate", `{"query":"{ nothing }"}`, ""},
		} {
			t.Run(c.name, func(t *testing.T) {
				answer := func(h http.Handler) *httptest.ResponseRecorder {
					r := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(c.body))
					r.Header.Set("Content-Type", "application/json")
					if c.accept != "" {
						r.Header.Set("Accept", c.accept)
					}
					w := httptest.NewRecorder()
					h.ServeHTTP(w, r)
					return w
				}
				got, want := answer(ours), answer(theirs)
				if got.Code != want.Code || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") || got.Body.String() != want.Body.String() {
					t.Errorf("answered %d %s %s\nwanted   %d %s %s", got.Code, got.Header().Get("Content-Type"), got.Body, want.Code, want.Header().Get("Content-Type"), want.Body)
				}
			})
		}
	})
}
