package web

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"marketd/store"
	"marketd/store/admin"
	"marketd/store/ratelimit"
	"marketd/store/wallet"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// sessionsPage lists sign-in sessions, newest first, searched by party.
func (c *Console) sessionsPage(w http.ResponseWriter, r *http.Request, u *viewer) {
	q := admin.SessionQuery{Party: strings.TrimSpace(r.URL.Query().Get("party")), Active: r.URL.Query().Get("active") == "1"}
	req := pageRequest(r, 50)
	page, err := c.admin.SessionsPage(r.Context(), q, req)
	if err != nil {
		c.storeFail(w, r, u, err)
		return
	}
	v := sessionsModel{Page: c.page(r, u, "Sign-in sessions"), Query: q, Pager: pagerOf(r, req, page), Now: c.store.Now()}
	for _, s := range page.Items {
		v.Rows = append(v.Rows, sessionRow(s, v.Now))
	}
	c.render(w, r, http.StatusOK, sessionsView(v))
}

func sessionRow(s store.Session, now time.Time) sessionModel {
	m := sessionModel{Session: s, State: "active"}
	switch {
	case s.RevokedAt != nil:
		m.State = "revoked"
	case !now.Before(s.TokenExpiresAt.Time):
		m.State = "expired"
	}
	if s.Rotations > 0 {
		m.LastRotation = s.TokenIssuedAt.Time
	}
	return m
}

// revokeSession revokes a party's sign-in session: every token of it is refused from now on.
func (c *Console) revokeSession(w http.ResponseWriter, r *http.Request, u *viewer) {
	sid := r.PathValue("sid")
	err := c.admin.RevokeSession(r.Context(), sid, c.auditEntry(r, u, "", "", ""))
	if err != nil && store.ErrorCode(err) == store.CodeInternal {
		c.storeFail(w, r, u, err)
		return
	}
	if err != nil {
		c.flash(r.Context(), store.ErrorMessage(err), true)
	} else {
		c.flash(r.Context(), "Session "+sid+" is revoked: every token of it is refused from now on.", false)
	}
	back := "/admin/sessions"
	if p := r.PostFormValue("party"); p != "" {
		back += "?party=" + urlQueryEscape(p)
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// rateLimitsPage shows the API's rate-limit buckets: by origin (reads, anonymous prepares)
// and by party (prepares).
func (c *Console) rateLimitsPage(w http.ResponseWriter, r *http.Request, u *viewer) {
	v := rateLimitsModel{Page: c.page(r, u, "Rate limits"), Now: c.store.Now(), Filter: strings.TrimSpace(r.URL.Query().Get("q"))}
	if c.cfg.Limits == nil {
		v.Unavailable = true
	} else {
		for _, st := range c.cfg.Limits.State() {
			if v.Filter != "" && !strings.Contains(st.Key, v.Filter) {
				continue
			}
			b := bucketOf(st)
			if b.ByParty {
				v.Parties = append(v.Parties, b)
			} else {
				v.Origins = append(v.Origins, b)
			}
		}
	}
	c.render(w, r, http.StatusOK, rateLimitsView(v))
}

// bucketOf reads a limiter key ("read:ORIGIN", "prepare:PARTY" or "prepare:ORIGIN").
func bucketOf(st ratelimit.KeyState) bucketModel {
	kind, subject, _ := strings.Cut(st.Key, ":")
	return bucketModel{KeyState: st, Kind: kind, Subject: subject, ByParty: wallet.ValidPartyID(subject)}
}

// resetRateLimit forgets one bucket, so its next request opens a fresh window.
func (c *Console) resetRateLimit(w http.ResponseWriter, r *http.Request, u *viewer) {
	key := r.PostFormValue("key")
	if key == "" || len(key) > 512 || c.cfg.Limits == nil {
		c.fail(w, r, u, http.StatusBadRequest, "Name the bucket to reset.")
		return
	}
	if !c.cfg.Limits.Reset(key) {
		c.flash(r.Context(), "There is no bucket "+key+" (its window may have ended already).", true)
		http.Redirect(w, r, "/admin/ratelimits", http.StatusSeeOther)
		return
	}
	if err := c.audit(r, u, "reset-rate-limit", key, ""); err != nil {
		c.storeFail(w, r, u, err)
		return
	}
	c.flash(r.Context(), "Bucket "+key+" is reset.", false)
	http.Redirect(w, r, "/admin/ratelimits", http.StatusSeeOther)
}

// listingsPage lists listings newest first, filtered by collection, seller and state.
func (c *Console) listingsPage(w http.ResponseWriter, r *http.Request, u *viewer) {
	qs := r.URL.Query()
	f := store.ListingFilter{CollectionID: strings.TrimSpace(qs.Get("collection")), Seller: strings.TrimSpace(qs.Get("seller")), State: qs.Get("state")}
	v := listingsModel{Page: c.page(r, u, "Listings"), Filter: f, Now: c.store.Now()}
	f.CollectionID = c.collectionID(r.Context(), f.CollectionID)
	req := pageRequest(r, 50)
	page, err := c.store.Listings(r.Context(), f, req)
	if err != nil {
		c.storeFail(w, r, u, err)
		return
	}
	v.Rows, v.Pager = page.Items, pagerOf(r, req, page)
	c.render(w, r, http.StatusOK, listingsView(v))
}

// listingPage shows one listing with its NFT and the NFT's history.
func (c *Console) listingPage(w http.ResponseWriter, r *http.Request, u *viewer) {
	l, err := c.store.ListingByCID(r.Context(), r.PathValue("cid"))
	if err != nil {
		c.storeFail(w, r, u, err)
		return
	}
	v := listingModel{Page: c.page(r, u, "Listing"), Listing: *l, Now: c.store.Now()}
	if nft, err := c.store.NFTByContract(r.Context(), l.NFTCID); err == nil {
		v.NFT = nft
	} else if store.ErrorCode(err) != store.CodeNotFound {
		c.storeFail(w, r, u, err)
		return
	}
	c.render(w, r, http.StatusOK, listingView(v))
}

// ledgerPage shows the update log, paged, and the latest prepared transactions.
func (c *Console) ledgerPage(w http.ResponseWriter, r *http.Request, u *viewer) {
	ctx := r.Context()
	req := pageRequest(r, 50)
	ups, err := c.admin.UpdatesPage(ctx, "", req)
	if err != nil {
		c.storeFail(w, r, u, err)
		return
	}
	preps, err := c.admin.LatestPrepared(ctx, "", 50)
	if err != nil {
		c.storeFail(w, r, u, err)
		return
	}
	c.render(w, r, http.StatusOK, ledgerView(ledgerModel{Page: c.page(r, u, "Ledger activity"), Updates: ups.Items, Pager: pagerOf(r, req, ups), Prepared: preps, Now: c.store.Now()}))
}

// partyPage joins one party's sessions, balances, listings, open offers, accepts, updates and
// prepared transactions.
func (c *Console) partyPage(w http.ResponseWriter, r *http.Request, u *viewer) {
	ctx := r.Context()
	id := r.PathValue("party")
	party, err := c.store.Party(ctx, id)
	if err != nil {
		c.storeFail(w, r, u, err)
		return
	}
	v := partyModel{Page: c.page(r, u, "Party"), Party: *party, Now: c.store.Now()}
	sessions, err := c.admin.SearchSessions(ctx, admin.SessionQuery{Party: id, Limit: 20})
	if err == nil {
		for _, s := range sessions {
			v.Sessions = append(v.Sessions, sessionRow(s, v.Now))
		}
		v.Balances, err = c.store.Balances(ctx, id)
	}
	if err == nil {
		var page store.Page[store.Listing]
		page, err = c.store.Listings(ctx, store.ListingFilter{Seller: id}, store.PageRequest{Limit: 20})
		v.Listings = page.Items
	}
	if err == nil {
		var page store.Page[store.Offer]
		page, err = c.store.OffersByMaker(ctx, id, store.PageRequest{Limit: 20})
		v.Offers = openOffers(page.Items)
	}
	if err == nil {
		var page store.Page[store.CollectionEvent]
		page, err = c.store.OfferAccepts(ctx, id, store.PageRequest{Limit: 20})
		v.Accepts = page.Items
	}
	if err == nil {
		v.Updates, err = c.admin.LatestUpdates(ctx, id, 20)
	}
	if err == nil {
		v.Prepared, err = c.admin.LatestPrepared(ctx, id, 20)
	}
	if err != nil {
		c.storeFail(w, r, u, err)
		return
	}
	c.render(w, r, http.StatusOK, partyView(v))
}

// auditPage lists the audit log, newest first.
func (c *Console) auditPage(w http.ResponseWriter, r *http.Request, u *viewer) {
	actor := strings.TrimSpace(r.URL.Query().Get("actor"))
	req := pageRequest(r, 50)
	page, err := c.admin.AuditPage(r.Context(), actor, req)
	if err != nil {
		c.storeFail(w, r, u, err)
		return
	}
	c.render(w, r, http.StatusOK, auditView(auditModel{Page: c.page(r, u, "Audit log"), Actor: actor, Entries: page.Items, Pager: pagerOf(r, req, page)}))
}

// usersPage lists the console's users; they are managed with `marketd admin`.
func (c *Console) usersPage(w http.ResponseWriter, r *http.Request, u *viewer) {
	us, err := c.admin.Users(r.Context())
	if err != nil {
		c.storeFail(w, r, u, err)
		return
	}
	c.render(w, r, http.StatusOK, usersView(usersModel{Page: c.page(r, u, "Console users"), Users: us}))
}

// page is what every page's layout needs.
func (c *Console) page(r *http.Request, u *viewer, title string) pageModel {
	msg, isErr := c.popFlash(r.Context())
	return pageModel{Title: title, User: u, Flash: msg, FlashError: isErr}
}
