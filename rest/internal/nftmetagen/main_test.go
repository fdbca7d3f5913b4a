package main

import (
	"reflect"
	"strings"
	"testing"
)

func TestGenerate_WritesEachKindItKnowsAndRefusesTheRest(t *testing.T) {
	type known struct {
		S  string  `json:"s"`
		B  bool    `json:"b"`
		N  int     `json:"n"`
		P  *string `json:"p"`
		No string  `json:"-"`
	}
	src, err := generate(reflect.TypeFor[known]())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"`,\"s\":`", "appendJSONString(b, f.S)", "strconv.AppendBool(b, f.B)", "strconv.AppendInt(b, int64(f.N), 10)",
		"if f.P == nil", "appendJSONString(b, *f.P)"} {
		if !strings.Contains(string(src), want) {
			t.Errorf("generated code lacks %s:\n%s", want, src)
		}
	}
	if strings.Contains(string(src), "No") {
		t.Errorf("a field json skips was written:\n%s", src)
	}
	for name, typ := range map[string]reflect.Type{
		"float": reflect.TypeFor[struct {
			F float64 `json:"f"`
		}](),
		"omitempty": reflect.TypeFor[struct {
			S string `json:"s,omitempty"`
		}](),
		"untagged": reflect.TypeFor[struct{ S string }](),
		"named": reflect.TypeFor[struct {
			D reflect.Kind `json:"d"`
		}](),
	} {
		if _, err := generate(typ); err == nil {
			t.Errorf("%s: generated code for a field it has no writer for", name)
		}
	}
}
