package rest

import (
	"net/http"

	"marketd/store"
)

// Kinds of prepared transaction the offer execute endpoints accept.
var (
	kindNFTOffer       = []string{store.KindNFTOffer}
	kindNFTOfferCancel = []string{store.KindNFTOfferCancel}
	kindNFTOfferAccept = []string{store.KindNFTOfferAccept}
)

// offerRoutes are the buy side of the NFT market: offers' prepare/execute pairs (make,
// cancel, accept) and their lists.
func (srv *Server) offerRoutes() []route {
	return []route{
		{method: "GET", path: "/api/nft/collection/{id}/offers", handle: srv.collectionOffers},
		{method: "GET", path: "/api/nft/collection/{id}/activity", handle: srv.collectionActivity},
		{method: "GET", path: "/api/nft/collection/{id}/stats", handle: srv.collectionStats},
		{method: "GET", path: "/api/nft/token/{contractId}/offers", handle: srv.nftOffers},
		{method: "GET", path: "/api/nft/offers", access: token, handle: srv.makerOffers},
		{method: "GET", path: "/api/nft/offers/received", access: token, handle: srv.receivedOffers},

		{method: "POST", path: "/api/nft/offer/prepare", access: token, prepare: true, handle: srv.offerPrepare},
		{method: "POST", path: "/api/nft/offer/execute", access: token, handle: srv.execute(kindNFTOffer)},
		{method: "POST", path: "/api/nft/offer/cancel/prepare", access: token, prepare: true, handle: srv.cidsPrepare(srv.store.PrepareOfferCancel)},
		{method: "POST", path: "/api/nft/offer/cancel/execute", access: token, handle: srv.execute(kindNFTOfferCancel)},
		{method: "POST", path: "/api/nft/offer/accept/prepare", access: token, prepare: true, handle: srv.offerAcceptPrepare},
		{method: "POST", path: "/api/nft/offer/accept/execute", access: token, handle: srv.execute(kindNFTOfferAccept)},
	}
}

// offerView is an offer on the wire: fields may be added, none renamed.
type offerView struct {
	CID          string             `json:"cid"`
	Kind         string             `json:"kind"`
	Maker        string             `json:"maker"`
	CollectionID string             `json:"collectionId"`
	Serial       *int               `json:"serial,omitempty"`
	Traits       []store.TraitMatch `json:"traits,omitempty"`
	Price        store.Amount       `json:"price"`
	Currency     store.Instrument   `json:"currency"`
	Quantity     int                `json:"quantity"`
	Remaining    int                `json:"remaining"`
	ExpiresAt    int64              `json:"expiresAt"`
	CreatedAt    int64              `json:"createdAt"`
}

func viewOffer(o store.Offer) offerView {
	return offerView{
		CID: o.OfferID, Kind: o.Kind, Maker: o.Maker, CollectionID: o.CollectionID, Serial: o.Serial, Traits: o.OfferCriteria(),
		Price: o.Price, Currency: o.Instrument, Quantity: o.Quantity, Remaining: o.Remaining,
		ExpiresAt: o.ExpiresAt.Unix(), CreatedAt: o.MadeAt().Unix(),
	}
}

// offerList answers one page of a list of offers.
func offerList(w http.ResponseWriter, r *http.Request, read func(store.PageRequest) (store.Page[store.Offer], error)) error {
	pr, err := pageRequest(r)
	if err != nil {
		return err
	}
	page, err := read(pr)
	if err != nil {
		return err
	}
	writeList(w, page, viewOffer)
	return nil
}

func (srv *Server) collectionOffers(w http.ResponseWriter, r *http.Request) error {
	return offerList(w, r, func(pr store.PageRequest) (store.Page[store.Offer], error) {
		return srv.store.CollectionOffers(r.Context(), r.PathValue("id"), pr)
	})
}

func (srv *Server) nftOffers(w http.ResponseWriter, r *http.Request) error {
	return offerList(w, r, func(pr store.PageRequest) (store.Page[store.Offer], error) {
		return srv.store.NFTOffers(r.Context(), r.PathValue("contractId"), pr)
	})
}

// makerOffers lists the offers the token's party made; ?maker=, when given, must name it.
func (srv *Server) makerOffers(w http.ResponseWriter, r *http.Request) error {
	return offerList(w, r, func(pr store.PageRequest) (store.Page[store.Offer], error) {
		return srv.store.OffersByMaker(r.Context(), authOf(r.Context()).PartyID, pr)
	})
}

// receivedOffers lists the offers the token's party's NFTs can be accepted into; ?owner=,
// when given, must name it.
func (srv *Server) receivedOffers(w http.ResponseWriter, r *http.Request) error {
	return offerList(w, r, func(pr store.PageRequest) (store.Page[store.Offer], error) {
		return srv.store.OffersReceived(r.Context(), authOf(r.Context()).PartyID, pr)
	})
}

func (srv *Server) offerPrepare(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		CollectionID string             `json:"collectionId"`
		Serial       *int               `json:"serial"`
		ContractID   string             `json:"contractId"`
		Traits       []store.TraitMatch `json:"traits"`
		Price        string             `json:"price"`
		Quantity     *int               `json:"quantity"`
		ExpiresAt    *int64             `json:"expiresAt"`
	}
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if err := required("price", req.Price); err != nil {
		return err
	}
	if req.ExpiresAt == nil {
		return store.Errorf(store.CodeInvalidRequest, "expiresAt is required")
	}
	if req.Traits != nil && len(req.Traits) == 0 {
		return store.Errorf(store.CodeInvalidRequest, "traits, when given, names at least one trait type")
	}
	return srv.prepared(w)(srv.store.PrepareOffer(r.Context(), authOf(r.Context()).PartyID, store.OfferTerms{
		CollectionID: req.CollectionID, Serial: req.Serial, ContractID: req.ContractID, Traits: req.Traits,
		Price: req.Price, Quantity: req.Quantity, ExpiresAt: *req.ExpiresAt,
	}))
}

func (srv *Server) offerAcceptPrepare(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		CID         string   `json:"cid"`
		ContractIDs []string `json:"contractIds"`
		MinProceeds string   `json:"minProceeds"`
	}
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if err := required("cid", req.CID); err != nil {
		return err
	}
	if len(req.ContractIDs) == 0 {
		return store.Errorf(store.CodeInvalidRequest, "contractIds is required")
	}
	return srv.prepared(w)(srv.store.PrepareOfferAccept(r.Context(), authOf(r.Context()).PartyID,
		store.OfferAcceptance{CID: req.CID, ContractIDs: req.ContractIDs, MinProceeds: req.MinProceeds}))
}

// activityView is one event of a collection's activity feed; absent members do not apply.
type activityView struct {
	Kind     string            `json:"kind"`
	At       int64             `json:"at"`
	UpdateID string            `json:"updateId"`
	LogIndex *int64            `json:"logIndex,omitempty"` // absent while the log has no entry of the update
	Serial   *int              `json:"serial,omitempty"`
	Price    *store.Amount     `json:"price,omitempty"`
	Currency *store.Instrument `json:"currency,omitempty"`
	From     *string           `json:"from,omitempty"`
	To       *string           `json:"to,omitempty"`
	CID      *string           `json:"cid,omitempty"`
}

func viewActivity(e store.ActivityEvent) activityView {
	return activityView{Kind: e.Kind, At: e.At.Unix(), UpdateID: e.UpdateID, LogIndex: e.LogIndex, Serial: e.Serial,
		Price: e.Price, Currency: e.Currency, From: e.From, To: e.To, CID: e.OfferCID}
}

func (srv *Server) collectionActivity(w http.ResponseWriter, r *http.Request) error {
	pr, err := pageRequest(r)
	if err != nil {
		return err
	}
	page, err := srv.store.CollectionActivity(r.Context(), r.PathValue("id"), r.URL.Query()["kind"], pr)
	if err != nil {
		return err
	}
	writeList(w, page, viewActivity)
	return nil
}

type intervalView struct {
	Volume       store.Amount  `json:"volume"`
	Sales        int           `json:"sales"`
	AveragePrice *store.Amount `json:"averagePrice"`
	FloorChange  *string       `json:"floorChange"`
}

type dayView struct {
	Day        string        `json:"day"`
	Volume     store.Amount  `json:"volume"`
	Sales      int           `json:"sales"`
	FloorPrice *store.Amount `json:"floorPrice"`
}

type traitStatsView struct {
	Type       string        `json:"type"`
	Value      string        `json:"value"`
	Count      int           `json:"count"`
	Listed     int           `json:"listed"`
	FloorPrice *store.Amount `json:"floorPrice"`
}

type statsView struct {
	FloorPrice  *store.Amount           `json:"floorPrice"`
	TopOffer    *store.Amount           `json:"topOffer"`
	ListedCount int                     `json:"listedCount"`
	Owners      int                     `json:"owners"`
	Supply      int                     `json:"supply"`
	Intervals   map[string]intervalView `json:"intervals"`
	Daily       []dayView               `json:"daily"`
	Traits      []traitStatsView        `json:"traits"`
}

func (srv *Server) collectionStats(w http.ResponseWriter, r *http.Request) error {
	st, err := srv.store.Stats(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	v := statsView{FloorPrice: st.FloorPrice, TopOffer: st.TopOffer, ListedCount: st.ListedCount, Owners: st.Owners, Supply: st.Supply,
		Intervals: map[string]intervalView{}, Daily: make([]dayView, len(st.Daily)), Traits: make([]traitStatsView, len(st.Traits))}
	for k, f := range st.Intervals {
		v.Intervals[k] = intervalView(f)
	}
	for i, d := range st.Daily {
		v.Daily[i] = dayView(d)
	}
	for i, t := range st.Traits {
		v.Traits[i] = traitStatsView{Type: t.Type, Value: t.Value, Count: t.Count, Listed: t.Listed, FloorPrice: t.FloorPrice}
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}
