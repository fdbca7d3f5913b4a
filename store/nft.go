package store

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"marketd/store/internal/keyset"
	"marketd/store/internal/nftindex"
	"marketd/store/internal/pagecache"
	"marketd/store/ledger"
	"marketd/store/nftmeta"
)

const templateNFT = "nfts"

// NFT is the ledger contract of one non-fungible token: owned by one party, one live
// contract per NFT (NFTID). A transfer or a sale consumes it and creates the next.
type NFT struct {
	bun.BaseModel `bun:"table:nfts"`
	Lifecycle

	NFTID        string `bun:"nft_id"`
	CollectionID string `bun:"collection_id"`
	Serial       int    `bun:"serial"`
	Owner        string `bun:"owner"`
}

func (*NFT) Template() string                        { return templateNFT }
func (n *NFT) Controller() string                    { return n.Owner }
func (n *NFT) Asset() string                         { return n.NFTID }
func nftIDOf(collectionID string, serial int) string { return collectionID + "#" + itoa(serial) }

// An NFT contract carries its NFT, the asset the ledger conserves; crediting it to another
// party needs that party's NFT preapproval.
func init() {
	ledger.RegisterTemplate(templateNFT, ledger.TemplateSpec{Owner: "owner", Asset: "nft_id", Receive: func(Contract) PreapprovalKind { return PreapprovalNFT }})
}

// nftItem is the read model of one live NFT: what the list endpoints filter and sort, with
// its current contract and listing.
type nftItem struct {
	bun.BaseModel `bun:"table:nft_items"`

	NFTID        string         `bun:"nft_id,pk"`
	CollectionID string         `bun:"collection_id"`
	Serial       int            `bun:"serial"`
	Meta         nftmeta.Fields `bun:"meta"` // a JSON object
	Traits       string         `bun:"traits"`
	Owner        string         `bun:"owner"`
	ContractID   string         `bun:"contract_id"`
	ListingCID   *string        `bun:"listing_cid"`
	ListPrice    *Amount        `bun:"list_price"`
	ListCurrency *Instrument    `bun:"list_currency"`
	ListExpires  *Timestamp     `bun:"list_expires"`
	PriceAscKey  string         `bun:"price_asc_key"`
	PriceDescKey string         `bun:"price_desc_key"`
}

// setListing puts l on the item, or takes its listing off when l is nil.
func (it *nftItem) setListing(l *Listing) {
	if l == nil {
		it.ListingCID, it.ListPrice, it.ListCurrency, it.ListExpires = nil, nil, nil, nil
		it.PriceAscKey, it.PriceDescKey = noKey, noKey
		return
	}
	cid, price, cur := l.CID, l.Price, l.Currency
	it.ListingCID, it.ListPrice, it.ListCurrency, it.ListExpires = &cid, &price, &cur, l.ExpiresAt
	it.PriceAscKey, it.PriceDescKey = ascKey(price), descKey(price)
}

// nftTrait is one trait of a live NFT, for the trait filters.
type nftTrait struct {
	bun.BaseModel `bun:"table:nft_traits"`

	CollectionID string `bun:"collection_id,pk"`
	Type         string `bun:"trait_type,pk"`
	Value        string `bun:"trait_value,pk"`
	Serial       int    `bun:"serial,pk"`
}

// collectionOwner counts the live NFTs one party owns in a collection.
type collectionOwner struct {
	bun.BaseModel `bun:"table:collection_owners"`

	CollectionID string `bun:"collection_id,pk"`
	Owner        string `bun:"owner,pk"`
	NFTs         int    `bun:"nfts"`
}

// NFT history event kinds.
const (
	EventMinted      = "minted"
	EventListed      = "listed"
	EventDelisted    = "delisted"
	EventSold        = "sold"
	EventTransferred = "transferred"
	EventBurned      = "burned"
	// EventOfferAccepted: the NFT was sold into an offer (its owner accepted it).
	EventOfferAccepted = "offer-accepted"
	// EventOffer and EventOfferCancelled are events of a collection's offers (made; cancelled
	// or expired), in its activity feed; they name no NFT, so no NFT's history has them.
	EventOffer          = "offer"
	EventOfferCancelled = "offer-cancelled"
)

// nftActivity is one event of an NFT's history: the update that changed it.
type nftActivity struct {
	bun.BaseModel `bun:"table:nft_activity"`

	ID           int64       `bun:"id,pk,autoincrement"`
	NFTID        string      `bun:"nft_id"`
	CollectionID string      `bun:"collection_id"`
	UpdateID     string      `bun:"update_id"`
	Kind         string      `bun:"kind"`
	From         *string     `bun:"from_party"`
	To           *string     `bun:"to_party"`
	Price        *Amount     `bun:"price"`
	Currency     *Instrument `bun:"currency"`
	At           Timestamp   `bun:"at"`
	OfferCID     *string     `bun:"offer_cid"` // the offer of an offer's event

	// LedgerOffset is its update's offset, which the database sets as the update commits
	// (migration activity_offsets): bun never writes it.
	LedgerOffset int64 `bun:"ledger_offset,scanonly"`
	// LogIndex is its update's index in the transparency log, read with the event
	// (withLogIndex); nil for an update the log has no entry of yet.
	LogIndex *int64 `bun:"log_index,scanonly"`
	// OfferSerial is the NFT an item offer's event names, read with the event (the activity
	// feed); nil otherwise.
	OfferSerial *int `bun:"offer_serial,scanonly"`
}

// NFTView is an NFT as the API shows it.
type NFTView struct {
	ContractID   string
	CollectionID string
	Serial       int
	nftmeta.Fields
	Traits    []Trait
	Owner     string
	Listing   *ListingView
	BestOffer *BestOffer // the best open offer it can be accepted into (the offer book)
}

// ListingView is an NFT's current listing.
type ListingView struct {
	CID       string
	Seller    string
	Price     Amount
	Currency  Instrument
	ExpiresAt *Timestamp
}

// NFTEvent is one event of an NFT's history.
type NFTEvent struct {
	UpdateID string
	LogIndex *int64 // the update's index in the transparency log; nil while the log has no entry of it
	Kind     string
	At       Timestamp
	From     *string
	To       *string
	Price    *Amount
	Currency *Instrument
}

// NFTDetail is an NFT with its latest history, newest first.
type NFTDetail struct {
	NFTView
	History []NFTEvent
}

// listedAt tells whether the item has a listing that has not expired at now. A listing past
// its expiry is unlisted for every read, before the sweeper archives it too.
func (it *nftItem) listedAt(now time.Time) bool {
	return it.ListingCID != nil && (it.ListExpires == nil || now.Before(it.ListExpires.Time))
}

// view is the item as the API shows it at now.
func (it *nftItem) view(now time.Time) NFTView {
	v := NFTView{ContractID: it.ContractID, CollectionID: it.CollectionID, Serial: it.Serial, Fields: it.Meta, Owner: it.Owner, Traits: []Trait{}}
	_ = json.Unmarshal([]byte(it.Traits), &v.Traits)
	if it.listedAt(now) {
		v.Listing = &ListingView{CID: *it.ListingCID, Seller: it.Owner, Price: *it.ListPrice, Currency: *it.ListCurrency, ExpiresAt: it.ListExpires}
	}
	return v
}

// historyLength is how many events an NFT's detail carries.
const historyLength = 100

// NFTByContract returns the NFT a contract id names, as it is now, with its 100 latest
// events. Any contract id the NFT ever had names it; a burned NFT is not_found.
func (s *Store) NFTByContract(ctx context.Context, contractID string) (*NFTDetail, error) {
	notFound := Errorf(CodeNotFound, "no live NFT has contract %s", truncate(contractID, 80))
	var ids []string
	if err := s.db.NewSelect().Model((*NFT)(nil)).Column("nft_id").Where("cid = ?", contractID).Scan(ctx, &ids); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, notFound
	}
	it, err := s.liveItem(ctx, ids[0])
	if err != nil {
		if ErrorCode(err) == CodeNotFound {
			return nil, notFound // burned
		}
		return nil, err
	}
	var acts []nftActivity
	sel := withLogIndex(s.db.NewSelect().Model(&acts).ColumnExpr("?TableAlias.*"), "update_id")
	if err := sel.Where("nft_id = ?", it.NFTID).OrderExpr("id DESC").Limit(historyLength).Scan(ctx); err != nil {
		return nil, err
	}
	v, err := s.viewWithBestOffer(ctx, it)
	if err != nil {
		return nil, err
	}
	return &NFTDetail{NFTView: v, History: eventsOf(acts)}, nil
}

// NFTByRef returns the NFT a collection and serial name, as it is now; not_found when it was
// burned or never minted.
func (s *Store) NFTByRef(ctx context.Context, ref NFTRef) (*NFTView, error) {
	it, err := s.liveItem(ctx, ref.nftID())
	if err != nil {
		return nil, err
	}
	v, err := s.viewWithBestOffer(ctx, it)
	return &v, err
}

// viewWithBestOffer is the item as the API shows it now, with its best offer.
func (s *Store) viewWithBestOffer(ctx context.Context, it *nftItem) (NFTView, error) {
	now := s.now()
	vs := []NFTView{it.view(now)}
	_, err := s.bestOffers(ctx, it.CollectionID, vs, now)
	return vs[0], err
}

// itemRead is a live NFT's read model by its nft_id.
var itemRead = &preparedRead{model: (*nftItem)(nil), n: 1, where: func(q *bun.SelectQuery, args []any) *bun.SelectQuery {
	return q.Where("nft_id = ?", args[0])
}}

// liveItem reads a live NFT's read model by its nft_id, or not_found.
func (s *Store) liveItem(ctx context.Context, nftID string) (*nftItem, error) {
	it, err := selectFirst[nftItem](ctx, s, s.db, itemRead, nftID)
	if err == nil && it == nil {
		return nil, Errorf(CodeNotFound, "no live NFT %s", truncate(nftID, 100))
	}
	return it, err
}

// itemOfContractRead is the read model of the NFT whose contract (live or not) has a cid.
var itemOfContractRead = &preparedRead{model: (*nftItem)(nil), n: 1, where: func(q *bun.SelectQuery, args []any) *bun.SelectQuery {
	return q.Where("nft_id = (SELECT nft_id FROM nfts WHERE cid = ?)", args[0])
}}

// liveItemOf reads the item of the active NFT contract cid, which must be the owner's: one
// read where the item names cid as its live contract and owner as its owner, and otherwise
// liveNFT's answer (not_found, conflict, party_mismatch), then the item, as two reads.
func (s *Store) liveItemOf(ctx context.Context, cid, owner string) (*nftItem, error) {
	it, err := selectFirst[nftItem](ctx, s, s.db, itemOfContractRead, cid)
	if err != nil {
		return nil, err
	}
	if it != nil && it.ContractID == cid && it.Owner == owner {
		return it, nil
	}
	n, err := s.liveNFT(ctx, cid, owner)
	if err != nil {
		return nil, err
	}
	return s.liveItem(ctx, n.NFTID)
}

// NFTSort orders a collection's NFTs.
type NFTSort string

const (
	SortSerial    NFTSort = "serial"
	SortPriceAsc  NFTSort = "price_asc"
	SortPriceDesc NFTSort = "price_desc"
)

// ParseNFTSort accepts serial (the default), price_asc or price_desc.
func ParseNFTSort(v string) (NFTSort, error) {
	return parseChoice("sort", v, SortSerial, SortPriceAsc, SortPriceDesc)
}

// NFTFilter narrows a collection's NFTs. Values of one trait type are OR-ed, types AND-ed.
type NFTFilter struct {
	Traits   map[string][]string
	Listed   bool
	MinPrice string // a decimal of the collection's currency; implies listed
	MaxPrice string
	Owner    string
}

// ParseTraitFilters reads repeated "TYPE:VALUE" parameters.
func ParseTraitFilters(vs []string) (map[string][]string, error) {
	if len(vs) > maxTraitsPerItem {
		return nil, Errorf(CodeInvalidRequest, "at most %d trait filters", maxTraitsPerItem)
	}
	out := map[string][]string{}
	for _, v := range vs {
		typ, val, ok := strings.Cut(v, ":")
		if !ok || typ == "" || val == "" || len(typ) > maxTraitText || len(val) > maxTraitText {
			return nil, Errorf(CodeInvalidRequest, "trait filter %q must be TYPE:VALUE", truncate(v, 80))
		}
		out[typ] = append(out[typ], val)
	}
	return out, nil
}

// nftKey is an NFT's keyset position in one sort: the sort key (empty for serial) and serial.
type nftKey struct {
	K string `json:"k,omitempty"`
	S int    `json:"s"`
}

// nftPageKey names one page of a collection's NFTs.
type nftPageKey struct {
	collection string
	sort       NFTSort
	filter     string // NFTFilter.key
	req        PageRequest
}

// maxCachedNFTs bounds the NFTs kept in cached pages; past it, the cache starts over. A page
// the cache does not hold costs a read of the NFT index, so it keeps only the pages that are
// asked for again and again (each NFT with its rendered JSON is about 1 KB).
const maxCachedNFTs = 10_000

// NFTs lists a collection's live NFTs matching f, in order: by serial, or by listing price
// with unlisted NFTs last (by serial). A page is kept in memory until a write to the
// collection commits, one of its listings expires, or Config.PageCacheTTL passes.
func (s *Store) NFTs(ctx context.Context, collectionID string, f NFTFilter, sort NFTSort, r PageRequest) (Page[NFTView], error) {
	c, err := s.collectionIdentityOf(ctx, collectionID)
	if err != nil {
		return Page[NFTView]{}, err
	}
	k := nftPageKey{collection: c.ID, sort: sort, filter: f.key(), req: r}
	now := s.now()
	return s.nftPages.Get(ctx, k, c.ID, now, func(seq uint64) (Page[NFTView], time.Time, int, error) {
		until, err := nextListingExpiry(ctx, s, s.nftPages, c.ID, seq, now)
		if err != nil {
			return Page[NFTView]{}, until, 0, err
		}
		page, err := s.readNFTs(ctx, c, f, sort, r, now)
		if err != nil {
			return page, until, 0, err
		}
		offerUntil, err := s.bestOffers(ctx, c.ID, page.Items, now)
		if !offerUntil.IsZero() && (until.IsZero() || offerUntil.Before(until)) {
			until = offerUntil // the page shows an offer until it expires
		}
		keyset.Share(&page)
		return page, until, len(page.Items), err
	})
}

// nextListingExpiry returns when the first live listing of the collection (of every
// collection, for "") expires after now, or zero when none will: until then, what is listed
// changes only by writes. It is kept in cache c, with the pages of that scope, read since
// seq.
func nextListingExpiry[K comparable, P any](ctx context.Context, s *Store, c *pagecache.Cache[K, P], collectionID string, seq uint64, now time.Time) (time.Time, error) {
	if c.Off() {
		return time.Time{}, nil // the cache is off: nothing is kept until then
	}
	if collectionID != "" && s.nftIndex.ready.Load() {
		if ci := s.nftIndex.index.Collection(collectionID); ci != nil {
			return ci.NextExpiry(now), nil
		}
		return time.Time{}, nil
	}
	if until, ok := c.Horizon(collectionID, now); ok {
		return until, nil
	}
	read := time.Now()
	until, err := s.readNextListingExpiry(ctx, collectionID, now)
	if err == nil {
		c.KeepHorizon(collectionID, seq, read, until)
	}
	return until, err
}

func (s *Store) readNextListingExpiry(ctx context.Context, collectionID string, now time.Time) (time.Time, error) {
	var next []Listing
	sel := s.db.NewSelect().Model(&next).Column("expires_at").Where("consumed_update IS NULL").Where("expires_at IS NOT NULL").
		Where("expires_at > ?", At(now))
	if collectionID != "" {
		sel = sel.Where("collection_id = ?", collectionID)
	}
	if err := sel.Order("expires_at").Limit(1).Scan(ctx); err != nil || len(next) == 0 {
		return time.Time{}, err
	}
	return next[0].ExpiresAt.Time, nil
}

// readNFTs reads one page of NFTs as they are at now: from the NFT index once it is built,
// else by SQL.
func (s *Store) readNFTs(ctx context.Context, c collectionIdentity, f NFTFilter, sort NFTSort, r PageRequest, at time.Time) (Page[NFTView], error) {
	nq, q, err := s.startNFTPage(ctx, c, f, sort, r)
	if err != nil {
		return Page[NFTView]{}, err
	}
	if !s.nftIndex.ready.Load() {
		return s.queryNFTs(ctx, c.ID, nq, q, at)
	}
	var rows []*nftindex.Entry
	if ci := s.nftIndex.index.Collection(c.ID); ci != nil {
		rows = ci.Page(nq.indexQuery(q, int(s.nftIndex.sortUnder.Load())), at)
	}
	page, err := finish(ctx, s, q, rows, func(n *nftindex.Entry) nftKey {
		switch {
		case sort == SortSerial:
			return nftKey{S: int(n.Serial)}
		case !n.ListedAt(at):
			return nftKey{K: noKey, S: int(n.Serial)}
		case sort == SortPriceAsc:
			return nftKey{K: n.Listing.AscKey, S: int(n.Serial)}
		}
		return nftKey{K: n.Listing.DescKey, S: int(n.Serial)}
	})
	if err != nil {
		return Page[NFTView]{}, err
	}
	out := Page[NFTView]{Items: make([]NFTView, len(page.Items)), Cursor: page.Cursor, ItemCursors: page.ItemCursors}
	for i, n := range page.Items {
		out.Items[i] = indexView(n, c.ID, at)
	}
	return out, nil
}

// nftQuery is a page request on a collection's NFTs, checked and with its prices as sort keys.
type nftQuery struct {
	filter     NFTFilter
	sort       NFTSort
	onlyListed bool
	minKey     string // "" for no bound
	maxKey     string
	minPrice   *Amount
	maxPrice   *Amount
}

// startNFTPage checks a request for a page of a collection's NFTs and decodes its cursor.
func (s *Store) startNFTPage(ctx context.Context, c collectionIdentity, f NFTFilter, sort NFTSort, r PageRequest) (*nftQuery, *keyset.Query[nftKey], error) {
	nq := &nftQuery{filter: f, sort: sort}
	for _, p := range []struct {
		name, v string
		dst     **Amount
	}{{"minPrice", f.MinPrice, &nq.minPrice}, {"maxPrice", f.MaxPrice, &nq.maxPrice}} {
		if p.v == "" {
			continue
		}
		a, err := parseDecimal(p.v, c.Currency.Decimals())
		if err != nil {
			return nil, nil, Errorf(CodeInvalidRequest, "%s: %s", p.name, ErrorMessage(err))
		}
		*p.dst = &a
	}
	if nq.minPrice != nil {
		nq.minKey = ascKey(*nq.minPrice)
	}
	if nq.maxPrice != nil {
		nq.maxKey = ascKey(*nq.maxPrice)
	}
	nq.onlyListed = f.Listed || nq.minPrice != nil || nq.maxPrice != nil
	if f.Owner != "" {
		if err := checkPartyID("owner", f.Owner); err != nil {
			return nil, nil, err
		}
	}
	q, err := startPage[nftKey](ctx, s, "nfts:"+c.ID+":"+string(sort)+":"+f.fingerprint(), r)
	if err != nil {
		return nil, nil, err
	}
	return nq, q, nil
}

// queryNFTs reads one page of NFTs by SQL, as they are at now: the reference the NFT index
// answers exactly as.
func (s *Store) queryNFTs(ctx context.Context, collectionID string, nq *nftQuery, q *keyset.Query[nftKey], at time.Time) (Page[NFTView], error) {
	f, sort, minPrice, maxPrice, onlyListed := nq.filter, nq.sort, nq.minPrice, nq.maxPrice, nq.onlyListed
	now := At(at)
	// filtered is the query of the collection's NFTs that match f, in no order yet.
	filtered := func() *bun.SelectQuery {
		sel := s.db.NewSelect().Model((*nftItem)(nil)).Where("collection_id = ?", collectionID)
		for _, typ := range sortedKeys(f.Traits) {
			sel = sel.Where("serial IN (?)", s.db.NewSelect().Model((*nftTrait)(nil)).Column("serial").
				Where("collection_id = ?", collectionID).Where("trait_type = ?", typ).Where("trait_value IN (?)", bun.In(f.Traits[typ])))
		}
		if f.Owner != "" {
			sel = sel.Where("owner = ?", f.Owner)
		}
		return sel
	}
	// listed narrows a query to NFTs whose listing has not expired; unlisted to the others.
	listed := func(sel *bun.SelectQuery) *bun.SelectQuery {
		return sel.Where("price_asc_key <> ?", noKey).Where("(list_expires IS NULL OR list_expires > ?)", now)
	}
	unlisted := func(sel *bun.SelectQuery) *bun.SelectQuery {
		return sel.Where("(price_asc_key = ? OR list_expires <= ?)", noKey, now)
	}
	var rows []nftItem
	var key func(it nftItem) nftKey
	col := map[NFTSort]string{SortPriceAsc: "price_asc_key", SortPriceDesc: "price_desc_key"}[sort]
	if col == "" {
		sel := filtered()
		if onlyListed {
			sel = listed(sel)
		}
		if minPrice != nil {
			sel = sel.Where("price_asc_key >= ?", ascKey(*minPrice))
		}
		if maxPrice != nil {
			sel = sel.Where("price_asc_key <= ?", ascKey(*maxPrice))
		}
		sel = q.Seek(sel, false, []string{"serial"}, q.At(func(k nftKey) []any { return []any{k.S} }))
		if err := sel.Limit(q.Fetch()).Scan(ctx, &rows); err != nil {
			return Page[NFTView]{}, err
		}
		key = func(it nftItem) nftKey { return nftKey{S: it.Serial} }
	} else {
		// A price sort reads two runs: the NFTs listed now by price, then (unless the filter
		// wants listed ones only) the rest by serial, expired listings among them. A cursor in
		// the second run has the key noKey. A backward read takes the runs in reverse order,
		// each from its end, so it costs what a forward read costs.
		runs := []bool{false} // whether the run is the rest
		if !onlyListed {
			runs = append(runs, true)
		}
		if q.Backward {
			slices.Reverse(runs)
		}
		started := q.From == nil
		for _, rest := range runs {
			if int64(len(rows)) >= q.Fetch() {
				break
			}
			// The run the cursor is in starts the read; runs before it in the read's direction are skipped.
			inRun := q.From != nil && (q.From.K == noKey) == rest
			if !started && !inRun {
				continue
			}
			started = true
			var sel *bun.SelectQuery
			var at []any
			if rest {
				sel = unlisted(filtered())
				if inRun {
					at = []any{q.From.S}
				}
				sel = q.Seek(sel, false, []string{"serial"}, at)
			} else {
				sel = listed(filtered())
				if minPrice != nil {
					sel = sel.Where("price_asc_key >= ?", ascKey(*minPrice))
				}
				if maxPrice != nil {
					sel = sel.Where("price_asc_key <= ?", ascKey(*maxPrice))
				}
				if inRun {
					at = []any{q.From.K, q.From.S}
				}
				sel = q.Seek(sel, false, []string{col, "serial"}, at)
			}
			var run []nftItem
			if err := sel.Limit(q.Fetch()-int64(len(rows))).Scan(ctx, &run); err != nil {
				return Page[NFTView]{}, err
			}
			rows = append(rows, run...)
		}
		key = func(it nftItem) nftKey {
			switch {
			case !it.listedAt(now.Time):
				return nftKey{K: noKey, S: it.Serial}
			case sort == SortPriceAsc:
				return nftKey{K: it.PriceAscKey, S: it.Serial}
			}
			return nftKey{K: it.PriceDescKey, S: it.Serial}
		}
	}
	page, err := finish(ctx, s, q, rows, key)
	if err != nil {
		return Page[NFTView]{}, err
	}
	out := Page[NFTView]{Items: make([]NFTView, len(page.Items)), Cursor: page.Cursor, ItemCursors: page.ItemCursors}
	for i := range page.Items {
		out.Items[i] = page.Items[i].view(now.Time)
	}
	return out, nil
}

// Key names what the filter selects: two filters with equal keys select the same NFTs.
func (f NFTFilter) Key() string { return f.key() }

// key writes the filter out unambiguously (every part quoted), for the page cache: filters
// that differ, even by a value that holds the separators [NFTFilter.fingerprint] uses, have
// different keys.
func (f NFTFilter) key() string {
	var b []byte
	for _, typ := range sortedKeys(f.Traits) {
		b = strconv.AppendQuote(b, typ)
		for _, v := range f.Traits[typ] {
			b = strconv.AppendQuote(append(b, ' '), v)
		}
		b = append(b, ';')
	}
	b = strconv.AppendBool(b, f.Listed)
	for _, v := range []string{f.MinPrice, f.MaxPrice, f.Owner} {
		b = strconv.AppendQuote(append(b, ' '), v)
	}
	return string(b)
}

// fingerprint names the filter inside a cursor, so a cursor is only read by the same query.
func (f NFTFilter) fingerprint() string {
	var b strings.Builder
	for _, typ := range sortedKeys(f.Traits) {
		b.WriteString(typ + "=" + strings.Join(f.Traits[typ], "|") + ";")
	}
	if f.Listed {
		b.WriteString("listed;")
	}
	b.WriteString("min=" + f.MinPrice + ";max=" + f.MaxPrice + ";")
	b.WriteString("owner=" + f.Owner)
	return hashText(b.String())
}
