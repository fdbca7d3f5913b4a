package store

import "testing"

func TestNFTFilterKey_TellsApartFiltersTheFingerprintRunsTogether(t *testing.T) {
	pairs := [][2]NFTFilter{
		{{Traits: map[string][]string{"Hat": {"a|b"}}}, {Traits: map[string][]string{"Hat": {"a", "b"}}}},
		{{Traits: map[string][]string{"A": {"x;B=y"}}}, {Traits: map[string][]string{"A": {"x"}, "B": {"y"}}}},
		{{MinPrice: "1;max=2"}, {MinPrice: "1", MaxPrice: "2"}},
		{{}, {Listed: true}},
	}
	for _, p := range pairs {
		if p[0].key() == p[1].key() {
			t.Errorf("%+v and %+v share the page cache key %q", p[0], p[1], p[0].key())
		}
	}
}
