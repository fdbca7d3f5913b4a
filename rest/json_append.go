package rest

import (
	"strconv"
	"unicode/utf8"
)

// The page of NFTs is the read dApps send most, and encoding/json's reflection was a fifth of
// its cost: its items are written by hand (nftView.appendJSON), byte for byte as encodeJSON
// writes them (HTML characters left as they are). TestNFTView_AppendJSONIsEncodeJSONs holds
// the two equal, over random and hostile text. The NFT's metadata (store/nftmeta.Fields) is
// written by appendNFTMeta, which `go generate` writes from the struct (nftmeta_gen.go).
//
//go:generate go run ./internal/nftmetagen

// appendJSON appends v as encodeJSON writes it.
func (v *nftView) appendJSON(b []byte) []byte {
	b = append(b, `{"contractId":`...)
	b = appendJSONString(b, v.ContractID)
	b = append(b, `,"collectionId":`...)
	b = appendJSONString(b, v.CollectionID)
	b = append(b, `,"serial":`...)
	b = strconv.AppendInt(b, int64(v.Serial), 10)
	b = appendNFTMeta(b, &v.Fields)
	b = append(b, `,"traits":`...)
	if v.Traits == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, t := range v.Traits {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":`...)
			b = appendJSONString(b, t.Type)
			b = append(b, `,"value":`...)
			b = appendJSONString(b, t.Value)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"owner":`...)
	b = appendJSONString(b, v.Owner)
	b = append(b, `,"listing":`...)
	if l := v.Listing; l == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"cid":`...)
		b = appendJSONString(b, l.CID)
		b = append(b, `,"seller":`...)
		b = appendJSONString(b, l.Seller)
		b = append(b, `,"price":"`...)
		b = append(l.Price.AppendText(b), `","currency":`...)
		b = appendJSONString(b, string(l.Currency))
		b = append(b, `,"expiresAt":`...)
		if l.ExpiresAt == nil {
			b = append(b, "null"...)
		} else {
			b = strconv.AppendInt(b, *l.ExpiresAt, 10)
		}
		b = append(b, '}')
	}
	b = append(b, `,"bestOffer":`...)
	if o := v.BestOffer; o == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"cid":`...)
		b = appendJSONString(b, o.CID)
		b = append(b, `,"price":"`...)
		b = append(o.Price.AppendText(b), `","kind":`...)
		b = appendJSONString(b, o.Kind)
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string as encodeJSON writes it: '"' and '\\' escaped,
// control characters as \b, \f, \n, \r, \t or \u00XX, invalid UTF-8 as \ufffd, U+2028 and
// U+2029 as \u2028 and \u2029 (JavaScript reads them as line ends); '<', '>' and '&' as they are.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
