package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/nftmeta"
)

// hostileTexts are strings that exercise every escape encoding/json makes: quotes,
// backslashes, control characters, HTML characters, invalid UTF-8, U+2028/U+2029, others
// beyond ASCII.
var hostileTexts = []string{"", "Ape #1", `say "hi"`, `back\slash`, "tab\tnew\nline\rret\bbs\fff", "\x00\x01\x1f\x7f",
	"<script>&amp;</script>", "\xff\xfe bad", "a\xc3", "line\u2028sep\u2029para", "héllo wörld ✓ 🦍", "\u00a0\ufeff", "x\"\\\u2028\xc0\x80"}

// randomText is a hostile text, or a random mix of their pieces and random bytes.
func randomText(rng *mrand.Rand) string {
	if rng.IntN(2) == 0 {
		return hostileTexts[rng.IntN(len(hostileTexts))]
	}
	b := make([]byte, rng.IntN(40))
	for i := range b {
		b[i] = byte(rng.IntN(256))
	}
	return string(b) + hostileTexts[rng.IntN(len(hostileTexts))]
}

// TestNFTView_AppendJSONIsEncodeJSONs holds the hand-written page of NFTs equal, byte for byte,
// to what encodeJSON writes of the same page: every field, null and empty, hostile text.
func TestNFTView_AppendJSONIsEncodeJSONs(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(7, 11))
	amounts := []string{"0", "1", "12.5", "0.000001", "123456789.123456789", "99999999999999999999.5"}
	for round := range 500 {
		var page store.Page[store.NFTView]
		for range rng.IntN(4) {
			n := store.NFTView{ContractID: randomText(rng), CollectionID: randomText(rng), Serial: rng.IntN(1 << 30), Fields: randomMeta(rng),
				Owner: randomText(rng)}
			switch rng.IntN(3) {
			case 0: // nil traits
			case 1:
				n.Traits = []store.Trait{}
			default:
				for range 1 + rng.IntN(3) {
					n.Traits = append(n.Traits, store.Trait{Type: randomText(rng), Value: randomText(rng)})
				}
			}
			if rng.IntN(2) == 0 {
				n.Listing = &store.ListingView{CID: randomText(rng), Seller: randomText(rng), Price: store.MustAmount(amounts[rng.IntN(len(amounts))]),
					Currency: store.Instrument(randomText(rng))}
				if rng.IntN(2) == 0 {
					n.Listing.ExpiresAt = &store.Timestamp{Time: time.Unix(rng.Int64N(1<<34), 0)}
				}
			}
			if rng.IntN(2) == 0 {
				n.BestOffer = &store.BestOffer{CID: randomText(rng), Price: store.MustAmount(amounts[rng.IntN(len(amounts))]), Kind: randomText(rng)}
			}
			page.Items = append(page.Items, n)
		}
		if rng.IntN(2) == 0 {
			page.Cursor = randomText(rng)
		}
		var want bytes.Buffer
		if err := encodeJSON(&want, listOf(page, viewNFT)); err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		if err := writeSharedList(rec, page, func(b []byte, n store.NFTView) []byte {
			v := viewNFT(n)
			return v.appendJSON(b)
		}); err != nil {
			t.Fatal(err)
		}
		if got := rec.Body.String(); got != want.String() {
			t.Fatalf("round %d: the page written by hand\n%q\nencodeJSON writes\n%q", round, got, want.String())
		}
	}
}

// FuzzAppendJSONString holds appendJSONString equal to encodeJSON's string for any bytes.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range hostileTexts {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want bytes.Buffer
		if err := encodeJSON(&want, s); err != nil {
			t.Fatal(err)
		}
		if got := string(appendJSONString(nil, s)) + "\n"; got != want.String() {
			t.Fatalf("appendJSONString(%q) = %s, encodeJSON writes %s", s, got, want.String())
		}
		var back string
		if err := json.Unmarshal(want.Bytes(), &back); err != nil {
			t.Fatal(fmt.Errorf("%q: %w", want.String(), err))
		}
	})
}

// randomMeta fills every field of an NFT's metadata, whatever fields it has: text with
// randomText, numbers and flags at random, pointers nil or set.
func randomMeta(rng *mrand.Rand) nftmeta.Fields {
	var f nftmeta.Fields
	v := reflect.ValueOf(&f).Elem()
	for i := range v.NumField() {
		fv := v.Field(i)
		if fv.Kind() == reflect.Pointer {
			if rng.IntN(3) == 0 {
				continue
			}
			fv.Set(reflect.New(fv.Type().Elem()))
			fv = fv.Elem()
		}
		switch fv.Kind() {
		case reflect.String:
			fv.SetString(randomText(rng))
		case reflect.Bool:
			fv.SetBool(rng.IntN(2) == 0)
		case reflect.Int, reflect.Int32, reflect.Int64:
			fv.SetInt(rng.Int64N(1<<40) - 1<<39)
		default:
			panic("randomMeta: no random value for a field of kind " + fv.Kind().String())
		}
	}
	return f
}
