package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"

	"marketd/store"
)

// problem is an RFC 9457 problem details body with the service's error code.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Code   string `json:"code"`
	// RequestID is the response's X-Request-Id, to quote when reporting the problem.
	RequestID string `json:"requestId,omitempty"`
}

// statusOf maps an error code to its HTTP status: the one place the REST API does so.
func statusOf(code store.Code) int {
	switch code {
	case store.CodeInvalidRequest, store.CodeInvalidCursor:
		return http.StatusBadRequest
	case store.CodeUnauthenticated, store.CodeInvalidToken, store.CodeTokenRotated, store.CodeTokenRevoked,
		store.CodeNonceInvalid, store.CodeInvalidSignature:
		return http.StatusUnauthorized
	case store.CodePartyMismatch, store.CodeCrossOrigin, store.CodeNotAllowlisted:
		return http.StatusForbidden
	case store.CodeNotFound, store.CodePartyNotFound, store.CodePreparedNotFound:
		return http.StatusNotFound
	case store.CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case store.CodeStale, store.CodeConflict, store.CodeInsufficientFunds, store.CodePreapprovalRequired,
		store.CodeCrossesListing, store.CodeCrossesOffer, store.CodeOfferMismatch, store.CodeOfferExhausted:
		return http.StatusConflict
	case store.CodePreparedExpired:
		return http.StatusGone
	case store.CodePayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case store.CodeUnsupportedMediaType:
		return http.StatusUnsupportedMediaType
	case store.CodeNotAcceptable:
		return http.StatusNotAcceptable
	case store.CodeRateLimited, store.CodeTooManySubscriptions, store.CodeTooManySockets:
		return http.StatusTooManyRequests
	case store.CodeUnavailable, store.CodeOutcomeUnknown:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// retryUnavailable is the Retry-After of a 503, in seconds: an instance notices a database
// that came back within a second.
const retryUnavailable = "1"

// writeError answers err as problem+json. Internal errors are logged with the request id and
// answered without detail: no stack, no SQL.
func (srv *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := store.ErrorCode(err)
	status := statusOf(code)
	if store.DatabaseFault(err) {
		srv.metrics.DatabaseFault(code)
	}
	// A refusal for a busy pool is counted, not logged: under a burst a line each would add
	// to the load it sheds.
	if code == store.CodeInternal || (code == store.CodeUnavailable || code == store.CodeOutcomeUnknown) && !store.Overloaded(err) {
		srv.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "error", err.Error())
	}
	switch status {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="marketd"`)
	case http.StatusServiceUnavailable:
		// A dependency is down or the instance is shutting down: worth trying again soon.
		w.Header().Set("Retry-After", retryUnavailable)
	}
	var members map[string]any
	if se := (*store.Error)(nil); errors.As(err, &se) {
		members = se.Members
	}
	writeProblem(w, status, code, store.ErrorMessage(err), members)
}

// writeProblem answers a problem+json body; members, when the error names any (a crossed
// order's "crossing"), follow the standard ones.
func writeProblem(w http.ResponseWriter, status int, code store.Code, detail string, members ...map[string]any) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(problem{
		Type:   code.ProblemType(),
		Title:  http.StatusText(status),
		Status: status,
		Detail: detail,
		Code:   string(code),
		// withRequestLog set the header before any handler ran.
		RequestID: w.Header().Get("X-Request-Id"),
	})
	// The members go before the body's closing brace.
	body := bytes.TrimSuffix(buf.Bytes(), []byte("}\n"))
	for _, m := range members {
		for _, name := range slices.Sorted(maps.Keys(m)) {
			v, err := json.Marshal(m[name])
			if err != nil {
				continue
			}
			key, _ := json.Marshal(name)
			body = append(append(append(append(body, ','), key...), ':'), v...)
		}
	}
	w.Write(append(body, "}\n"...))
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	buf := responseBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledResponse {
			responseBuffers.Put(buf)
		}
	}()
	buf.Reset()
	if err := encodeJSON(buf, v); err != nil {
		slog.Error("encode response", "error", err)
		writeProblem(w, http.StatusInternalServerError, store.CodeInternal, "internal error")
		return
	}
	writeRaw(w, status, buf.Bytes())
}

// encodeJSON writes v as every response body is written: newline-terminated, <, > and &
// as they are.
func encodeJSON(buf *bytes.Buffer, v any) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// responseBuffers recycles the buffers responses are encoded into (a page of NFTs is about
// 15 KB): fewer allocations per request, so less garbage collection under load.
var responseBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledResponse is the largest buffer kept for reuse.
const maxPooledResponse = 1 << 20

// writeRaw answers JSON bytes as they are, ending in a newline, with their length (so the
// body is written whole, not in chunks).
func writeRaw(w http.ResponseWriter, status int, b []byte) {
	nl := len(b) == 0 || b[len(b)-1] != '\n'
	n := len(b)
	if nl {
		n++
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(n))
	w.WriteHeader(status)
	w.Write(b)
	if nl {
		w.Write([]byte{'\n'})
	}
}
