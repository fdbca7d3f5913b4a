package rest

import (
	"net/http"

	"marketd/store"
)

// Kinds of prepared transaction the swap execute endpoints accept.
var (
	kindLPQuote       = []string{store.KindLPQuote}
	kindLPQuoteCancel = []string{store.KindLPQuoteCancel}
	kindLPClaimFees   = []string{store.KindLPClaimFees}
	kindSwapIntent    = []string{store.KindSwapIntent}
	kindIntentCancel  = []string{store.KindIntentCancel}
)

// swapRoutes are the swap and LP quote endpoints: public quote and pool reads, the taker's
// intents and history, and the LP's quotes and fee claims.
func (srv *Server) swapRoutes() []route {
	return []route{
		{method: "GET", path: "/api/swap/quote", handle: srv.swapQuote},
		{method: "GET", path: "/api/swap/pools", handle: srv.swapPools},
		{method: "GET", path: "/api/swap/pool/{poolId}", handle: srv.swapPool},
		{method: "GET", path: "/api/swap/pool/{poolId}/aggregates", handle: srv.swapAggregates},
		{method: "GET", path: "/api/swap/pool/{poolId}/outcomes", handle: srv.swapOutcomes},
		{method: "GET", path: "/api/swap/pool/{poolId}/history", handle: srv.swapPoolHistory},
		{method: "GET", path: "/api/swap/history", access: token, handle: srv.swapTakerHistory},

		{method: "POST", path: "/api/swap/prepare", access: token, prepare: true, handle: srv.swapPrepare},
		{method: "POST", path: "/api/swap/intent/submit", access: token, handle: srv.execute(kindSwapIntent)},
		{method: "POST", path: "/api/swap/intent/cancel/prepare", access: token, prepare: true, handle: srv.intentCancelPrepare},
		{method: "POST", path: "/api/swap/intent/cancel/execute", access: token, handle: srv.execute(kindIntentCancel)},
		{method: "GET", path: "/api/swap/intent/status", access: token, handle: srv.intentStatus},
		{method: "GET", path: "/api/swap/intent/active", access: token, handle: srv.intentsActive},

		{method: "POST", path: "/api/swap/lp-quote/prepare", access: token, prepare: true, handle: srv.lpQuotePrepare},
		{method: "POST", path: "/api/swap/lp-quote/execute", access: token, handle: srv.execute(kindLPQuote)},
		{method: "POST", path: "/api/swap/lp-quote/cancel/prepare", access: token, prepare: true, handle: srv.lpQuoteCancelPrepare},
		{method: "POST", path: "/api/swap/lp-quote/cancel/execute", access: token, handle: srv.execute(kindLPQuoteCancel)},
		{method: "GET", path: "/api/swap/lp-quote/active", access: token, handle: srv.lpQuotesActive},
		{method: "POST", path: "/api/swap/lp-quote/claim-fees/prepare", access: token, prepare: true, handle: srv.claimFeesPrepare},
		{method: "POST", path: "/api/swap/lp-quote/claim-fees/execute", access: token, handle: srv.execute(kindLPClaimFees)},
	}
}

// ---- views: prices are quote per base; amounts are exact decimal strings

type poolView struct {
	PoolID      string           `json:"poolId"`
	Base        store.Instrument `json:"base"`
	Quote       store.Instrument `json:"quote"`
	FeeBps      int              `json:"feeBps"`
	OraclePrice store.Amount     `json:"oraclePrice"`
	PriceAt     int64            `json:"priceAt"`
}

func (srv *Server) viewPool(r *http.Request, p *store.Pool) (poolView, error) {
	op, err := srv.store.Oracle().Price(r.Context(), p.Base, p.Quote)
	if err != nil {
		return poolView{}, err
	}
	return poolView{PoolID: p.PoolID, Base: p.Base, Quote: p.Quote, FeeBps: p.FeeBps, OraclePrice: op.Price, PriceAt: op.At.Unix()}, nil
}

type lpQuoteView struct {
	CID         string       `json:"cid"`
	PoolID      string       `json:"poolId"`
	LP          string       `json:"lp"`
	Side        string       `json:"side"`
	Price       store.Amount `json:"price"`
	Size        store.Amount `json:"size"`
	Remaining   store.Amount `json:"remaining"`
	FeesAccrued store.Amount `json:"feesAccrued"`
	ExpiresAt   int64        `json:"expiresAt"`
}

func viewLPQuote(q store.LPQuote) lpQuoteView {
	return lpQuoteView{CID: q.QuoteID, PoolID: q.PoolID, LP: q.LP, Side: q.Side, Price: q.Price, Size: q.Size,
		Remaining: q.Remaining, FeesAccrued: q.FeesAccrued, ExpiresAt: q.ExpiresAt.Unix()}
}

type intentView struct {
	IntentCID  string           `json:"intentCid"`
	Status     string           `json:"status"`
	Taker      string           `json:"taker"`
	PoolID     string           `json:"poolId"`
	Sell       store.Instrument `json:"sell"`
	Amount     store.Amount     `json:"amount"`
	MinReceive store.Amount     `json:"minReceive"`
	Deadline   int64            `json:"deadline"`
	Received   *store.Amount    `json:"received"`
	Fills      []store.Fill     `json:"fills"`
}

func viewIntent(v store.IntentView) intentView {
	out := intentView{IntentCID: v.IntentCID, Status: v.Status, Taker: v.Taker, PoolID: v.PoolID, Sell: v.Sell, Amount: v.Amount,
		MinReceive: v.MinReceive, Deadline: v.Deadline.Unix(), Received: v.Received, Fills: v.Fills}
	if out.Fills == nil {
		out.Fills = []store.Fill{}
	}
	return out
}

type outcomeView struct {
	IntentCID string                 `json:"intentCid"`
	UpdateID  string                 `json:"updateId"`
	LogIndex  *int64                 `json:"logIndex,omitempty"` // absent while the log has no entry of the update
	Taker     *string                `json:"taker,omitempty"`    // absent where a pool feed hides it
	PoolID    string                 `json:"poolId"`
	Sold      store.InstrumentAmount `json:"sold"`
	Received  store.InstrumentAmount `json:"received"`
	Fee       store.Amount           `json:"fee"`
	At        int64                  `json:"at"`
}

func viewOutcome(v store.IntentView) outcomeView {
	o := v.Outcome()
	out := outcomeView{IntentCID: o.IntentCID, UpdateID: o.UpdateID, LogIndex: o.LogIndex, Taker: o.Taker, PoolID: o.PoolID,
		Sold: o.Sold, Received: o.Received, Fee: o.Fee}
	if !o.At.IsZero() {
		out.At = o.At.Unix()
	}
	return out
}

// ---- reads

func (srv *Server) swapQuote(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if err := required("sell", q.Get("sell"), "amount", q.Get("amount")); err != nil {
		return err
	}
	sq, err := srv.store.Quote(r.Context(), q.Get("sell"), q.Get("amount"), q.Get("poolId"))
	if err != nil {
		return err
	}
	fills := make([]store.Fill, len(sq.Fills))
	copy(fills, sq.Fills)
	writeJSON(w, http.StatusOK, map[string]any{
		"poolId": sq.Pool.PoolID, "sell": sq.Sell, "amount": sq.Amount, "oraclePrice": sq.Oracle.Price, "priceAt": sq.Oracle.At.Unix(),
		"oracleEstimate": sq.OracleEstimate, "estimatedReceive": sq.EstimatedReceive, "fills": fills,
	})
	return nil
}

func (srv *Server) swapPools(w http.ResponseWriter, r *http.Request) error {
	pr, err := pageRequest(r)
	if err != nil {
		return err
	}
	page, err := srv.store.PoolsPage(r.Context(), pr)
	if err != nil {
		return err
	}
	out := listResponse[poolView]{Items: make([]poolView, 0, len(page.Items))}
	for i := range page.Items {
		v, err := srv.viewPool(r, &page.Items[i])
		if err != nil {
			return err
		}
		out.Items = append(out.Items, v)
	}
	if page.Cursor != "" {
		out.Cursor = &page.Cursor
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (srv *Server) swapPool(w http.ResponseWriter, r *http.Request) error {
	p, err := srv.store.PoolByID(r.Context(), r.PathValue("poolId"))
	if err != nil {
		return err
	}
	v, err := srv.viewPool(r, p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (srv *Server) swapAggregates(w http.ResponseWriter, r *http.Request) error {
	a, err := srv.store.Aggregates(r.Context(), r.PathValue("poolId"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"poolId": a.Pool.PoolID, "tvl": a.TVL, "lpCount": a.LPCount, "accruedFees": a.AccruedFees,
		"depthWeightedSpreadBps": a.DepthWeightedSpreadBps,
	})
	return nil
}

// swapOutcomes answers one page of the pool's latest swap receipts.
func (srv *Server) swapOutcomes(w http.ResponseWriter, r *http.Request) error {
	return srv.swapPoolFeed(w, r)
}

func (srv *Server) swapPoolHistory(w http.ResponseWriter, r *http.Request) error {
	return srv.swapPoolFeed(w, r)
}

// swapPoolFeed answers a pool's public fills, each fill's taker shown to that taker only:
// the answer depends on the caller's token, so a shared HTTP cache must key on it.
func (srv *Server) swapPoolFeed(w http.ResponseWriter, r *http.Request) error {
	w.Header().Add("Vary", "Authorization, Cookie")
	return srv.swapHistory(w, r, store.SwapHistoryFilter{PoolID: r.PathValue("poolId"), Viewer: srv.viewerOf(r)})
}

func (srv *Server) swapTakerHistory(w http.ResponseWriter, r *http.Request) error {
	return srv.swapHistory(w, r, store.SwapHistoryFilter{Taker: partyQuery(r, "taker"), Viewer: authOf(r.Context()).PartyID})
}

// viewerOf is the party a public read's token is for, "" when it brings none. A token that
// does not authenticate counts as none: a public read answers anyway, only without what
// is the token's party's own to see. It never rotates the cookie.
func (srv *Server) viewerOf(r *http.Request) string {
	a, _, err := srv.authenticate(r)
	if err != nil {
		return ""
	}
	return a.PartyID
}

func (srv *Server) swapHistory(w http.ResponseWriter, r *http.Request, f store.SwapHistoryFilter) error {
	pr, err := pageRequest(r)
	if err != nil {
		return err
	}
	page, err := srv.store.SwapHistory(r.Context(), f, pr)
	if err != nil {
		return err
	}
	writeList(w, page, viewOutcome)
	return nil
}

// partyQuery is the party a query parameter names, the token's when it is absent (the
// access check has refused any other party already).
func partyQuery(r *http.Request, name string) string {
	if p := r.URL.Query().Get(name); p != "" {
		return p
	}
	return authOf(r.Context()).PartyID
}

func (srv *Server) intentStatus(w http.ResponseWriter, r *http.Request) error {
	cid := r.URL.Query().Get("intentCid")
	if err := required("intentCid", cid); err != nil {
		return err
	}
	v, err := srv.store.IntentStatus(r.Context(), authOf(r.Context()).PartyID, cid)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewIntent(*v))
	return nil
}

func (srv *Server) intentsActive(w http.ResponseWriter, r *http.Request) error {
	pr, err := pageRequest(r)
	if err != nil {
		return err
	}
	page, err := srv.store.ActiveIntents(r.Context(), partyQuery(r, "taker"), pr)
	if err != nil {
		return err
	}
	writeList(w, page, viewIntent)
	return nil
}

func (srv *Server) lpQuotesActive(w http.ResponseWriter, r *http.Request) error {
	pr, err := pageRequest(r)
	if err != nil {
		return err
	}
	page, err := srv.store.ActiveLPQuotes(r.Context(), partyQuery(r, "lp"), pr)
	if err != nil {
		return err
	}
	writeList(w, page, viewLPQuote)
	return nil
}

// ---- writes

func (srv *Server) lpQuotePrepare(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		PoolID    string `json:"poolId"`
		Side      string `json:"side"`
		Price     string `json:"price"`
		Size      string `json:"size"`
		ExpiresAt *int64 `json:"expiresAt"`
	}
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if err := required("poolId", req.PoolID, "side", req.Side, "price", req.Price, "size", req.Size); err != nil {
		return err
	}
	if req.ExpiresAt == nil {
		return store.Errorf(store.CodeInvalidRequest, "expiresAt is required")
	}
	t := store.LPQuoteTerms{PoolID: req.PoolID, Side: req.Side, Price: req.Price, Size: req.Size, ExpiresAt: *req.ExpiresAt}
	return srv.prepared(w)(srv.store.PrepareLPQuote(r.Context(), authOf(r.Context()).PartyID, t))
}

func (srv *Server) lpQuoteCancelPrepare(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		CID string `json:"cid"`
	}
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if err := required("cid", req.CID); err != nil {
		return err
	}
	return srv.prepared(w)(srv.store.PrepareLPQuoteCancel(r.Context(), authOf(r.Context()).PartyID, req.CID))
}

func (srv *Server) claimFeesPrepare(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		PoolID string `json:"poolId"`
	}
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if err := required("poolId", req.PoolID); err != nil {
		return err
	}
	return srv.prepared(w)(srv.store.PrepareClaimFees(r.Context(), authOf(r.Context()).PartyID, req.PoolID))
}

func (srv *Server) swapPrepare(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		PoolID     string `json:"poolId"`
		Sell       string `json:"sell"`
		Amount     string `json:"amount"`
		MinReceive string `json:"minReceive"`
		Deadline   *int64 `json:"deadline"`
	}
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if err := required("poolId", req.PoolID, "sell", req.Sell, "amount", req.Amount, "minReceive", req.MinReceive); err != nil {
		return err
	}
	if req.Deadline == nil {
		return store.Errorf(store.CodeInvalidRequest, "deadline is required")
	}
	t := store.SwapTerms{PoolID: req.PoolID, Sell: req.Sell, Amount: req.Amount, MinReceive: req.MinReceive, Deadline: *req.Deadline}
	return srv.prepared(w)(srv.store.PrepareSwap(r.Context(), authOf(r.Context()).PartyID, t))
}

func (srv *Server) intentCancelPrepare(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		IntentCID string `json:"intentCid"`
	}
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if err := required("intentCid", req.IntentCID); err != nil {
		return err
	}
	return srv.prepared(w)(srv.store.PrepareIntentCancel(r.Context(), authOf(r.Context()).PartyID, req.IntentCID))
}
