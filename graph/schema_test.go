package graph

import (
	"io"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"marketd/store/nftmeta"
	"marketd/store/storetest"
)

const introspectionQuery = `{ __schema {
  description
  types {
    kind name description
    fields(includeDeprecated: true) { name description type { ...ref } args { name description } }
    inputFields { name description }
    enumValues(includeDeprecated: true) { name description }
    possibleTypes { name }
  }
} }
fragment ref on __Type { kind name ofType { kind name ofType { kind name ofType { kind name } } } }`

type typeRef struct {
	Kind, Name string
	OfType     *typeRef
}

// named is the type a reference names, through its non-null and list wrappers.
func (r *typeRef) named() string {
	for r.OfType != nil {
		r = r.OfType
	}
	return r.Name
}

type introspected struct {
	Schema struct {
		Description string
		Types       []struct {
			Kind, Name, Description string
			Fields                  []struct {
				Name, Description string
				Type              typeRef
				Args              []struct{ Name, Description string }
			}
			InputFields   []struct{ Name, Description string }
			EnumValues    []struct{ Name, Description string }
			PossibleTypes []struct{ Name string }
		}
	} `json:"__schema"`
}

// builtIn are the types every GraphQL schema has, described by the specification.
func builtIn(name string) bool {
	return strings.HasPrefix(name, "__") || slices.Contains([]string{"String", "Int", "Float", "Boolean", "ID"}, name)
}

func TestIntrospection_EveryTypeFieldArgumentAndEnumValueHasADescription(t *testing.T) {
	g := newTestGraph(t, storetest.Backends()[0], 0) // the schema is the same on every store
	var s introspected
	g.data(introspectionQuery, nil, &s)
	var missing []string
	need := func(what, desc string) {
		if strings.TrimSpace(desc) == "" {
			missing = append(missing, what)
		}
	}
	need("the schema", s.Schema.Description)
	types := 0
	for _, typ := range s.Schema.Types {
		if builtIn(typ.Name) {
			continue
		}
		types++
		need(typ.Name, typ.Description)
		for _, f := range typ.Fields {
			need(typ.Name+"."+f.Name, f.Description)
			for _, a := range f.Args {
				need(typ.Name+"."+f.Name+"("+a.Name+")", a.Description)
			}
		}
		for _, f := range typ.InputFields {
			need(typ.Name+"."+f.Name, f.Description)
		}
		for _, v := range typ.EnumValues {
			need(typ.Name+"."+v.Name, v.Description)
		}
	}
	if types < 40 {
		t.Fatalf("introspection shows %d types of ours; the query reads too little", types)
	}
	if len(missing) > 0 {
		t.Fatalf("%d without a description:\n%s", len(missing), strings.Join(missing, "\n"))
	}
}

func TestIntrospection_ClosedSetsAreEnumsAndNodeHasItsSixTypes(t *testing.T) {
	g := newTestGraph(t, storetest.Backends()[0], 0)
	var s introspected
	g.data(introspectionQuery, nil, &s)
	fieldType := map[string]string{}
	enums := map[string][]string{}
	var nodeTypes []string
	for _, typ := range s.Schema.Types {
		for _, f := range typ.Fields {
			fieldType[typ.Name+"."+f.Name] = f.Type.named()
		}
		for _, v := range typ.EnumValues {
			enums[typ.Name] = append(enums[typ.Name], v.Name)
		}
		if typ.Name == "Node" && typ.Kind == "INTERFACE" {
			for _, p := range typ.PossibleTypes {
				nodeTypes = append(nodeTypes, p.Name)
			}
		}
	}
	for field, want := range map[string]struct {
		enum   string
		values []string
	}{
		"NFTEvent.kind":           {"NFTEventKind", []string{"MINTED", "LISTED", "DELISTED", "SOLD", "TRANSFERRED", "BURNED", "OFFER_ACCEPTED", "OFFER_MADE", "OFFER_CANCELLED"}},
		"CollectionActivity.kind": {"NFTEventKind", []string{"MINTED", "LISTED", "DELISTED", "SOLD", "TRANSFERRED", "BURNED", "OFFER_ACCEPTED", "OFFER_MADE", "OFFER_CANCELLED"}},
		"BestOffer.kind":          {"OfferKind", []string{"ITEM", "COLLECTION", "TRAIT"}},
		"LPQuote.side":            {"LPQuoteSide", []string{"ASK", "BID"}},
		"Intent.status":           {"IntentStatus", []string{"PENDING", "FILLED", "CANCELLED", "EXPIRED"}},
		"Preapproval.kind":        {"PreapprovalKind", []string{"NFT", "USDCX"}},
		"RewardEntry.kind":        {"RewardKind", []string{"CC_TRANSFER"}},
	} {
		if fieldType[field] != want.enum || !slices.Equal(enums[want.enum], want.values) {
			t.Errorf("%s is %q with values %v; want the enum %s of %v", field, fieldType[field], enums[want.enum], want.enum, want.values)
		}
	}
	sort.Strings(nodeTypes)
	if want := []string{"Collection", "Intent", "LPQuote", "NFT", "Offer", "Pool"}; !slices.Equal(nodeTypes, want) {
		t.Errorf("Node's types: %v, want %v", nodeTypes, want)
	}
	if fieldType["Query.node"] != "Node" || fieldType["Query.nodes"] != "Node" {
		t.Errorf("Query.node is %q, Query.nodes %q", fieldType["Query.node"], fieldType["Query.nodes"])
	}
}

func TestSchemaSDL_ServesTheWholeSchemaWithItsDescriptions(t *testing.T) {
	g := newTestGraph(t, storetest.Backends()[0], 0)
	res, err := http.Get(g.http.URL + "/graphql/schema.graphql")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sdl, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("%d %s: %.200s", res.StatusCode, res.Header.Get("Content-Type"), sdl)
	}
	// A code generator reads it as one document: it parses and validates on its own.
	served, gerr := gqlparser.LoadSchema(&ast.Source{Name: "schema.graphql", Input: string(sdl)})
	if gerr != nil {
		t.Fatalf("the served SDL does not load: %v", gerr)
	}
	// It is the schema the endpoint runs, description for description.
	running := NewExecutableSchema(config(g.store)).Schema()
	if served.Description != running.Description || served.Query.Name != "Query" || served.Subscription == nil || served.Subscription.Name != "Subscription" {
		t.Fatalf("schema description or roots differ: %q / %v", served.Description, served.Subscription)
	}
	for name, want := range running.Types {
		if want.BuiltIn {
			continue
		}
		got := served.Types[name]
		if got == nil {
			t.Errorf("type %s is missing", name)
			continue
		}
		if got.Kind != want.Kind || got.Description != want.Description || len(got.Fields) != len(want.Fields) || len(got.EnumValues) != len(want.EnumValues) {
			t.Errorf("type %s differs", name)
			continue
		}
		for i, f := range want.Fields {
			if got.Fields[i].Name != f.Name || got.Fields[i].Description != f.Description || got.Fields[i].Type.String() != f.Type.String() || len(got.Fields[i].Arguments) != len(f.Arguments) {
				t.Errorf("field %s.%s differs", name, f.Name)
			}
		}
		for i, v := range want.EnumValues {
			if got.EnumValues[i].Name != v.Name || got.EnumValues[i].Description != v.Description {
				t.Errorf("enum value %s.%s differs", name, v.Name)
			}
		}
		if !slices.Equal(got.Interfaces, want.Interfaces) {
			t.Errorf("type %s implements %v, want %v", name, got.Interfaces, want.Interfaces)
		}
	}
	// What introspection gives is what the file says (GraphiQL and codegen agree).
	var s introspected
	g.data(introspectionQuery, nil, &s)
	if s.Schema.Description != served.Description {
		t.Fatal("introspection and the SDL give different schema descriptions")
	}
	// Like the page's assets, the file is no read of the store.
	if post, err := http.Post(g.http.URL+"/graphql/schema.graphql", "text/plain", nil); err != nil || post.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST of the schema: %v %v", post.StatusCode, err)
	}
}

// An NFT's metadata fields (store/nftmeta) are stored, kept in the index and written by REST
// whatever they are; the schema is where a dashboard learns of one, so each must be there.
func TestSchema_NFTShowsEveryMetadataField(t *testing.T) {
	nft := NewExecutableSchema(Config{}).Schema().Types["NFT"]
	ty := reflect.TypeFor[nftmeta.Fields]()
	for i := range ty.NumField() {
		name, _, _ := strings.Cut(ty.Field(i).Tag.Get("json"), ",")
		if nft.Fields.ForName(name) == nil {
			t.Errorf("type NFT has no field %s: add it to schema.graphqls (store/nftmeta.Fields has %s)", name, ty.Field(i).Name)
		}
	}
}
