package keyset

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestMAC_TagsAsHMAC holds the reused hashes' tags equal to a fresh HMAC-SHA-256's first
// 16 bytes, over bodies of every length a cursor has and, interleaved, from many goroutines.
func TestMAC_TagsAsHMAC(t *testing.T) {
	key := []byte("a cursor key of the service's own")
	m := NewMAC(key)
	rnd := rand.New(rand.NewPCG(3, 4))
	for n := range 300 {
		body := make([]byte, n)
		for i := range body {
			body[i] = byte(rnd.UintN(256))
		}
		fresh := hmacSHA256(key, body)[:16]
		if got := m.Tag(nil, body); !bytes.Equal(got, fresh) {
			t.Fatalf("tag of %d bytes = %x, HMAC = %x", n, got, fresh)
		}
		if got := m.Tag([]byte("x"), body); !bytes.Equal(got[1:], fresh) || got[0] != 'x' {
			t.Fatalf("tag appended to a prefix = %x", got)
		}
	}
}

// TestFinish_CursorsAreTheBodiesJSONWrites: each item's cursor is the JSON of cursorBody as
// encoding/json writes it (the list's name escaped as it escapes it), then its tag, and it
// reads back as the item's position.
func TestFinish_CursorsAreTheBodiesJSONWrites(t *testing.T) {
	mac := func() (*MAC, error) { return NewMAC([]byte("k")), nil }
	type key struct {
		Price string `json:"p"`
		Name  string `json:"n"`
		ID    int    `json:"i"`
	}
	rows := []key{{"1.5", "<a & b>", 1}, {"2", "\"q\"\u2028", 2}, {"3", "é😀", 3}}
	for _, list := range []string{"nfts c1 price", "a <list> & \"more\""} {
		q := &Query[key]{Limit: 2, List: list, ItemCursors: true}
		page, err := Finish(q, rows, func(k key) key { return k }, mac)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range append(page.ItemCursors, page.Cursor) {
			item := rows[min(i, 1)]
			k, _ := json.Marshal(item)
			body, _ := json.Marshal(cursorBody{List: list, Key: k})
			want := base64.RawURLEncoding.EncodeToString(body) + "." + base64.RawURLEncoding.EncodeToString(hmacSHA256([]byte("k"), body)[:16])
			if c != want {
				t.Fatalf("cursor %d of list %q = %s, want %s", i, list, c, want)
			}
			if !strings.Contains(c, ".") {
				t.Fatalf("cursor %q has no tag", c)
			}
		}
	}
}

func hmacSHA256(key, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return m.Sum(nil)
}
