package nftmeta

import (
	"reflect"
	"testing"
)

func TestTexts_ListsEveryTextFieldWithItsLimit(t *testing.T) {
	f := Fields{Name: "Ape #1", Image: "https://img.example/1.png"}
	got := map[string]Text{}
	for _, x := range f.Texts() {
		got[x.JSON] = x
	}
	texts := 0
	for i := range reflect.TypeFor[Fields]().NumField() {
		if reflect.TypeFor[Fields]().Field(i).Type.Kind() == reflect.String {
			texts++
		}
	}
	if len(got) != texts {
		t.Errorf("Texts() lists %d fields, Fields has %d of text", len(got), texts)
	}
	for _, want := range []Text{{JSON: "name", Value: "Ape #1", Max: 200, Required: true}, {JSON: "image", Value: "https://img.example/1.png", Max: 1000}} {
		if got[want.JSON] != want {
			t.Errorf("Texts()'s %s = %+v, want %+v", want.JSON, got[want.JSON], want)
		}
	}
}

// Every field is named for JSON, the stored object's key and both doors' name: a field
// without one would be stored and shown under its Go name.
func TestFields_EveryFieldHasAJSONName(t *testing.T) {
	ty := reflect.TypeFor[Fields]()
	for i := range ty.NumField() {
		if f := ty.Field(i); f.Tag.Get("json") == "" {
			t.Errorf("field %s has no json tag", f.Name)
		}
	}
}
