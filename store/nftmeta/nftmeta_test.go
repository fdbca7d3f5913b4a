package nftmeta

import (
	"reflect"
	"testing"
)

func TestTexts_ListsEveryTextFieldWithItsLimit(t *testing.T) {
	f := Fields{Name: "Ape #1", Image: "https://img.example/1.png"}
	got := f.Texts()
	want := []Text{{JSON: "name", Value: "Ape #1", Max: 200, Required: true}, {JSON: "image", Value: "https://img.example/1.png", Max: 1000}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Texts() = %+v, want %+v", got, want)
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
