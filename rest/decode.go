package rest

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"marketd/store"
)

// maxBody caps every request body, as every front door does.
const maxBody = store.MaxRequestBody

// partyFields are the body fields that name a party; an authenticated request that names a
// party other than its token's is refused before anything else happens.
type partyFields struct {
	PartyID *string `json:"partyId"`
	Sender  *string `json:"sender"`
	Owner   *string `json:"owner"`
	Taker   *string `json:"taker"`
	LP      *string `json:"lp"`
}

// readBody reads the whole request body, at most maxBody bytes, and puts it back so the
// handler can read it again.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, store.Errorf(store.CodePayloadTooLarge, "the body is larger than %d bytes", maxBody)
	}
	if err != nil {
		return nil, store.Errorf(store.CodeInvalidRequest, "the body could not be read")
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}

// checkBodyParties refuses an authenticated request whose JSON body names a party other than
// the token's, before anything else happens to it.
func checkBodyParties(w http.ResponseWriter, r *http.Request, a *store.Auth) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	var pf partyFields
	if json.Unmarshal(body, &pf) != nil {
		return nil // not a JSON object: decode says what is wrong with it
	}
	named := []struct {
		field string
		v     *string
	}{{"partyId", pf.PartyID}, {"sender", pf.Sender}, {"owner", pf.Owner}, {"taker", pf.Taker}, {"lp", pf.LP}}
	for _, n := range named {
		if n.v != nil && *n.v != a.PartyID {
			return store.Errorf(store.CodePartyMismatch, "%s names %s, the token is for %s", n.field, truncate(*n.v, 100), a.PartyID)
		}
	}
	return nil
}

// decode reads the JSON body into dst strictly: one object, no unknown fields, no trailing
// data, at most maxBody bytes. An empty body reads as {}.
func decode(w http.ResponseWriter, r *http.Request, dst any) error {
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	} else if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return store.Errorf(store.CodeUnsupportedMediaType, "send the body as Content-Type: application/json")
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return store.Errorf(store.CodeInvalidRequest, "%s", jsonProblem(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return store.Errorf(store.CodeInvalidRequest, "the body must be a single JSON object")
	}
	return nil
}

// jsonProblem says what is wrong with a body in words a client developer can act on.
func jsonProblem(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("malformed JSON at byte %d", syntax.Offset)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return fmt.Sprintf("the body must be a JSON object, not %s", typ.Value)
		}
		return fmt.Sprintf("field %q must be %s, not %s", typ.Field, jsonKind(typ.Type.String()), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "the JSON body ends too early"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	}
	return "the body is not valid JSON for this endpoint"
}

func jsonKind(goType string) string {
	switch {
	case goType == "string":
		return "a string"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"):
		return "an integer"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case goType == "bool":
		return "a boolean"
	}
	return "an object"
}

// required returns invalid_request naming the first empty field.
func required(fields ...string) error {
	for i := 0; i+1 < len(fields); i += 2 {
		if fields[i+1] == "" {
			return store.Errorf(store.CodeInvalidRequest, "%s is required", fields[i])
		}
	}
	return nil
}

// decodeBase64 reads a standard, padded base64 field of exactly n bytes (any length if n is 0).
func decodeBase64(field, s string, n int) ([]byte, error) {
	if s == "" {
		return nil, store.Errorf(store.CodeInvalidRequest, "%s is required", field)
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, store.Errorf(store.CodeInvalidRequest, "%s must be standard base64 with padding", field)
	}
	if n > 0 && len(b) != n {
		return nil, store.Errorf(store.CodeInvalidRequest, "%s must be %d bytes, got %d", field, n, len(b))
	}
	return b, nil
}

// decodeSignature reads an Ed25519 signature: standard base64, or lowercase hex.
func decodeSignature(s string) ([]byte, error) {
	const size = 64
	if len(s) == 2*size && strings.Trim(s, "0123456789abcdef") == "" {
		b, _ := hex.DecodeString(s)
		return b, nil
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if s == "" || err != nil || len(b) != size {
		return nil, store.Errorf(store.CodeInvalidRequest, "signature must be the 64-byte Ed25519 signature as standard base64 or lowercase hex")
	}
	return b, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
