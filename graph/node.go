package graph

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"

	"marketd/store"
)

// Node is an object with a global id: a *store.Collection, *store.NFTView, *store.Pool,
// *store.LPQuote, *store.IntentView or *store.Offer.
type Node any

// maxNodes is how many ids one nodes(ids:) may ask for, as many as a page holds.
const maxNodes = store.MaxPageSize

// The types a global id names, as the schema spells them.
const (
	nodeCollection = "Collection"
	nodeNFT        = "NFT"
	nodePool       = "Pool"
	nodeLPQuote    = "LPQuote"
	nodeIntent     = "Intent"
	nodeOffer      = "Offer"
)

// globalID is the id of the object of type typ that key names: unpadded URL-safe base64 of
// "typ:key". The key is what names the object for its whole life: a collection's id, an NFT's
// collection and serial (REST's "col_...#7", not its contract, which changes on every trade),
// a pool's id, an LP quote's, an intent's and an offer's cid.
func globalID(typ, key string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(typ + ":" + key))
}

func nftKey(ref store.NFTRef) string { return ref.CollectionID + "#" + strconv.Itoa(ref.Serial) }

// MarshalNFTGlobalID writes an NFT's global id from its Ref, which gqlgen calls in line: a page
// of NFTs runs no resolver (and no goroutine) for their ids.
func MarshalNFTGlobalID(ref store.NFTRef) graphql.Marshaler {
	return graphql.MarshalString(globalID(nodeNFT, nftKey(ref)))
}

// UnmarshalNFTGlobalID reads an NFT's global id (gqlgen wants the pair; no argument takes one).
func UnmarshalNFTGlobalID(v any) (store.NFTRef, error) {
	if id, ok := v.(string); ok {
		if typ, key, ok := parseGlobalID(id); ok && typ == nodeNFT {
			ref, _ := parseNFTKey(key)
			return ref, nil
		}
	}
	return store.NFTRef{}, store.Errorf(store.CodeInvalidRequest, "not an NFT's id")
}

// parseGlobalID reads an id globalID made; false for anything else, including another spelling
// of the same bytes (padding, the standard alphabet), so one object has exactly one id.
func parseGlobalID(id string) (typ, key string, ok bool) {
	raw, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil || base64.RawURLEncoding.EncodeToString(raw) != id {
		return "", "", false
	}
	typ, key, ok = strings.Cut(string(raw), ":")
	switch {
	case !ok || key == "":
		return "", "", false
	case typ == nodeCollection, typ == nodePool, typ == nodeLPQuote, typ == nodeIntent, typ == nodeOffer:
		return typ, key, true
	case typ == nodeNFT:
		_, ok := parseNFTKey(key)
		return typ, key, ok
	}
	return "", "", false
}

func parseNFTKey(key string) (store.NFTRef, bool) {
	i := strings.LastIndexByte(key, '#')
	if i <= 0 {
		return store.NFTRef{}, false
	}
	serial, err := strconv.Atoi(key[i+1:])
	if err != nil || serial < 1 || strconv.Itoa(serial) != key[i+1:] {
		return store.NFTRef{}, false
	}
	return store.NFTRef{CollectionID: key[:i], Serial: serial}, true
}

// node reads the object a global id names. An id it cannot read, or whose object is gone,
// is nil without an error: Relay's clients treat a node they cannot refetch as deleted.
func (r *queryResolver) node(ctx context.Context, id string) (Node, error) {
	typ, key, ok := parseGlobalID(id)
	if !ok {
		return nil, nil
	}
	var n Node
	var err error
	switch typ {
	case nodeCollection:
		n, err = nonNil(r.store.CollectionByID(ctx, key))
	case nodeNFT:
		ref, _ := parseNFTKey(key)
		n, err = nonNil(r.store.NFTByRef(ctx, ref))
	case nodePool:
		n, err = nonNil(r.store.PoolByID(ctx, key))
	case nodeLPQuote:
		n, err = nonNil(r.store.LPQuoteByID(ctx, key))
	case nodeOffer:
		n, err = nonNil(r.store.OfferByID(ctx, key))
	case nodeIntent:
		// An intent is its taker's, as in intents(taker:): the token must be the taker's.
		taker, terr := callerParty(ctx)
		if terr != nil {
			return nil, terr
		}
		n, err = nonNil(r.store.IntentStatus(ctx, taker, key))
		if store.ErrorCode(err) == store.CodePartyMismatch {
			return nil, nil
		}
	}
	if store.ErrorCode(err) == store.CodeNotFound {
		return nil, nil
	}
	return n, err
}

// nonNil turns a store read into a Node, nil (not a typed nil pointer) on an error.
func nonNil[T any](v *T, err error) (Node, error) {
	if err != nil || v == nil {
		return nil, err
	}
	return v, nil
}

// collectionByAnyID reads a collection by its collectionId or by its global id.
func (r *queryResolver) collectionByAnyID(ctx context.Context, id string) (*store.Collection, error) {
	if typ, key, ok := parseGlobalID(id); ok {
		if typ != nodeCollection {
			return nil, store.Errorf(store.CodeNotFound, "%s names a %s, not a collection", id, typ)
		}
		id = key
	}
	return r.store.CollectionByID(ctx, id)
}
