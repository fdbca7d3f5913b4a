package rest

import (
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
		{method: "GET", path: "/log/tile/{path...}", produces: "application/octet-stream", handle: srv.logTile},
	}
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
