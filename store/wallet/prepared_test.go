package wallet_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"marketd/store/wallet"
)

// TestDecodePrepared_EveryKindReadsBackItsOwnEncoding: for every prepared kind, the envelope
// of its effects (empty ones) written as prepare writes it is read back into the kind's own
// effects type, and the same bytes with another scheme or an unknown kind are refused.
func TestDecodePrepared_EveryKindReadsBackItsOwnEncoding(t *testing.T) {
	kinds := wallet.PreparedKinds()
	if len(kinds) == 0 {
		t.Fatal("no prepared kinds")
	}
	for _, kind := range kinds {
		effects, ok := wallet.NewEffects(kind)
		if !ok || effects == nil || reflect.TypeOf(effects).Kind() != reflect.Pointer {
			t.Fatalf("%s: NewEffects = %T, %v", kind, effects, ok)
		}
		raw, err := json.Marshal(effects)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(wallet.Envelope{Scheme: wallet.HashingScheme, Network: "devnet", Kind: kind, ActAs: "alice",
			Nonce: "00112233445566778899aabbccddeeff", PreparedAt: 1_800_000_000, ExpiresAt: 1_800_000_300, Effects: raw})
		if err != nil {
			t.Fatal(err)
		}
		d, err := wallet.DecodePrepared(b)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if d.Kind != kind || d.ActAs != "alice" || reflect.TypeOf(d.Effects) != reflect.TypeOf(effects) {
			t.Fatalf("%s: decoded %+v", kind, d)
		}
		for _, bad := range []string{
			strings.Replace(string(b), wallet.HashingScheme, "sha1", 1),
			strings.Replace(string(b), `"kind":"`+kind+`"`, `"kind":"wallet.steal"`, 1),
		} {
			if d, err := wallet.DecodePrepared([]byte(bad)); err == nil {
				t.Fatalf("%s: accepted %s as %+v", kind, bad, d)
			}
		}
	}
	if _, ok := wallet.NewEffects("wallet.steal"); ok {
		t.Fatal("NewEffects of an unknown kind")
	}
}
