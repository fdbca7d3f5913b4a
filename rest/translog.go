package rest

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"marketd/store"
	"marketd/store/translog"
)

// logRoutes serve the transparency log of ledger updates (store/translog) to anyone, no token
// needed, counted against the read limit like every public read: the signed checkpoint, the
// key that verifies it, hash tiles and entry bundles.
func (srv *Server) logRoutes() []route {
	return []route{
		{method: "GET", path: "/log/checkpoint", produces: "text/plain", handle: srv.logCheckpoint},
		{method: "GET", path: "/log/key", produces: "text/plain", handle: srv.logKey},
		{method: "GET", path: "/log/witnessed-checkpoint", produces: "text/plain", handle: srv.witnessedCheckpoint},
		{method: "GET", path: "/log/tile/{path...}", produces: "application/octet-stream", handle: srv.logTile},
		{method: "GET", path: "/witness/key", produces: "text/plain", handle: srv.witnessKey},
		{method: "POST", path: "/witness/add-checkpoint", writes: true, protocol: "c2sp.org/tlog-witness", handle: srv.addCheckpoint},
	}
}

// witnessKey is the verifier key of the service's cosignatures as a witness.
func (srv *Server) witnessKey(w http.ResponseWriter, r *http.Request) error {
	c, err := srv.store.WitnessCosigner(r.Context())
	if err != nil {
		return err
	}
	writeLog(w, "text/plain; charset=utf-8", "public, max-age=300", []byte(c.VerifierKey()+"\n"))
	return nil
}

// addCheckpoint is a witness's add-checkpoint (c2sp.org/tlog-witness), answered as the
// specification says rather than as a problem: 200 with the cosignature lines; 404, 403, 400,
// 413 or 422 with a line of text; 409 with the size the witness holds, as text/x.tlog.size.
func (srv *Server) addCheckpoint(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, translog.MaxAddCheckpointBody+1))
	if err != nil {
		return store.Errorf(store.CodeInvalidRequest, "reading the body: %v", err)
	}
	sigs, err := srv.store.AddCheckpoint(r.Context(), srv.cfg.WitnessLogs, body)
	var refused *translog.WitnessError
	switch {
	case errors.As(err, &refused) && refused.Status == http.StatusConflict:
		w.Header().Set("Content-Type", "text/x.tlog.size")
		w.WriteHeader(http.StatusConflict)
		fmt.Fprintf(w, "%d\n", refused.Size)
		return nil
	case errors.As(err, &refused):
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(refused.Status)
		fmt.Fprintln(w, refused.Reason)
		return nil
	case err != nil:
		return err
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write(sigs)
	return nil
}

// immutable is the Cache-Control of what never changes: a full tile.
const immutable = "public, max-age=31536000, immutable"

func (srv *Server) logCheckpoint(w http.ResponseWriter, r *http.Request) error {
	b, err := srv.store.LogCheckpoint(r.Context())
	if err != nil {
		return err
	}
	writeLog(w, "text/plain; charset=utf-8", "no-store", b)
	return nil
}

// witnessedCheckpoint is the newest checkpoint a witness cosigned, with its cosignatures.
func (srv *Server) witnessedCheckpoint(w http.ResponseWriter, r *http.Request) error {
	b, err := srv.store.WitnessedCheckpoint(r.Context())
	if err != nil {
		return err
	}
	writeLog(w, "text/plain; charset=utf-8", "no-store", b)
	return nil
}

func (srv *Server) logKey(w http.ResponseWriter, r *http.Request) error {
	vkey, err := srv.store.LogVerifierKey(r.Context())
	if err != nil {
		return err
	}
	writeLog(w, "text/plain; charset=utf-8", "public, max-age=300", []byte(vkey+"\n"))
	return nil
}

func (srv *Server) logTile(w http.ResponseWriter, r *http.Request) error {
	path := "tile/" + r.PathValue("path")
	t, err := translog.ParseTilePath(path)
	if err != nil {
		return store.Errorf(store.CodeInvalidRequest, "%s", truncate(err.Error(), 300))
	}
	b, err := srv.store.LogTile(r.Context(), t)
	if err != nil {
		return err
	}
	cache := immutable
	if t.W < translog.TileWidth {
		cache = "public, max-age=1" // a partial tile is replaced by a wider one as the log grows
	}
	writeLog(w, "application/octet-stream", cache, b)
	return nil
}

// writeLog answers 200 with b.
func writeLog(w http.ResponseWriter, contentType, cacheControl string, b []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", cacheControl)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}
