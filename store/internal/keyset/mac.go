package keyset

import (
	"crypto/hmac"
	"crypto/sha256"
	"hash"
	"sync"
)

// MAC is HMAC-SHA-256 under one key, its keyed hashes reused: a page of a connection tags a
// cursor for every item.
type MAC struct{ hashes sync.Pool }

// NewMAC returns the MAC under key.
func NewMAC(key []byte) *MAC {
	m := &MAC{}
	m.hashes.New = func() any { return hmac.New(sha256.New, key) }
	return m
}

// Tag appends to dst the first 16 bytes of body's MAC: what a cursor carries.
func (m *MAC) Tag(dst, body []byte) []byte {
	h := m.hashes.Get().(hash.Hash)
	h.Reset()
	h.Write(body)
	var sum [sha256.Size]byte
	dst = append(dst, h.Sum(sum[:0])[:16]...)
	m.hashes.Put(h)
	return dst
}
