package web

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"marketd/store"
	"marketd/store/admin"
)

// offersModel is the offers list: every offer, newest made first, as the filter narrows it.
type offersModel struct {
	Page   pageModel
	Filter admin.OfferFilter
	Rows   []admin.Offer
	Pager  pager
	Now    time.Time
}

// offersPage lists offers newest made first, filtered by collection, maker, kind and state.
func (c *Console) offersPage(w http.ResponseWriter, r *http.Request, u *viewer) {
	qs := r.URL.Query()
	f := admin.OfferFilter{CollectionID: strings.TrimSpace(qs.Get("collection")), Maker: strings.TrimSpace(qs.Get("maker")), Kind: qs.Get("kind"), State: qs.Get("state")}
	v := offersModel{Page: c.page(r, u, "Offers"), Filter: f, Now: c.store.Now()}
	f.CollectionID = c.collectionID(r.Context(), f.CollectionID)
	req := pageRequest(r, 50)
	page, err := c.admin.Offers(r.Context(), f, req)
	if err != nil {
		c.storeFail(w, r, u, err)
		return
	}
	v.Rows, v.Pager = page.Items, pagerOf(r, req, page)
	c.render(w, r, http.StatusOK, offersView(v))
}

// collectionID is the id of the collection ref names: a slug names it too. Anything else is
// kept as it is, for the list to find nothing by it.
func (c *Console) collectionID(ctx context.Context, ref string) string {
	if ref != "" && !strings.HasPrefix(ref, "col_") {
		if col, err := c.store.CollectionBySlug(ctx, ref); err == nil {
			return col.ID
		}
	}
	return ref
}

// openOffers are a party's open offers as the offers table shows them.
func openOffers(os []store.Offer) []admin.Offer {
	out := make([]admin.Offer, len(os))
	for i, o := range os {
		out[i] = admin.Offer{Offer: o}
	}
	return out
}

// offerState is how an offer stands at now: open, filled, cancelled or expired (released at
// its expiry, or past it and not released yet).
func offerState(o admin.Offer, now time.Time) string {
	switch {
	case o.Active() && now.Before(o.ExpiresAt.Time):
		return "open"
	case o.Active(), o.ClosedBy == store.KindOfferExpiry:
		return "expired"
	case o.ClosedBy == store.KindNFTOfferAccept:
		return "filled"
	case o.ClosedBy == store.KindNFTOfferCancel:
		return "cancelled"
	}
	return "closed"
}

// offerTakes says which NFTs an offer takes: one serial, any of the collection, or those
// whose traits match ("Hat: Crown or Halo; Eyes: Laser").
func offerTakes(o admin.Offer) string {
	switch o.Kind {
	case store.OfferItem:
		if o.Serial != nil {
			return "#" + strconv.Itoa(*o.Serial)
		}
		return deref(o.NFTID)
	case store.OfferTrait:
		var parts []string
		for _, m := range o.OfferCriteria() {
			parts = append(parts, m.Type+": "+strings.Join(m.Values, " or "))
		}
		return strings.Join(parts, "; ")
	}
	return "any NFT"
}

func offersURL(param, value string) string {
	return "/admin/offers?" + param + "=" + urlQueryEscape(value)
}

// acceptSide says what an offer-accepted event was for party: it sold the NFT into an offer
// (it is the event's From) or bought it through its offer (To).
func acceptSide(e store.CollectionEvent, party string) string {
	if e.From != nil && *e.From == party {
		return "sold into an offer"
	}
	return "bought through its offer"
}

// counterparty is the other side of an accept for party.
func counterparty(e store.CollectionEvent, party string) *string {
	if e.From != nil && *e.From == party {
		return e.To
	}
	return e.From
}

func currencyPtr(c *store.Instrument) string {
	if c == nil {
		return ""
	}
	return string(*c)
}

// shortID is a long contract or update id short enough for a table cell: its first twelve and
// last four characters. The whole id goes in the cell's title.
func shortID(id string) string {
	if len(id) <= 20 {
		return id
	}
	return id[:12] + "…" + id[len(id)-4:]
}
