package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"marketd/store/nftmeta"
)

// Collection is a set of NFTs one creator issues, with its live statistics. A collection
// trades in its one currency and pays its creator royaltyBps of every sale.
type Collection struct {
	bun.BaseModel `bun:"table:collections"`

	ID            string     `bun:"collection_id,pk"`
	Slug          string     `bun:"slug"`
	Name          string     `bun:"name"`
	Description   string     `bun:"description"`
	Image         string     `bun:"image"`
	Creator       string     `bun:"creator"`
	Currency      Instrument `bun:"currency"`
	RoyaltyBps    int        `bun:"royalty_bps"`
	Supply        int        `bun:"supply"`
	Minted        int        `bun:"minted"`
	Burned        int        `bun:"burned"`
	FloorPrice    *Amount    `bun:"floor_price"`
	FloorKey      string     `bun:"floor_key"`
	ListedCount   int        `bun:"listed_count"`
	Owners        int        `bun:"owners"`
	Volume        Amount     `bun:"volume"`
	TopOffer      *Amount    `bun:"top_offer"` // the best open collection-wide offer
	Sales         int        `bun:"sales"`     // NFTs ever sold (collection_days, nft_stats.go)
	VolumeDescKey string     `bun:"volume_desc_key"`
	CreatedAt     Timestamp  `bun:"created_at"`

	Phases []MintPhase `bun:"-"`
}

// MintPhase is a window in which a collection mints at one price, with a per-party limit,
// an optional supply of its own and an optional allow-list.
type MintPhase struct {
	bun.BaseModel `bun:"table:mint_phases"`

	CollectionID  string    `bun:"collection_id,pk"`
	Name          string    `bun:"name,pk"`
	Price         Amount    `bun:"price"`
	Start         Timestamp `bun:"start_at"`
	End           Timestamp `bun:"end_at"`
	PerPartyLimit int       `bun:"per_party_limit"`
	Supply        *int      `bun:"supply"`
	Minted        int       `bun:"minted"`
	AllowList     bool      `bun:"allow_list"`
}

// ActiveAt tells whether the phase mints at t: from its start, until its end.
func (p *MintPhase) ActiveAt(t time.Time) bool {
	return !t.Before(p.Start.Time) && t.Before(p.End.Time)
}

// Trait is one type/value pair of an NFT.
type Trait struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

// ItemSpec is what one serial of a collection becomes when minted.
type ItemSpec struct {
	nftmeta.Fields
	Traits []Trait `json:"traits"`
}

// collectionItem is an ItemSpec kept for its serial until it is minted.
type collectionItem struct {
	bun.BaseModel `bun:"table:collection_items"`

	CollectionID string         `bun:"collection_id,pk"`
	Serial       int            `bun:"serial,pk"`
	Meta         nftmeta.Fields `bun:"meta"`   // a JSON object
	Traits       string         `bun:"traits"` // JSON array of Trait
}

// CollectionSpec is what the operator states to create a collection.
type CollectionSpec struct {
	Slug        string
	Name        string
	Description string
	Image       string
	Creator     string
	Currency    Instrument
	RoyaltyBps  int
	Supply      int
	Items       []ItemSpec // one per serial, or none for "Name #serial" with the collection's image
}

// Bounds of what a collection may state.
const (
	MaxRoyaltyBps     = 5000
	MaxSupply         = 1_000_000
	maxTraitsPerItem  = 32
	maxTraitText      = 64
	maxNameText       = 200
	maxDescription    = 2000
	maxURLText        = 1000
	collectionIDBytes = 10
)

var slugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

func newObjectID(prefix string, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return prefix + hex.EncodeToString(b)
}

// checkText refuses an empty (when required) or overlong text field.
func checkText(field, v string, max int, required bool) error {
	if required && strings.TrimSpace(v) == "" {
		return Errorf(CodeInvalidRequest, "%s is required", field)
	}
	if len(v) > max || strings.ContainsRune(v, 0) {
		return Errorf(CodeInvalidRequest, "%s must be at most %d bytes of text", field, max)
	}
	return nil
}

func checkTraits(traits []Trait) error {
	if len(traits) > maxTraitsPerItem {
		return Errorf(CodeInvalidRequest, "an item has at most %d traits", maxTraitsPerItem)
	}
	seen := map[Trait]bool{}
	for _, tr := range traits {
		if err := checkText("trait type", tr.Type, maxTraitText, true); err != nil {
			return err
		}
		if err := checkText("trait value", tr.Value, maxTraitText, true); err != nil {
			return err
		}
		if strings.Contains(tr.Type, ":") {
			return Errorf(CodeInvalidRequest, "trait type %q must not contain ':'", tr.Type)
		}
		if seen[tr] {
			return Errorf(CodeInvalidRequest, "trait %s:%s is stated twice", tr.Type, tr.Value)
		}
		seen[tr] = true
	}
	return nil
}

// CreateCollection registers a collection and the items its serials will become.
func (s *Store) CreateCollection(ctx context.Context, spec CollectionSpec) (*Collection, error) {
	if !slugPattern.MatchString(spec.Slug) {
		return nil, Errorf(CodeInvalidRequest, "slug %q must be 1 to 64 of [a-z0-9-], starting with a letter or digit", truncate(spec.Slug, 80))
	}
	for _, f := range []struct {
		field, v string
		max      int
		required bool
	}{{"name", spec.Name, maxNameText, true}, {"description", spec.Description, maxDescription, false}, {"image", spec.Image, maxURLText, false}} {
		if err := checkText(f.field, f.v, f.max, f.required); err != nil {
			return nil, err
		}
	}
	if _, err := ParseInstrument(string(spec.Currency)); err != nil {
		return nil, err
	}
	if spec.RoyaltyBps < 0 || spec.RoyaltyBps > MaxRoyaltyBps {
		return nil, Errorf(CodeInvalidRequest, "royalty must be 0 to %d basis points", MaxRoyaltyBps)
	}
	if spec.Supply < 1 || spec.Supply > MaxSupply {
		return nil, Errorf(CodeInvalidRequest, "supply must be 1 to %d", MaxSupply)
	}
	if len(spec.Items) > 0 && len(spec.Items) != spec.Supply {
		return nil, Errorf(CodeInvalidRequest, "the items file has %d items for a supply of %d; give one per serial", len(spec.Items), spec.Supply)
	}
	if _, err := s.Party(ctx, spec.Creator); err != nil {
		return nil, err
	}
	items := make([]collectionItem, spec.Supply)
	for i := range items {
		it := ItemSpec{Fields: nftmeta.Fields{Name: spec.Name + " #" + itoa(i+1), Image: spec.Image}}
		if len(spec.Items) > 0 {
			it = spec.Items[i]
			for _, t := range it.Texts() {
				if err := checkText("item "+t.JSON, t.Value, t.Max, t.Required); err != nil {
					return nil, err
				}
			}
			if err := checkTraits(it.Traits); err != nil {
				return nil, err
			}
		}
		if it.Traits == nil {
			it.Traits = []Trait{}
		}
		traits, err := json.Marshal(it.Traits)
		if err != nil {
			return nil, err
		}
		items[i] = collectionItem{Serial: i + 1, Meta: it.Fields, Traits: string(traits)}
	}
	c := &Collection{
		ID: newObjectID("col_", collectionIDBytes), Slug: spec.Slug, Name: spec.Name, Description: spec.Description,
		Image: spec.Image, Creator: spec.Creator, Currency: spec.Currency, RoyaltyBps: spec.RoyaltyBps,
		Supply: spec.Supply, FloorKey: noKey, Volume: Zero, VolumeDescKey: descKey(Zero),
	}
	err := s.inTx(ctx, func(tx *Tx) error {
		c.CreatedAt = At(tx.Now())
		if _, err := tx.NewInsert().Model(c).Exec(ctx); err != nil {
			if isUniqueViolation(err) {
				return Errorf(CodeConflict, "a collection with slug %q exists already", spec.Slug)
			}
			return err
		}
		for i := range items {
			items[i].CollectionID = c.ID
		}
		for start := 0; start < len(items); start += 1000 {
			batch := items[start:min(start+1000, len(items))]
			if _, err := tx.NewInsert().Model(&batch).Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	c.Phases = []MintPhase{}
	return c, nil
}

// PhaseSpec is what the operator states to add a mint phase.
type PhaseSpec struct {
	Collection    string // id or slug
	Name          string
	Price         string // a decimal of the collection's currency; "0" mints for free
	Start, End    time.Time
	PerPartyLimit int
	Supply        *int
	Allow         []string // parties on the allow-list; none means anyone may mint
}

// AddPhase adds a mint phase to a collection. Phases of one collection may not overlap, so
// at any instant at most one is active.
func (s *Store) AddPhase(ctx context.Context, spec PhaseSpec) (*MintPhase, error) {
	c, err := s.collectionByIDOrSlug(ctx, spec.Collection)
	if err != nil {
		return nil, err
	}
	if err := checkText("phase name", spec.Name, maxTraitText, true); err != nil {
		return nil, err
	}
	price, err := parseDecimal(spec.Price, c.Currency.Decimals())
	if err != nil {
		return nil, err
	}
	if !spec.End.After(spec.Start) {
		return nil, Errorf(CodeInvalidRequest, "a phase must end after it starts")
	}
	if spec.PerPartyLimit < 1 {
		return nil, Errorf(CodeInvalidRequest, "the per-party limit must be at least 1")
	}
	if spec.Supply != nil && (*spec.Supply < 1 || *spec.Supply > c.Supply) {
		return nil, Errorf(CodeInvalidRequest, "a phase supply must be 1 to the collection's supply (%d)", c.Supply)
	}
	for _, p := range spec.Allow {
		if _, err := s.Party(ctx, p); err != nil {
			return nil, err
		}
	}
	ph := &MintPhase{
		CollectionID: c.ID, Name: spec.Name, Price: price, Start: At(spec.Start.Truncate(time.Second)), End: At(spec.End.Truncate(time.Second)),
		PerPartyLimit: spec.PerPartyLimit, Supply: spec.Supply, AllowList: len(spec.Allow) > 0,
	}
	err = s.inTx(ctx, func(tx *Tx) error {
		var phases []MintPhase
		if err := tx.NewSelect().Model(&phases).Where("collection_id = ?", c.ID).Scan(ctx); err != nil {
			return err
		}
		for _, p := range phases {
			if p.Name == ph.Name {
				return Errorf(CodeConflict, "collection %s has a phase %q already", c.Slug, ph.Name)
			}
			if ph.Start.Before(p.End.Time) && p.Start.Before(ph.End.Time) {
				return Errorf(CodeConflict, "the phase overlaps phase %q (%s to %s); phases of a collection may not overlap",
					p.Name, p.Start.Format(time.RFC3339), p.End.Format(time.RFC3339))
			}
		}
		if _, err := tx.NewInsert().Model(ph).Exec(ctx); err != nil {
			return err
		}
		if len(spec.Allow) == 0 {
			return nil
		}
		rows := make([]phaseAllow, 0, len(spec.Allow))
		for _, p := range spec.Allow {
			rows = append(rows, phaseAllow{CollectionID: c.ID, Phase: ph.Name, PartyID: p})
		}
		_, err := tx.NewInsert().Model(&rows).On("CONFLICT DO NOTHING").Exec(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ph, nil
}

type phaseAllow struct {
	bun.BaseModel `bun:"table:phase_allow"`

	CollectionID string `bun:"collection_id,pk"`
	Phase        string `bun:"phase,pk"`
	PartyID      string `bun:"party_id,pk"`
}

type phaseMints struct {
	bun.BaseModel `bun:"table:phase_mints"`

	CollectionID string `bun:"collection_id,pk"`
	Phase        string `bun:"phase,pk"`
	PartyID      string `bun:"party_id,pk"`
	Minted       int    `bun:"minted"`
}

// collectionByIDOrSlug finds a collection by either of its names, without phases.
func (s *Store) collectionByIDOrSlug(ctx context.Context, ref string) (*Collection, error) {
	c := new(Collection)
	err := s.db.NewSelect().Model(c).Where("collection_id = ?", ref).WhereOr("slug = ?", ref).Limit(1).Scan(ctx)
	if isNoRows(err) {
		return nil, Errorf(CodeNotFound, "no collection %q", truncate(ref, 80))
	}
	return c, err
}

// collectionIdentity is what never changes about a collection: its id (and slug, which
// finds it), currency, name, creator and royalty, set when it is created.
type collectionIdentity struct {
	ID         string
	Currency   Instrument
	Name       string
	Creator    string
	RoyaltyBps int
}

// collectionIdentityOf resolves a collection's id or slug to its identity, from memory once
// seen: every NFT page needs it, and so does every sale's split, and it never changes.
func (s *Store) collectionIdentityOf(ctx context.Context, ref string) (collectionIdentity, error) {
	if v, ok := s.collectionIDs.Load(ref); ok {
		return v.(collectionIdentity), nil
	}
	c, err := s.collectionByIDOrSlug(ctx, ref)
	if err != nil {
		return collectionIdentity{}, err
	}
	id := collectionIdentity{ID: c.ID, Currency: c.Currency, Name: c.Name, Creator: c.Creator, RoyaltyBps: c.RoyaltyBps}
	s.collectionIDs.Store(c.ID, id)
	s.collectionIDs.Store(c.Slug, id)
	return id, nil
}

// CollectionByID returns a collection with its phases, or not_found. Like a page of the
// collections list, it is kept in memory until a write commits, a listing expires or the
// page cache's TTL passes.
func (s *Store) CollectionByID(ctx context.Context, id string) (*Collection, error) {
	return s.cachedCollection(ctx, "id:"+id, "collection_id = ?", id)
}

// CollectionBySlug returns a collection with its phases, or not_found, kept as CollectionByID.
func (s *Store) CollectionBySlug(ctx context.Context, slug string) (*Collection, error) {
	return s.cachedCollection(ctx, "slug:"+slug, "slug = ?", slug)
}

func (s *Store) cachedCollection(ctx context.Context, one, where, v string) (*Collection, error) {
	now := s.now()
	page, err := s.collectionPages.Get(ctx, collectionPageKey{one: one}, "", now, func(seq uint64) (Page[Collection], time.Time, int, error) {
		until, err := nextListingExpiry(ctx, s, s.collectionPages, "", seq, now)
		if err != nil {
			return Page[Collection]{}, until, 0, err
		}
		c, err := s.collectionWhere(ctx, where, v)
		if err != nil {
			return Page[Collection]{}, until, 0, err
		}
		return Page[Collection]{Items: []Collection{*c}}, until, 1, nil
	})
	if err != nil {
		return nil, err
	}
	c := page.Items[0] // a copy: the cached page is shared
	return &c, nil
}

func (s *Store) collectionWhere(ctx context.Context, where, v string) (*Collection, error) {
	c := new(Collection)
	err := s.db.NewSelect().Model(c).Where(where, v).Scan(ctx)
	if isNoRows(err) {
		return nil, Errorf(CodeNotFound, "no collection %q", truncate(v, 80))
	}
	if err != nil {
		return nil, err
	}
	if err := s.db.NewSelect().Model(&c.Phases).Where("collection_id = ?", c.ID).Order("start_at").Scan(ctx); err != nil {
		return nil, err
	}
	if c.Phases == nil {
		c.Phases = []MintPhase{}
	}
	cs := []Collection{*c}
	if err := s.withoutExpired(ctx, cs); err != nil {
		return nil, err
	}
	return &cs[0], nil
}

// dueCollections returns those of the collections ids (all when ids is nil) that have active
// listings past their expiry: the partial index on the expiry holds only such listings and
// the ones still to expire, so this is cheap while the sweeper keeps up.
//
// It reads the live listings past their expiry, a handful the sweeper archives every second,
// and keeps those of ids in Go: narrowed by collection in SQL, SQLite's planner walks the
// collection's every listing instead, a cost that grows with its history.
func (s *Store) dueCollections(ctx context.Context, ids []string) ([]string, error) {
	var due []string
	err := s.db.NewSelect().Model((*Listing)(nil)).ColumnExpr("DISTINCT collection_id").
		Where("consumed_update IS NULL").Where("expires_at IS NOT NULL").Where("expires_at <= ?", At(s.now())).Scan(ctx, &due)
	if ids != nil {
		due = slices.DeleteFunc(due, func(id string) bool { return !slices.Contains(ids, id) })
	}
	return due, err
}

// withoutExpired corrects the floor and listed count of those of cs that have listings past
// their expiry that the sweeper has not archived yet: no read shows an expired listing as
// listed. The sweeper runs every second, so this is rarely more than one indexed look-up.
func (s *Store) withoutExpired(ctx context.Context, cs []Collection) error {
	if len(cs) == 0 {
		return nil
	}
	ids := make([]string, len(cs))
	for i := range cs {
		ids[i] = cs[i].ID
	}
	now := At(s.now())
	due, err := s.dueCollections(ctx, ids)
	if err != nil || len(due) == 0 {
		return err
	}
	for i := range cs {
		c := &cs[i]
		if !slices.Contains(due, c.ID) {
			continue
		}
		live := func() *bun.SelectQuery {
			return s.db.NewSelect().Model((*nftItem)(nil)).Where("collection_id = ?", c.ID).
				Where("price_asc_key <> ?", noKey).Where("(list_expires IS NULL OR list_expires > ?)", now)
		}
		n, err := live().Count(ctx)
		if err != nil {
			return err
		}
		var floor []nftItem
		if err := live().Column("list_price", "price_asc_key").Order("price_asc_key").Limit(1).Scan(ctx, &floor); err != nil {
			return err
		}
		c.ListedCount, c.FloorPrice, c.FloorKey = int(n), nil, noKey
		if len(floor) > 0 {
			c.FloorPrice, c.FloorKey = floor[0].ListPrice, floor[0].PriceAscKey
		}
	}
	return nil
}

// CollectionSort orders the collections list.
type CollectionSort string

const (
	SortNewest CollectionSort = "newest"
	SortVolume CollectionSort = "volume"
	SortFloor  CollectionSort = "floor"
)

// ParseCollectionSort accepts newest (the default), volume or floor.
func ParseCollectionSort(v string) (CollectionSort, error) {
	return parseChoice("sort", v, SortNewest, SortVolume, SortFloor)
}

// collectionKey is a collection's keyset position in one sort.
type collectionKey struct {
	K  string `json:"k"` // the sort column's value (a key string or the creation time)
	ID string `json:"i"`
}

// Collections lists collections: newest first, by volume (largest first) or by floor price
// (lowest first, collections with nothing listed last). Each carries its phases.
func (s *Store) Collections(ctx context.Context, sort CollectionSort, r PageRequest) (Page[Collection], error) {
	k := collectionPageKey{sort: sort, req: r}
	now := s.now()
	return s.collectionPages.Get(ctx, k, "", now, func(seq uint64) (Page[Collection], time.Time, int, error) {
		// A listing that expires changes a floor without a write: a page is kept until then.
		until, err := nextListingExpiry(ctx, s, s.collectionPages, "", seq, now)
		if err != nil {
			return Page[Collection]{}, until, 0, err
		}
		page, err := s.readCollections(ctx, sort, r)
		return page, until, len(page.Items), err
	})
}

func (s *Store) readCollections(ctx context.Context, sort CollectionSort, r PageRequest) (Page[Collection], error) {
	q, err := startPage[collectionKey](ctx, s, "collections:"+string(sort), r)
	if err != nil {
		return Page[Collection]{}, err
	}
	var rows, due []Collection
	sel := s.db.NewSelect().Model(&rows)
	var key func(c Collection) collectionKey
	switch sort {
	case SortVolume:
		sel = q.Seek(sel, false, []string{"volume_desc_key", "collection_id"}, q.At(func(k collectionKey) []any { return []any{k.K, k.ID} }))
		key = func(c Collection) collectionKey { return collectionKey{c.VolumeDescKey, c.ID} }
	case SortFloor:
		// A collection with a listing past its expiry has a stored floor that may count it: such
		// collections (few, while the sweeper keeps up) are ordered by their corrected floor.
		dueIDs, err := s.dueCollections(ctx, nil)
		if err != nil {
			return Page[Collection]{}, err
		}
		if len(dueIDs) > 0 {
			if err := s.db.NewSelect().Model(&due).Where("collection_id IN (?)", bun.In(dueIDs)).Scan(ctx); err != nil {
				return Page[Collection]{}, err
			}
			if err := s.withoutExpired(ctx, due); err != nil {
				return Page[Collection]{}, err
			}
			sel = sel.Where("collection_id NOT IN (?)", bun.In(dueIDs))
		}
		sel = q.Seek(sel, false, []string{"floor_key", "collection_id"}, q.At(func(k collectionKey) []any { return []any{k.K, k.ID} }))
		key = func(c Collection) collectionKey { return collectionKey{c.FloorKey, c.ID} }
	default:
		var at []any
		if q.From != nil {
			created, err := parseInt64(q.From.K)
			if err != nil {
				return Page[Collection]{}, Errorf(CodeInvalidCursor, "the cursor was not issued by this list; start from the first page")
			}
			at = []any{created, q.From.ID}
		}
		sel = q.Seek(sel, true, []string{"created_at", "collection_id"}, at)
		key = func(c Collection) collectionKey { return collectionKey{itoa64(c.CreatedAt.UnixMicro()), c.ID} }
	}
	if err := sel.Limit(q.Fetch()).Scan(ctx); err != nil {
		return Page[Collection]{}, err
	}
	if len(due) > 0 {
		compare := func(a, b collectionKey) int {
			if c := strings.Compare(a.K, b.K); c != 0 {
				return c
			}
			return strings.Compare(a.ID, b.ID)
		}
		for _, c := range due {
			if q.Past(compare, key(c)) {
				rows = append(rows, c)
			}
		}
		// In the read's direction, as the query returned the others.
		slices.SortFunc(rows, func(a, b Collection) int {
			if q.Backward {
				return compare(key(b), key(a))
			}
			return compare(key(a), key(b))
		})
		rows = rows[:min(len(rows), int(q.Fetch()))]
	}
	page, err := finish(ctx, s, q, rows, key)
	if err != nil {
		return page, err
	}
	if err := s.withoutExpired(ctx, page.Items); err != nil {
		return page, err
	}
	return page, s.attachPhases(ctx, page.Items)
}

// CollectionCount counts the collections: the table is small (one row per collection, not
// per NFT), so counting is cheap.
func (s *Store) CollectionCount(ctx context.Context) (int, error) {
	n, err := s.db.NewSelect().Model((*Collection)(nil)).Count(ctx)
	return int(n), err
}

// attachPhases loads the phases of every collection in cs in one query.
func (s *Store) attachPhases(ctx context.Context, cs []Collection) error {
	if len(cs) == 0 {
		return nil
	}
	ids := make([]string, len(cs))
	at := map[string]int{}
	for i := range cs {
		ids[i], at[cs[i].ID] = cs[i].ID, i
		cs[i].Phases = []MintPhase{}
	}
	var phases []MintPhase
	if err := s.db.NewSelect().Model(&phases).Where("collection_id IN (?)", bun.In(ids)).Order("collection_id", "start_at").Scan(ctx); err != nil {
		return err
	}
	for _, p := range phases {
		i := at[p.CollectionID]
		cs[i].Phases = append(cs[i].Phases, p)
	}
	return nil
}

// CollectionsByID returns the collections ids name, with their phases, in two queries; an
// unknown id is absent from the map. It is what a dataloader calls for a page of NFTs.
func (s *Store) CollectionsByID(ctx context.Context, ids []string) (map[string]*Collection, error) {
	out := make(map[string]*Collection, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []Collection
	if err := s.db.NewSelect().Model(&rows).Where("collection_id IN (?)", bun.In(ids)).Scan(ctx); err != nil {
		return nil, err
	}
	if err := s.withoutExpired(ctx, rows); err != nil {
		return nil, err
	}
	if err := s.attachPhases(ctx, rows); err != nil {
		return nil, err
	}
	for i := range rows {
		out[rows[i].ID] = &rows[i]
	}
	return out, nil
}
