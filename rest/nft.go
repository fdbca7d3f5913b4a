package rest

import (
	"context"
	"net/http"
	"time"

	"marketd/store"
	"marketd/store/nftmeta"
)

// Kinds of prepared transaction the NFT execute endpoints accept.
var (
	kindNFTMint     = []string{store.KindNFTMint}
	kindNFTList     = []string{store.KindNFTList}
	kindNFTCancel   = []string{store.KindNFTCancel}
	kindNFTBuy      = []string{store.KindNFTBuy}
	kindNFTSweep    = []string{store.KindNFTSweep}
	kindNFTTransfer = []string{store.KindNFTTransfer}
	kindNFTBurn     = []string{store.KindNFTBurn}
)

// nftRoutes are the NFT marketplace endpoints: public reads of collections and NFTs, and the
// prepare/execute pairs of mint, list, cancel, buy, sweep, transfer and burn.
func (srv *Server) nftRoutes() []route {
	return []route{
		{method: "GET", path: "/api/nft/collections", handle: srv.collections},
		{method: "GET", path: "/api/nft/slug/{slug}", handle: srv.collectionBySlug},
		{method: "GET", path: "/api/nft/collection/{id}/nfts", handle: srv.collectionNFTs},
		{method: "GET", path: "/api/nft/token/{contractId}", handle: srv.nftDetail},

		{method: "POST", path: "/api/nft/mint/atomic/prepare", access: token, prepare: true, handle: srv.mintPrepare(false)},
		{method: "POST", path: "/api/nft/mint/atomic/execute", access: token, handle: srv.execute(kindNFTMint)},
		{method: "POST", path: "/api/nft/mint/batch/atomic/prepare", access: token, prepare: true, handle: srv.mintPrepare(true)},
		{method: "POST", path: "/api/nft/mint/batch/atomic/execute", access: token, handle: srv.execute(kindNFTMint)},
		{method: "POST", path: "/api/nft/list/prepare", access: token, prepare: true, handle: srv.listPrepare},
		{method: "POST", path: "/api/nft/list/execute", access: token, handle: srv.execute(kindNFTList)},
		{method: "POST", path: "/api/nft/list/{cid}/cancel/prepare", access: token, prepare: true, handle: srv.cancelPrepare},
		{method: "POST", path: "/api/nft/list/cancel/execute", access: token, handle: srv.execute(kindNFTCancel)},
		{method: "POST", path: "/api/nft/list/batch/atomic/prepare", access: token, prepare: true, handle: srv.listBatchPrepare},
		{method: "POST", path: "/api/nft/list/batch/atomic/execute", access: token, handle: srv.execute(kindNFTList)},
		{method: "POST", path: "/api/nft/listing/batch/cancel/prepare", access: token, prepare: true, handle: srv.cidsPrepare(srv.store.PrepareCancel)},
		{method: "POST", path: "/api/nft/listing/batch/cancel/execute", access: token, handle: srv.execute(kindNFTCancel)},
		{method: "POST", path: "/api/nft/buy/atomic/prepare", access: token, prepare: true, handle: srv.buyPrepare},
		{method: "POST", path: "/api/nft/buy/atomic/execute", access: token, handle: srv.execute(kindNFTBuy)},
		{method: "POST", path: "/api/nft/sweep/buy/prepare", access: token, prepare: true, handle: srv.sweepPrepare},
		{method: "POST", path: "/api/nft/sweep/buy/execute", access: token, handle: srv.execute(kindNFTSweep)},
		{method: "POST", path: "/api/nft/transfer/prepare", access: token, prepare: true, handle: srv.transferPrepare},
		{method: "POST", path: "/api/nft/transfer/execute", access: token, handle: srv.execute(kindNFTTransfer)},
		{method: "POST", path: "/api/nft/burn/prepare", access: token, prepare: true, handle: srv.burnPrepare},
		{method: "POST", path: "/api/nft/burn/execute", access: token, handle: srv.execute(kindNFTBurn)},
	}
}

// ---- views: fields may be added to these objects, none renamed (clients are written
// against their names)

type phaseView struct {
	Name          string       `json:"name"`
	Price         store.Amount `json:"price"`
	Start         int64        `json:"start"`
	End           int64        `json:"end"`
	PerPartyLimit int          `json:"perPartyLimit"`
	Supply        *int         `json:"supply"`
	Minted        int          `json:"minted"`
	AllowList     bool         `json:"allowList"`
	Active        bool         `json:"active"`
}

type collectionView struct {
	ID          string           `json:"id"`
	Slug        string           `json:"slug"`
	Name        string           `json:"name"`
	Description string           `json:"description"`
	Image       string           `json:"image"`
	Creator     string           `json:"creator"`
	Currency    store.Instrument `json:"currency"`
	RoyaltyBps  int              `json:"royaltyBps"`
	Supply      int              `json:"supply"`
	Minted      int              `json:"minted"`
	Burned      int              `json:"burned"`
	FloorPrice  *store.Amount    `json:"floorPrice"`
	ListedCount int              `json:"listedCount"`
	Owners      int              `json:"owners"`
	Volume      store.Amount     `json:"volume"`
	TopOffer    *store.Amount    `json:"topOffer"`
	CreatedAt   int64            `json:"createdAt"`
	Phases      []phaseView      `json:"phases"`
}

func viewCollection(c store.Collection, now time.Time) collectionView {
	v := collectionView{
		ID: c.ID, Slug: c.Slug, Name: c.Name, Description: c.Description, Image: c.Image, Creator: c.Creator,
		Currency: c.Currency, RoyaltyBps: c.RoyaltyBps, Supply: c.Supply, Minted: c.Minted, Burned: c.Burned,
		FloorPrice: c.FloorPrice, ListedCount: c.ListedCount, Owners: c.Owners, Volume: c.Volume, TopOffer: c.TopOffer,
		CreatedAt: c.CreatedAt.Unix(), Phases: make([]phaseView, len(c.Phases)),
	}
	for i, p := range c.Phases {
		v.Phases[i] = phaseView{
			Name: p.Name, Price: p.Price, Start: p.Start.Unix(), End: p.End.Unix(), PerPartyLimit: p.PerPartyLimit,
			Supply: p.Supply, Minted: p.Minted, AllowList: p.AllowList, Active: p.ActiveAt(now),
		}
	}
	return v
}

type listingView struct {
	CID       string           `json:"cid"`
	Seller    string           `json:"seller"`
	Price     store.Amount     `json:"price"`
	Currency  store.Instrument `json:"currency"`
	ExpiresAt *int64           `json:"expiresAt"`
}

type nftView struct {
	ContractID   string `json:"contractId"`
	CollectionID string `json:"collectionId"`
	Serial       int    `json:"serial"`
	nftmeta.Fields
	Traits    []store.Trait  `json:"traits"`
	Owner     string         `json:"owner"`
	Listing   *listingView   `json:"listing"`
	BestOffer *bestOfferView `json:"bestOffer"`
}

// bestOfferView is the best open offer an NFT can be accepted into.
type bestOfferView struct {
	CID   string       `json:"cid"`
	Price store.Amount `json:"price"`
	Kind  string       `json:"kind"`
}

func viewNFT(n store.NFTView) nftView {
	v := nftView{ContractID: n.ContractID, CollectionID: n.CollectionID, Serial: n.Serial, Fields: n.Fields, Traits: n.Traits, Owner: n.Owner}
	if l := n.Listing; l != nil {
		v.Listing = &listingView{CID: l.CID, Seller: l.Seller, Price: l.Price, Currency: l.Currency, ExpiresAt: unixPtr(l.ExpiresAt)}
	}
	if o := n.BestOffer; o != nil {
		v.BestOffer = &bestOfferView{CID: o.CID, Price: o.Price, Kind: o.Kind}
	}
	return v
}

func unixPtr(t *store.Timestamp) *int64 {
	if t == nil {
		return nil
	}
	u := t.Unix()
	return &u
}

type nftEventView struct {
	UpdateID string            `json:"updateId"`
	LogIndex *int64            `json:"logIndex,omitempty"` // absent while the log has no entry of the update
	Kind     string            `json:"kind"`
	At       int64             `json:"at"`
	From     *string           `json:"from"`
	To       *string           `json:"to"`
	Price    *store.Amount     `json:"price"`
	Currency *store.Instrument `json:"currency"`
}

type nftDetailView struct {
	nftView
	History []nftEventView `json:"history"`
}

// ---- reads

func (srv *Server) collections(w http.ResponseWriter, r *http.Request) error {
	pr, err := pageRequest(r)
	if err != nil {
		return err
	}
	sort, err := store.ParseCollectionSort(r.URL.Query().Get("sort"))
	if err != nil {
		return err
	}
	page, err := srv.store.Collections(r.Context(), sort, pr)
	if err != nil {
		return err
	}
	now := srv.store.Now()
	writeList(w, page, func(c store.Collection) collectionView { return viewCollection(c, now) })
	return nil
}

func (srv *Server) collectionBySlug(w http.ResponseWriter, r *http.Request) error {
	c, err := srv.store.CollectionBySlug(r.Context(), r.PathValue("slug"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewCollection(*c, srv.store.Now()))
	return nil
}

func (srv *Server) collectionNFTs(w http.ResponseWriter, r *http.Request) error {
	pr, err := pageRequest(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	sort, err := store.ParseNFTSort(q.Get("sort"))
	if err != nil {
		return err
	}
	traits, err := store.ParseTraitFilters(q["trait"])
	if err != nil {
		return err
	}
	f := store.NFTFilter{Traits: traits, MinPrice: q.Get("minPrice"), MaxPrice: q.Get("maxPrice"), Owner: q.Get("owner")}
	switch v := q.Get("listed"); v {
	case "", "false":
	case "true":
		f.Listed = true
	default:
		return store.Errorf(store.CodeInvalidRequest, "listed is a boolean: true or false, not %q", truncate(v, 40))
	}
	page, err := srv.store.NFTs(r.Context(), r.PathValue("id"), f, sort, pr)
	if err != nil {
		return err
	}
	return writeSharedList(w, page, func(b []byte, n store.NFTView) []byte {
		v := viewNFT(n)
		return v.appendJSON(b)
	})
}

func (srv *Server) nftDetail(w http.ResponseWriter, r *http.Request) error {
	d, err := srv.store.NFTByContract(r.Context(), r.PathValue("contractId"))
	if err != nil {
		return err
	}
	out := nftDetailView{nftView: viewNFT(d.NFTView), History: make([]nftEventView, len(d.History))}
	for i, e := range d.History {
		out.History[i] = nftEventView{UpdateID: e.UpdateID, LogIndex: e.LogIndex, Kind: e.Kind, At: e.At.Unix(), From: e.From, To: e.To, Price: e.Price, Currency: e.Currency}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// ---- prepares: the token's party acts; a body naming another owner is party_mismatch

type mintRequest struct {
	CollectionID string `json:"collectionId"`
	Quantity     *int   `json:"quantity,omitempty"`
}

func (srv *Server) mintPrepare(batch bool) func(w http.ResponseWriter, r *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		var req mintRequest
		if err := decode(w, r, &req); err != nil {
			return err
		}
		if err := required("collectionId", req.CollectionID); err != nil {
			return err
		}
		quantity := 1
		switch {
		case batch && req.Quantity == nil:
			return store.Errorf(store.CodeInvalidRequest, "quantity is required")
		case batch:
			quantity = *req.Quantity
		case req.Quantity != nil && *req.Quantity != 1:
			return store.Errorf(store.CodeInvalidRequest, "mint/atomic mints one NFT; use mint/batch/atomic for more")
		}
		return srv.prepared(w)(srv.store.PrepareMint(r.Context(), authOf(r.Context()).PartyID, req.CollectionID, quantity))
	}
}

// prepared answers a prepare's outcome.
func (srv *Server) prepared(w http.ResponseWriter) func(p *store.Prepared, err error) error {
	return func(p *store.Prepared, err error) error {
		if err != nil {
			return err
		}
		writePrepared(w, p)
		return nil
	}
}

type listItem struct {
	ContractID string `json:"contractId"`
	Price      string `json:"price"`
	ExpiresAt  *int64 `json:"expiresAt,omitempty"`
}

func (it listItem) terms() (store.ListingTerms, error) {
	if err := required("contractId", it.ContractID, "price", it.Price); err != nil {
		return store.ListingTerms{}, err
	}
	t := store.ListingTerms{ContractID: it.ContractID, Price: it.Price}
	if it.ExpiresAt != nil {
		at := time.Unix(*it.ExpiresAt, 0)
		t.ExpiresAt = &at
	}
	return t, nil
}

func (srv *Server) listPrepare(w http.ResponseWriter, r *http.Request) error {
	var req listItem
	if err := decode(w, r, &req); err != nil {
		return err
	}
	t, err := req.terms()
	if err != nil {
		return err
	}
	return srv.prepared(w)(srv.store.PrepareList(r.Context(), authOf(r.Context()).PartyID, []store.ListingTerms{t}))
}

func (srv *Server) listBatchPrepare(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Items []listItem `json:"items"`
	}
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if len(req.Items) == 0 {
		return store.Errorf(store.CodeInvalidRequest, "items is required")
	}
	terms := make([]store.ListingTerms, len(req.Items))
	for i, it := range req.Items {
		t, err := it.terms()
		if err != nil {
			return store.Errorf(store.CodeInvalidRequest, "items[%d]: %s", i, store.ErrorMessage(err))
		}
		terms[i] = t
	}
	return srv.prepared(w)(srv.store.PrepareList(r.Context(), authOf(r.Context()).PartyID, terms))
}

func (srv *Server) cancelPrepare(w http.ResponseWriter, r *http.Request) error {
	var req struct{}
	if err := decode(w, r, &req); err != nil {
		return err
	}
	return srv.prepared(w)(srv.store.PrepareCancel(r.Context(), authOf(r.Context()).PartyID, []string{r.PathValue("cid")}))
}

// cidsPrepare is a prepare whose body names contracts by their cids ({"cids": [...]}): a
// batch cancel of listings or of offers.
func (srv *Server) cidsPrepare(prepare func(ctx context.Context, party string, cids []string) (*store.Prepared, error)) func(w http.ResponseWriter, r *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		var req struct {
			CIDs []string `json:"cids"`
		}
		if err := decode(w, r, &req); err != nil {
			return err
		}
		if len(req.CIDs) == 0 {
			return store.Errorf(store.CodeInvalidRequest, "cids is required")
		}
		return srv.prepared(w)(prepare(r.Context(), authOf(r.Context()).PartyID, req.CIDs))
	}
}

func (srv *Server) buyPrepare(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		CID string `json:"cid"`
	}
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if err := required("cid", req.CID); err != nil {
		return err
	}
	return srv.prepared(w)(srv.store.PrepareBuy(r.Context(), authOf(r.Context()).PartyID, req.CID))
}

func (srv *Server) sweepPrepare(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		CollectionID string   `json:"collectionId"`
		CIDs         []string `json:"cids"`
		Count        int      `json:"count"`
		MaxTotal     string   `json:"maxTotal"`
	}
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if err := required("collectionId", req.CollectionID, "maxTotal", req.MaxTotal); err != nil {
		return err
	}
	return srv.prepared(w)(srv.store.PrepareSweep(r.Context(), authOf(r.Context()).PartyID,
		store.SweepRequest{CollectionID: req.CollectionID, CIDs: req.CIDs, Count: req.Count, MaxTotal: req.MaxTotal}))
}

func (srv *Server) transferPrepare(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		ContractID string `json:"contractId"`
		Receiver   string `json:"receiver"`
		Owner      string `json:"owner,omitempty"` // optional; must be the token's party
	}
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if err := required("contractId", req.ContractID, "receiver", req.Receiver); err != nil {
		return err
	}
	return srv.prepared(w)(srv.store.PrepareTransfer(r.Context(), authOf(r.Context()).PartyID, req.ContractID, req.Receiver))
}

func (srv *Server) burnPrepare(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		ContractID string `json:"contractId"`
		Owner      string `json:"owner,omitempty"` // optional; must be the token's party
	}
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if err := required("contractId", req.ContractID); err != nil {
		return err
	}
	return srv.prepared(w)(srv.store.PrepareBurn(r.Context(), authOf(r.Context()).PartyID, req.ContractID))
}
