package rest

import (
	"net/http"

	"marketd/store"
)

// Kinds of prepared transaction the wallet's execute endpoints accept.
var (
	kindTap              = []string{store.KindTap}
	kindCCTransfer       = []string{store.KindCCTransfer}
	kindNFTPreapproval   = []string{store.KindNFTPreapproval}
	kindUSDCxPreapproval = []string{store.KindUSDCxPreapproval}
	kindPreapprovalRenew = []string{store.KindPreapprovalRenew}
)

// walletRoutes are the wallet endpoints (balances, UTXO counts, CC transfers,
// receive-preapprovals, rewards); the tap exists in dev mode only.
func (srv *Server) walletRoutes() []route {
	rs := []route{
		{method: "GET", path: "/api/wallet/balance/{partyId}", access: token, handle: srv.balance},
		{method: "GET", path: "/api/wallet/utxo-count/{partyId}", access: token, handle: srv.utxoCount},
		{method: "POST", path: "/api/wallet/cc-transfer/prepare", access: token, prepare: true, handle: srv.ccTransferPrepare},
		{method: "POST", path: "/api/wallet/cc-transfer/execute", access: token, handle: srv.execute(kindCCTransfer)},
		{method: "POST", path: "/api/wallet/nft-preapproval/prepare", access: token, prepare: true, handle: srv.preapprovalPrepare(store.PreapprovalNFT)},
		{method: "POST", path: "/api/wallet/nft-preapproval/execute", access: token, handle: srv.execute(kindNFTPreapproval)},
		{method: "POST", path: "/api/wallet/usdcx-preapproval/prepare", access: token, prepare: true, handle: srv.preapprovalPrepare(store.PreapprovalUSDCx)},
		{method: "POST", path: "/api/wallet/usdcx-preapproval/execute", access: token, handle: srv.execute(kindUSDCxPreapproval)},
		{method: "POST", path: "/api/wallet/preapproval/renew/prepare", access: token, prepare: true, handle: srv.preapprovalRenewPrepare},
		{method: "POST", path: "/api/wallet/preapproval/renew/execute", access: token, handle: srv.execute(kindPreapprovalRenew)},
		{method: "POST", path: "/api/wallet/preapproval/renew", access: token, writes: true, handle: srv.preapprovalRenew}, // deprecated: unsigned
		{method: "GET", path: "/api/wallet/preapprovals/{partyId}", access: token, handle: srv.preapprovals},
		{method: "GET", path: "/api/wallet/rewards/{partyId}", access: token, handle: srv.rewards},
		{method: "GET", path: "/api/wallet/rewards/{partyId}/history", access: token, handle: srv.rewardHistory},
	}
	if srv.cfg.Dev {
		rs = append(rs,
			route{method: "POST", path: "/api/wallet/tap/prepare", access: token, prepare: true, handle: srv.tapPrepare},
			route{method: "POST", path: "/api/wallet/tap/execute", access: token, handle: srv.execute(kindTap)},
		)
	}
	return rs
}

type balanceView struct {
	Instrument store.Instrument `json:"instrument"`
	Amount     store.Amount     `json:"amount"`
	Locked     store.Amount     `json:"locked"`
	Holdings   int              `json:"holdings"`
}

func (srv *Server) balance(w http.ResponseWriter, r *http.Request) error {
	party := r.PathValue("partyId")
	bs, err := srv.store.Balances(r.Context(), party)
	if err != nil {
		return err
	}
	out := make([]balanceView, len(bs))
	for i, b := range bs {
		out[i] = balanceView{Instrument: b.Instrument, Amount: b.Amount, Locked: b.Locked, Holdings: b.Holdings}
	}
	writeJSON(w, http.StatusOK, struct {
		PartyID  string        `json:"partyId"`
		Balances []balanceView `json:"balances"`
	}{party, out})
	return nil
}

func (srv *Server) utxoCount(w http.ResponseWriter, r *http.Request) error {
	party := r.PathValue("partyId")
	n, err := srv.store.UTXOCount(r.Context(), party)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		PartyID   string                   `json:"partyId"`
		UTXOCount map[store.Instrument]int `json:"utxoCount"`
	}{party, n})
	return nil
}

type ccTransferRequest struct {
	Receiver string `json:"receiver"`
	Amount   string `json:"amount"`
	Sender   string `json:"sender,omitempty"` // optional; must be the token's party
}

func (srv *Server) ccTransferPrepare(w http.ResponseWriter, r *http.Request) error {
	var req ccTransferRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if err := required("receiver", req.Receiver, "amount", req.Amount); err != nil {
		return err
	}
	amount, err := store.ParseAmount(req.Amount, store.CC)
	if err != nil {
		return err
	}
	p, err := srv.store.PrepareCCTransfer(r.Context(), authOf(r.Context()).PartyID, req.Receiver, amount)
	if err != nil {
		return err
	}
	writePrepared(w, p)
	return nil
}

type tapRequest struct {
	Instrument string `json:"instrument"`
	Amount     string `json:"amount"`
}

func (srv *Server) tapPrepare(w http.ResponseWriter, r *http.Request) error {
	var req tapRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if err := required("instrument", req.Instrument, "amount", req.Amount); err != nil {
		return err
	}
	inst, err := store.ParseInstrument(req.Instrument)
	if err != nil {
		return err
	}
	amount, err := store.ParseAmount(req.Amount, inst)
	if err != nil {
		return err
	}
	p, err := srv.store.PrepareTap(r.Context(), authOf(r.Context()).PartyID, inst, amount)
	if err != nil {
		return err
	}
	writePrepared(w, p)
	return nil
}

func (srv *Server) preapprovalPrepare(kind store.PreapprovalKind) func(w http.ResponseWriter, r *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		var req struct{}
		if err := decode(w, r, &req); err != nil {
			return err
		}
		p, err := srv.store.PreparePreapproval(r.Context(), authOf(r.Context()).PartyID, kind)
		if err != nil {
			return err
		}
		writePrepared(w, p)
		return nil
	}
}

type renewRequest struct {
	Kind string `json:"kind"`
}

// renewedKind reads a renewal's body: the kind of preapproval to renew.
func renewedKind(w http.ResponseWriter, r *http.Request) (store.PreapprovalKind, error) {
	var req renewRequest
	if err := decode(w, r, &req); err != nil {
		return "", err
	}
	if err := required("kind", req.Kind); err != nil {
		return "", err
	}
	return store.ParsePreapprovalKind(req.Kind)
}

func (srv *Server) preapprovalRenewPrepare(w http.ResponseWriter, r *http.Request) error {
	kind, err := renewedKind(w, r)
	if err != nil {
		return err
	}
	p, err := srv.store.PrepareRenewal(r.Context(), authOf(r.Context()).PartyID, kind)
	if err != nil {
		return err
	}
	writePrepared(w, p)
	return nil
}

// preapprovalRenew renews without the party's signature; the signed pair replaces it.
func (srv *Server) preapprovalRenew(w http.ResponseWriter, r *http.Request) error {
	kind, err := renewedKind(w, r)
	if err != nil {
		return err
	}
	res, err := srv.store.RenewPreapproval(r.Context(), authOf(r.Context()).PartyID, kind)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

type preapprovalView struct {
	CID       string                `json:"cid"`
	Kind      store.PreapprovalKind `json:"kind"`
	ExpiresAt int64                 `json:"expiresAt"`
	Active    bool                  `json:"active"`
}

func (srv *Server) preapprovals(w http.ResponseWriter, r *http.Request) error {
	party := r.PathValue("partyId")
	ps, err := srv.store.Preapprovals(r.Context(), party)
	if err != nil {
		return err
	}
	now := srv.store.Now()
	out := make([]preapprovalView, len(ps))
	for i, p := range ps {
		out[i] = preapprovalView{CID: p.CID, Kind: p.Kind, ExpiresAt: p.ExpiresAt.Unix(), Active: p.ActiveAt(now)}
	}
	writeJSON(w, http.StatusOK, struct {
		PartyID      string            `json:"partyId"`
		Preapprovals []preapprovalView `json:"preapprovals"`
	}{party, out})
	return nil
}

func (srv *Server) rewards(w http.ResponseWriter, r *http.Request) error {
	party := r.PathValue("partyId")
	bal, err := srv.store.RewardBalance(r.Context(), party)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		PartyID    string           `json:"partyId"`
		Balance    store.Amount     `json:"balance"`
		Instrument store.Instrument `json:"instrument"`
	}{party, bal, store.CC})
	return nil
}

type rewardView struct {
	UpdateID string       `json:"updateId"`
	LogIndex *int64       `json:"logIndex,omitempty"` // absent while the log has no entry of the update
	Kind     string       `json:"kind"`
	Amount   store.Amount `json:"amount"`
	At       int64        `json:"at"`
}

func (srv *Server) rewardHistory(w http.ResponseWriter, r *http.Request) error {
	pr, err := pageRequest(r)
	if err != nil {
		return err
	}
	page, err := srv.store.RewardHistory(r.Context(), r.PathValue("partyId"), pr)
	if err != nil {
		return err
	}
	writeList(w, page, func(e store.RewardEntry) rewardView {
		return rewardView{UpdateID: e.UpdateID, LogIndex: e.LogIndex, Kind: e.Kind, Amount: e.Amount, At: e.At.Unix()}
	})
	return nil
}
