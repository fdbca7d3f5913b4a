// Package nftmeta holds an NFT's metadata: the scalar fields its creator gives each item of a
// collection, fixed when the NFT is minted.
//
// Fields is written once and every copy of an NFT carries it whole: the creator's items file
// (store.ItemSpec embeds it, so its fields are the file's keys), the collection's unminted
// items and the NFT read model (one JSON object, the meta column of collection_items and
// nft_items, keyed by the same names), the NFT index's entries (store/internal/nftindex), and
// the view both doors show (store.NFTView embeds it: GraphQL binds the schema's NFT fields to
// its fields by name, and REST's page writer is generated from it, rest/nftmeta_gen.go). So a
// new scalar field of an NFT is a field here, the GraphQL schema and openapi.yaml; `go
// generate ./...` writes the rest, and no migration is needed: a row written before the field
// lacks its key and reads as the field's zero value.
//
// Each field's tags: json (its name in the items file, the stored object and REST's NFT; never
// renamed, as stored rows and clients both hold it) and, for text, limit (the most bytes it may
// hold, and ",required" when it must not be blank). The package imports nothing of the server.
package nftmeta

import (
	"reflect"
	"strconv"
	"strings"
)

// Fields are an NFT's scalar metadata.
type Fields struct {
	Name  string `json:"name" limit:"200,required"`
	Image string `json:"image" limit:"1000"`
}

// Text is one text field of Fields and its limit, as Texts lists them.
type Text struct {
	JSON     string // the field's json name
	Value    string
	Max      int  // in bytes
	Required bool // it must not be blank
}

// Texts lists f's text fields with their limits, in the struct's order.
func (f *Fields) Texts() []Text {
	v := reflect.ValueOf(f).Elem()
	out := make([]Text, 0, len(textLimits))
	for _, l := range textLimits {
		t := l
		t.Value = v.Field(l.index).String()
		out = append(out, t.Text)
	}
	return out
}

type textLimit struct {
	Text
	index int
}

// textLimits are the limit tags of Fields, read once.
var textLimits = func() []textLimit {
	t := reflect.TypeFor[Fields]()
	var out []textLimit
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		tag, ok := f.Tag.Lookup("limit")
		if f.Type.Kind() != reflect.String {
			if ok {
				panic("nftmeta: field " + f.Name + " has a limit but is not text")
			}
			continue
		}
		if !ok {
			panic("nftmeta: text field " + f.Name + " needs a limit tag: its most bytes, and \",required\" when it must not be blank")
		}
		n, opt, _ := strings.Cut(tag, ",")
		max, err := strconv.Atoi(n)
		if err != nil || max < 1 || (opt != "" && opt != "required") {
			panic("nftmeta: field " + f.Name + ` has limit "` + tag + `": want a positive number of bytes, then ",required" if it must not be blank`)
		}
		out = append(out, textLimit{Text{JSON: name, Max: max, Required: opt == "required"}, i})
	}
	return out
}()
