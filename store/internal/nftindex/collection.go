package nftindex

import (
	"strings"
	"sync"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/google/btree"
	"github.com/shopspring/decimal"
	"marketd/store/nftmeta"
)

// Trait is one type/value pair of an NFT.
type Trait struct {
	Type  string
	Value string
}

// NFT is one live NFT as the index is given it.
type NFT struct {
	Serial     uint32
	ContractID string
	nftmeta.Fields
	Owner   string
	Traits  []Trait
	Listing *Listing // nil: not listed
}

// Listing is an NFT's listing: what a page shows of it, and its price's places in the two
// price orders. The index keeps it as given; it must not change afterwards.
type Listing struct {
	CID       string
	Price     decimal.Decimal
	Currency  string
	ExpiresAt *time.Time // nil: it does not expire
	// AscKey and DescKey are the price as sort keys: text that orders by value ascending and
	// descending.
	AscKey, DescKey string
}

// Entry is one live NFT as the index keeps it, compactly: its trait values and owner are the
// collection's shared copies. An entry never changes; a change replaces it.
type Entry struct {
	Serial     uint32
	Traits     []*Trait
	ContractID string
	nftmeta.Fields
	Owner   string
	Listing *Listing
}

// ListedAt tells whether the NFT's listing holds at now: a listing ends the instant it
// expires.
func (n *Entry) ListedAt(now time.Time) bool {
	return n.Listing != nil && (n.Listing.ExpiresAt == nil || now.Before(*n.Listing.ExpiresAt))
}

// Collection is the index of one collection's live NFTs. Its methods are safe together:
// writes take its lock, pages and expiries read under it.
type Collection struct {
	mu sync.RWMutex
	id string

	items    []*Entry // by serial
	all      *roaring.Bitmap
	gone     *roaring.Bitmap                       // serials a read found no longer live (Gone)
	traits   map[string]map[string]*roaring.Bitmap // type -> value -> serials
	owners   map[string]*roaring.Bitmap
	listed   *roaring.Bitmap // with a listing, expired or not
	byAsc    *btree.BTreeG[priceEntry]
	byDesc   *btree.BTreeG[priceEntry]
	expiring *btree.BTreeG[expiryEntry] // listings with an expiry
	owned    map[string]string          // each owner's id, kept once
	kinds    map[Trait]*Trait           // each trait value, kept once
}

// priceEntry is a listed NFT's place in one price order: its key, then its serial.
type priceEntry struct {
	key    string
	serial uint32
}

func (a priceEntry) less(b priceEntry) bool {
	if c := strings.Compare(a.key, b.key); c != 0 {
		return c < 0
	}
	return a.serial < b.serial
}

type expiryEntry struct {
	at     int64 // Unix microseconds
	serial uint32
}

func (a expiryEntry) less(b expiryEntry) bool {
	return a.at < b.at || a.at == b.at && a.serial < b.serial
}

// NewCollection returns the empty index of collection id.
func NewCollection(id string) *Collection {
	return &Collection{
		id:       id,
		all:      roaring.New(),
		gone:     roaring.New(),
		traits:   map[string]map[string]*roaring.Bitmap{},
		owners:   map[string]*roaring.Bitmap{},
		listed:   roaring.New(),
		byAsc:    btree.NewG(32, priceEntry.less),
		byDesc:   btree.NewG(32, priceEntry.less),
		expiring: btree.NewG(32, expiryEntry.less),
		owned:    map[string]string{},
		kinds:    map[Trait]*Trait{},
	}
}

// ID is the collection's id.
func (c *Collection) ID() string { return c.id }

// Put sets the NFT of n's serial to n, replacing what the index had for it.
func (c *Collection) Put(n NFT) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.put(&n)
}

// PutFresh puts, in one step, each of ns whose serial the index has never had: it neither
// holds it nor saw it go. (A serial minted once has its first state in ns; any later one came
// from a newer read.)
func (c *Collection) PutFresh(ns []NFT) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range ns {
		if c.fresh(ns[i].Serial) {
			c.put(&ns[i])
		}
	}
}

// Set puts n unless the index has it exactly so already; it tells whether anything changed.
// (An NFT's name, image and traits are fixed when it is minted, so they are not compared.)
func (c *Collection) Set(n NFT) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holds(&n) {
		return false
	}
	c.put(&n)
	return true
}

// Gone takes the NFT of serial out, if the index has it, and notes that it went: PutFresh
// never puts it back. It tells whether the index had it.
func (c *Collection) Gone(serial uint32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	held := int(serial) < len(c.items) && c.items[serial] != nil
	c.remove(serial)
	c.gone.Add(serial)
	return held
}

func (c *Collection) owner(s string) string {
	if v, ok := c.owned[s]; ok {
		return v
	}
	c.owned[s] = s
	return s
}

func (c *Collection) trait(t Trait) *Trait {
	if v, ok := c.kinds[t]; ok {
		return v
	}
	v := &t
	c.kinds[t] = v
	return v
}

// put sets the NFT it describes to it, replacing what the index had for its serial.
func (c *Collection) put(it *NFT) {
	serial := it.Serial
	c.remove(serial)
	n := &Entry{Serial: serial, ContractID: it.ContractID, Fields: it.Fields, Owner: c.owner(it.Owner)}
	n.Traits = make([]*Trait, len(it.Traits))
	for i, t := range it.Traits {
		n.Traits[i] = c.trait(t)
	}
	for int(serial) >= len(c.items) {
		c.items = append(c.items, nil)
	}
	c.items[serial] = n
	c.all.Add(serial)
	for _, t := range n.Traits {
		vs := c.traits[t.Type]
		if vs == nil {
			vs = map[string]*roaring.Bitmap{}
			c.traits[t.Type] = vs
		}
		b := vs[t.Value]
		if b == nil {
			b = roaring.New()
			vs[t.Value] = b
		}
		b.Add(serial)
	}
	o := c.owners[n.Owner]
	if o == nil {
		o = roaring.New()
		c.owners[n.Owner] = o
	}
	o.Add(serial)
	if l := it.Listing; l != nil {
		n.Listing = l
		c.listed.Add(serial)
		c.byAsc.ReplaceOrInsert(priceEntry{l.AscKey, serial})
		c.byDesc.ReplaceOrInsert(priceEntry{l.DescKey, serial})
		if l.ExpiresAt != nil {
			c.expiring.ReplaceOrInsert(expiryEntry{l.ExpiresAt.UnixMicro(), serial})
		}
	}
}

// fresh tells whether the index has never had the serial: neither holds it nor saw it go.
func (c *Collection) fresh(serial uint32) bool {
	held := int(serial) < len(c.items) && c.items[serial] != nil
	return !held && !c.gone.Contains(serial)
}

// holds tells whether the index has the NFT exactly as it describes it.
func (c *Collection) holds(it *NFT) bool {
	if int(it.Serial) >= len(c.items) || c.items[it.Serial] == nil {
		return false
	}
	n := c.items[it.Serial]
	if n.ContractID != it.ContractID || n.Owner != it.Owner || (n.Listing == nil) != (it.Listing == nil) {
		return false
	}
	if l, want := n.Listing, it.Listing; l != nil {
		sameExpiry := (l.ExpiresAt == nil) == (want.ExpiresAt == nil) && (l.ExpiresAt == nil || l.ExpiresAt.Equal(*want.ExpiresAt))
		return l.CID == want.CID && l.AscKey == want.AscKey && l.Currency == want.Currency && sameExpiry
	}
	return true
}

// remove takes the NFT of serial out of the index, if it is there.
func (c *Collection) remove(serial uint32) {
	if int(serial) >= len(c.items) || c.items[serial] == nil {
		return
	}
	n := c.items[serial]
	c.items[serial] = nil
	c.all.Remove(serial)
	for _, t := range n.Traits {
		if b := c.traits[t.Type][t.Value]; b != nil {
			b.Remove(serial)
			if b.IsEmpty() {
				delete(c.traits[t.Type], t.Value)
			}
		}
	}
	if o := c.owners[n.Owner]; o != nil {
		o.Remove(serial)
		if o.IsEmpty() {
			delete(c.owners, n.Owner)
			delete(c.owned, n.Owner)
		}
	}
	if l := n.Listing; l != nil {
		c.listed.Remove(serial)
		c.byAsc.Delete(priceEntry{l.AscKey, serial})
		c.byDesc.Delete(priceEntry{l.DescKey, serial})
		if l.ExpiresAt != nil {
			c.expiring.Delete(expiryEntry{l.ExpiresAt.UnixMicro(), serial})
		}
	}
}

// NextExpiry is when the first listing expires after now, zero when none will.
func (c *Collection) NextExpiry(now time.Time) time.Time {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var next time.Time
	c.expiring.AscendGreaterOrEqual(expiryEntry{at: now.UnixMicro() + 1}, func(e expiryEntry) bool {
		next = time.UnixMicro(e.at).UTC()
		return false
	})
	return next
}
