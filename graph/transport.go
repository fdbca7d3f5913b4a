package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// postJSON is gqlgen's POST transport (a JSON body, an application/json or
// application/graphql-response+json answer, the same status codes) with one difference: it
// writes the answer's data as the executor wrote it. encoding/json, which gqlgen's transport
// marshals the whole response with, scans the data byte by byte again to compact and
// HTML-escape it; the executor's output is already compact, so only the escaping is left, and
// most answers have nothing to escape.
type postJSON struct{}

var _ graphql.Transport = postJSON{}

const (
	mediaJSON            = "application/json"
	mediaGraphQLResponse = "application/graphql-response+json"
)

func (postJSON) Supports(r *http.Request) bool {
	if r.Header.Get("Upgrade") != "" {
		return false
	}
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && r.Method == http.MethodPost && mediaType == mediaJSON
}

func (postJSON) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	ctx := r.Context()
	contentType := answerMediaType(r.Header.Get("Accept"))
	w.Header().Add("Content-Type", contentType)
	start := graphql.Now()
	body, err := io.ReadAll(r.Body)
	if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
		// A chunked body past the cap (admit, budget.go): the rest is not read.
		writeRequestError(w, http.StatusRequestEntityTooLarge, bodyTooLarge())
		return
	}
	if err != nil {
		writeResponse(w, exec.DispatchError(ctx, gqlerror.List{gqlerror.Errorf("could not read request body: %+v", err)}))
		return
	}
	var params graphql.RawParams
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&params); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		writeResponse(w, exec.DispatchError(ctx, gqlerror.List{gqlerror.Errorf("json request body could not be decoded: %+v body:%s", err, body)}))
		return
	}
	params.Headers = r.Header
	params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}
	oc, errs := exec.CreateOperationContext(ctx, &params)
	if errs != nil {
		status := http.StatusOK
		if errcode.GetErrorKind(errs) == errcode.KindProtocol {
			status = http.StatusUnprocessableEntity
			if contentType == mediaGraphQLResponse {
				status = http.StatusBadRequest
			}
		}
		w.WriteHeader(status)
		writeResponse(w, exec.DispatchError(graphql.WithOperationContext(ctx, oc), errs))
		return
	}
	responses, ctx := exec.DispatchOperation(ctx, oc)
	writeResponse(w, responses(ctx))
}

// answerMediaType is the answer's media type for an Accept header, as gqlgen's transport picks
// it: application/json unless the client asks for application/graphql-response+json first, or
// names neither nor a wildcard.
func answerMediaType(accept string) string {
	if accept == "" {
		return mediaJSON
	}
	for part := range strings.SplitSeq(accept, ",") {
		mediaType, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mediaType {
		case "*/*", "application/*", mediaJSON:
			return mediaJSON
		case mediaGraphQLResponse:
			return mediaGraphQLResponse
		}
	}
	return mediaGraphQLResponse
}

var responseBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// writeResponse writes resp as json.Marshal would, byte for byte, without marshalling its
// data again: the executor writes it compact, so the only change left is escaping <, >, & and
// U+2028/U+2029 as encoding/json does, which most answers do not need.
func writeResponse(w io.Writer, resp *graphql.Response) {
	buf := responseBuffers.Get().(*bytes.Buffer)
	defer func() {
		buf.Reset()
		responseBuffers.Put(buf)
	}()
	buf.WriteByte('{')
	if len(resp.Errors) > 0 {
		buf.WriteString(`"errors":`)
		appendJSON(buf, resp.Errors)
		buf.WriteByte(',')
	}
	buf.WriteString(`"data":`)
	switch {
	case len(resp.Data) == 0:
		buf.WriteString("null")
	case needsEscape(resp.Data):
		json.HTMLEscape(buf, resp.Data)
	default:
		buf.Write(resp.Data)
	}
	if resp.Label != "" {
		buf.WriteString(`,"label":`)
		appendJSON(buf, resp.Label)
	}
	if len(resp.Path) > 0 {
		buf.WriteString(`,"path":`)
		appendJSON(buf, resp.Path)
	}
	if resp.HasNext != nil {
		buf.WriteString(`,"hasNext":`)
		appendJSON(buf, *resp.HasNext)
	}
	if len(resp.Extensions) > 0 {
		buf.WriteString(`,"extensions":`)
		appendJSON(buf, resp.Extensions)
	}
	buf.WriteByte('}')
	w.Write(buf.Bytes())
}

func appendJSON(buf *bytes.Buffer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // as gqlgen's transport does: the executor's own values always marshal
	}
	buf.Write(b)
}

// needsEscape tells whether encoding/json would escape anything in data: <, > and &, and the
// line and paragraph separators U+2028 and U+2029 (E2 80 A8, E2 80 A9 in UTF-8).
func needsEscape(data []byte) bool {
	if bytes.IndexByte(data, '<') >= 0 || bytes.IndexByte(data, '>') >= 0 || bytes.IndexByte(data, '&') >= 0 {
		return true
	}
	for rest := data; ; {
		i := bytes.IndexByte(rest, 0xE2)
		if i < 0 || i+2 >= len(rest) {
			return false
		}
		if rest[i+1] == 0x80 && (rest[i+2] == 0xA8 || rest[i+2] == 0xA9) {
			return true
		}
		rest = rest[i+1:]
	}
}
