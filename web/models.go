package web

import (
	"net/url"
	"strings"
	"time"

	"marketd/store"
	"marketd/store/admin"
	"marketd/store/ratelimit"
)

// View models: a handler builds one and a template renders it; templates do not query.

type pageModel struct {
	Title      string
	User       *viewer
	Flash      string
	FlashError bool
}

type loginForm struct {
	Username string
	Next     string
	Error    string
	Notice   string
}

type sessionModel struct {
	store.Session
	State        string // active, expired, revoked
	LastRotation time.Time
}

type sessionsModel struct {
	Page  pageModel
	Query admin.SessionQuery
	Rows  []sessionModel
	Pager pager
	Now   time.Time
}

type bucketModel struct {
	KeyState ratelimit.KeyState
	Kind     string // read, prepare
	Subject  string // an origin or a party id
	ByParty  bool
}

type rateLimitsModel struct {
	Page        pageModel
	Filter      string
	Origins     []bucketModel
	Parties     []bucketModel
	Unavailable bool
	Now         time.Time
}

type listingsModel struct {
	Page   pageModel
	Filter store.ListingFilter
	Rows   []store.Listing
	Pager  pager
	Now    time.Time
}

type listingModel struct {
	Page    pageModel
	Listing store.Listing
	NFT     *store.NFTDetail
	Now     time.Time
}

type ledgerModel struct {
	Page     pageModel
	Updates  []store.Update
	Pager    pager // of the updates
	Prepared []store.PreparedTx
	Now      time.Time
}

type partyModel struct {
	Page     pageModel
	Party    store.Party
	Sessions []sessionModel
	Balances []store.Balance
	Listings []store.Listing
	Offers   []admin.Offer           // its open offers, best price first
	Accepts  []store.CollectionEvent // NFTs it sold into offers or bought through its offers
	Updates  []store.Update
	Prepared []store.PreparedTx
	Now      time.Time
}

type auditModel struct {
	Page    pageModel
	Actor   string
	Entries []admin.AuditEntry
	Pager   pager
}

type usersModel struct {
	Page  pageModel
	Users []admin.User
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }

// shortParty is a party id short enough for a table cell: the hint, then the fingerprint's
// first six and last four hex digits ("alice::1220ab…9f3c"). The full id goes in the title.
func shortParty(id string) string {
	hint, fp, ok := strings.Cut(id, "::")
	if !ok || len(fp) <= 12 {
		if len(id) <= 28 {
			return id
		}
		return id[:20] + "…" + id[len(id)-4:]
	}
	if r := []rune(hint); len(r) > 16 {
		hint = string(r[:15]) + "…"
	}
	return hint + "::" + fp[:6] + "…" + fp[len(fp)-4:]
}

func partyURL(id string) string { return "/admin/parties/" + url.PathEscape(id) }

func listingURL(cid string) string { return "/admin/listings/" + url.PathEscape(cid) }

// when formats an instant for a table: UTC, to the second.
func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

func whenPtr(t *store.Timestamp) string {
	if t == nil {
		return "—"
	}
	return when(t.Time)
}

// relative says how long before now t was, or how long after now it is, coarsely.
func relative(t, now time.Time) string {
	d := t.Sub(now)
	suffix := "from now"
	if d < 0 {
		d, suffix = -d, "ago"
	}
	switch {
	case d < time.Minute:
		return itoa(int64(d.Seconds())) + "s " + suffix
	case d < time.Hour:
		return itoa(int64(d.Minutes())) + "m " + suffix
	case d < 48*time.Hour:
		return itoa(int64(d.Hours())) + "h " + suffix
	}
	return itoa(int64(d.Hours()/24)) + "d " + suffix
}

func deref(s *string) string {
	if s == nil {
		return "—"
	}
	return *s
}

func amountPtr(a *store.Amount) string {
	if a == nil {
		return "—"
	}
	return a.String()
}

func listingState(l store.Listing, now time.Time) string {
	switch {
	case !l.Active():
		return "closed"
	case l.ExpiresAt != nil && !now.Before(l.ExpiresAt.Time):
		return "expired"
	}
	return "active"
}

func stateClass(state string) string {
	switch state {
	case "active", "executed", "pending", "open", "filled":
		return "pill ok"
	case "revoked", "closed", "disabled", "cancelled":
		return "pill bad"
	}
	return "pill warn"
}
