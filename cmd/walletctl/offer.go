package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"marketd/store/wallet"
)

// offerOptions are offer's own flags.
type offerOptions struct {
	quantity int
	serial   *int
	contract string
	traits   []string // TYPE=VALUE, as typed
	expires  string
}

// offerFlags are offer's flags: what the offer bids for, how many, until when.
func offerFlags(w *cli, fs *flag.FlagSet) {
	o := &w.offer
	fs.IntVar(&o.quantity, "quantity", 1, fmt.Sprintf("how many NFTs the offer buys, 1 to %d (an item offer buys 1)", wallet.MaxOfferQuantity))
	fs.Func("serial", "an item offer: the NFT of this serial", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return errors.New("want an NFT's serial number")
		}
		o.serial = &n
		return nil
	})
	fs.StringVar(&o.contract, "contract", "", "an item offer: the NFT of this contract id (its collection and serial are read from the server)")
	fs.Func("trait", "a trait offer: TYPE=VALUE, repeatable (values of one type are OR-ed, types AND-ed)", func(v string) error {
		if t, val, ok := strings.Cut(v, "="); !ok || t == "" || val == "" {
			return errors.New("want TYPE=VALUE")
		}
		o.traits = append(o.traits, v)
		return nil
	})
	fs.StringVar(&o.expires, "expires", "24h", "when the offer lapses: a duration from now (168h) or an RFC 3339 time, at most 30 days ahead")
}

// offerShortcut runs offer, offer cancel, offers and accept.
func (w *cli) offerShortcut(name string, args []string) error {
	usage := func(u string) error { return errors.New("usage: walletctl " + u) }
	body := func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	switch name {
	case "offer":
		if len(args) != 2 {
			return usage("offer COLLECTION PRICE [--quantity N] [--serial S | --contract CID] [--trait TYPE=VALUE ...] [--expires DURATION|RFC3339]")
		}
		return w.makeOffer(args[0], args[1])
	case "offer cancel":
		if len(args) == 0 {
			return usage("offer cancel CID...")
		}
		if err := underBatchLimit("offer cancel", len(args)); err != nil {
			return err
		}
		return w.exec("/api/nft/offer/cancel", body(map[string]any{"cids": args}), wantOfferCancel(args))
	case "offers":
		if len(args) != 0 {
			return usage("offers [--received] [--collection C]")
		}
		return w.listOffers()
	case "accept":
		if len(args) < 2 {
			return usage("accept OFFER_CID NFT_CID... [--min-proceeds AMOUNT]")
		}
		nfts := args[1:]
		if err := underBatchLimit("accept", len(nfts)); err != nil {
			return err
		}
		if len(slices.Compact(slices.Sorted(slices.Values(nfts)))) != len(nfts) {
			return errors.New("accept: an NFT is named twice")
		}
		req := map[string]any{"cid": args[0], "contractIds": nfts}
		var least *wallet.Amount
		if w.minProceeds != "" {
			m, err := askedAmount("--min-proceeds", w.minProceeds)
			if err != nil {
				return err
			}
			least, req["minProceeds"] = &m, w.minProceeds
		}
		o, err := w.receivedOffer(args[0])
		if err != nil {
			return err
		}
		return w.exec("/api/nft/offer/accept", body(req), wantAccept(o, nfts, least))
	}
	return fmt.Errorf("unknown offer shortcut %q", name)
}

// offerAsked is what offer was asked to sign.
type offerAsked struct {
	ref          string // the collection as typed
	collectionID string
	currency     wallet.Instrument
	kind         string
	serial       *int
	traits       []wallet.TraitMatch
	price        wallet.Amount
	quantity     int
	expiresAt    int64
}

// makeOffer checks offer's arguments, resolves the collection (and --contract's NFT) and
// execs the offer it asked for.
func (w *cli) makeOffer(ref, priceArg string) error {
	o := w.offer
	price, err := askedAmount("PRICE", priceArg)
	if err != nil {
		return err
	}
	named := 0
	for _, set := range []bool{o.serial != nil, o.contract != "", len(o.traits) > 0} {
		if set {
			named++
		}
	}
	switch {
	case named > 1:
		return errors.New("offer: name at most one of --serial, --contract and --trait")
	case o.quantity < 1 || o.quantity > wallet.MaxOfferQuantity:
		return fmt.Errorf("--quantity %d: want 1 to %d", o.quantity, wallet.MaxOfferQuantity)
	case (o.serial != nil || o.contract != "") && o.quantity != 1:
		return errors.New("offer: an item offer (--serial, --contract) buys 1 NFT; drop --quantity")
	}
	at, err := offerExpiry(o.expires, time.Now())
	if err != nil {
		return err
	}
	traits, err := askedTraits(o.traits)
	if err != nil {
		return err
	}
	col, err := w.collectionInfo(ref)
	if err != nil {
		return err
	}
	a := offerAsked{ref: ref, collectionID: col.ID, currency: col.Currency, kind: wallet.OfferCollection, serial: o.serial,
		price: price, quantity: o.quantity, expiresAt: at}
	req := map[string]any{"collectionId": col.ID, "price": priceArg, "quantity": o.quantity, "expiresAt": at}
	if o.contract != "" {
		var n struct {
			CollectionID string `json:"collectionId"`
			Serial       int    `json:"serial"`
		}
		if err := w.do("GET", "/api/nft/token/"+url.PathEscape(o.contract), nil, "", &n); err != nil {
			return fmt.Errorf("NFT %s: %w", o.contract, err)
		}
		if n.CollectionID != col.ID {
			return fmt.Errorf("NFT %s is of collection %s, not %s", o.contract, n.CollectionID, ref)
		}
		a.serial = &n.Serial
	}
	switch {
	case a.serial != nil:
		a.kind, req["serial"] = wallet.OfferItem, *a.serial
	case traits != nil:
		a.kind, a.traits, req["traits"] = wallet.OfferTrait, traits, traits
	}
	b, _ := json.Marshal(req)
	return w.exec("/api/nft/offer", string(b), wantOffer(a))
}

// offerExpiry reads --expires: a duration from now, or an RFC 3339 time.
func offerExpiry(v string, now time.Time) (int64, error) {
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return now.Add(d).Unix(), nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t.Unix(), nil
	}
	return 0, fmt.Errorf("--expires %q: want a positive duration such as 72h or an RFC 3339 time such as 2030-01-02T15:04:05Z", v)
}

// askedTraits groups --trait TYPE=VALUE flags by type, canonical as the server keeps them:
// types sorted, each type's values sorted and distinct. nil when none was given.
func askedTraits(flags []string) ([]wallet.TraitMatch, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	byType := map[string][]string{}
	for _, f := range flags {
		t, v, ok := strings.Cut(f, "=")
		if !ok || t == "" || v == "" {
			return nil, fmt.Errorf("--trait %q: want TYPE=VALUE", f)
		}
		byType[t] = append(byType[t], v)
	}
	var out []wallet.TraitMatch
	for _, t := range slices.Sorted(func(yield func(string) bool) {
		for k := range byType {
			if !yield(k) {
				return
			}
		}
	}) {
		out = append(out, wallet.TraitMatch{Type: t, Values: slices.Compact(slices.Sorted(slices.Values(byType[t])))})
	}
	return out, nil
}

// traitsText shows trait criteria in one canonical line: "Fur=gold|red, Hat=cap".
func traitsText(ms []wallet.TraitMatch) string {
	byType := map[string][]string{}
	for _, m := range ms {
		byType[m.Type] = append(byType[m.Type], m.Values...)
	}
	var parts []string
	for _, t := range slices.Sorted(func(yield func(string) bool) {
		for k := range byType {
			if !yield(k) {
				return
			}
		}
	}) {
		parts = append(parts, t+"="+strings.Join(slices.Compact(slices.Sorted(slices.Values(byType[t]))), "|"))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// collectionInfo is what offer checks a collection against: its id and its currency.
type collectionInfo struct {
	ID       string            `json:"id"`
	Slug     string            `json:"slug"`
	Currency wallet.Instrument `json:"currency"`
}

// collectionInfo reads the collection ref names: by slug, or by id from the collections list
// (the API reads a collection by slug only).
func (w *cli) collectionInfo(ref string) (*collectionInfo, error) {
	if !strings.HasPrefix(ref, "col_") {
		var c collectionInfo
		if err := w.do("GET", "/api/nft/slug/"+url.PathEscape(ref), nil, "", &c); err != nil {
			return nil, fmt.Errorf("collection %q: %w", ref, err)
		}
		if c.Slug != ref {
			return nil, fmt.Errorf("collection %q: the server answered collection %q", ref, c.Slug)
		}
		return &c, nil
	}
	q := url.Values{"limit": {strconv.Itoa(wallet.MaxPageSize)}}
	for range maxPages {
		var page struct {
			Items  []collectionInfo `json:"items"`
			Cursor *string          `json:"cursor"`
		}
		if err := w.do("GET", "/api/nft/collections?"+q.Encode(), nil, "", &page); err != nil {
			return nil, fmt.Errorf("collection %s: %w", ref, err)
		}
		for _, c := range page.Items {
			if c.ID == ref {
				return &c, nil
			}
		}
		if page.Cursor == nil {
			return nil, fmt.Errorf("collection %s: no such collection", ref)
		}
		q.Set("cursor", *page.Cursor)
	}
	return nil, fmt.Errorf("collection %s: not in the first %d collections listed; name it by its slug", ref, maxPages*wallet.MaxPageSize)
}

// maxPages bounds the pages a read that walks a list reads.
const maxPages = 100

// listOffers prints the party's own open offers, or the offers it can accept (--received);
// --collection keeps one collection's, read from every page.
func (w *cli) listOffers() error {
	path := "/api/nft/offers?maker={me}"
	if w.received {
		path = "/api/nft/offers/received?owner={me}"
	}
	if w.collection == "" {
		return w.call("GET", path, "")
	}
	col, err := w.collectionInfo(w.collection)
	if err != nil {
		return err
	}
	tok, err := w.token()
	if err != nil {
		return err
	}
	if path, err = w.expandPath(path); err != nil {
		return err
	}
	kept := []json.RawMessage{}
	cursor := ""
	for range maxPages {
		var page struct {
			Items  []json.RawMessage `json:"items"`
			Cursor *string           `json:"cursor"`
		}
		p := path + "&limit=" + strconv.Itoa(wallet.MaxPageSize)
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		if err := w.do("GET", p, nil, tok, &page); err != nil {
			return err
		}
		for _, it := range page.Items {
			var o struct {
				CollectionID string `json:"collectionId"`
			}
			if json.Unmarshal(it, &o) == nil && o.CollectionID == col.ID {
				kept = append(kept, it)
			}
		}
		if page.Cursor == nil {
			return printJSON(w.out, map[string]any{"items": kept, "cursor": nil})
		}
		cursor = *page.Cursor
	}
	return fmt.Errorf("more than %d pages of offers; list them without --collection", maxPages)
}

// offerSeen is an offer as the offer lists show it.
type offerSeen struct {
	CID          string            `json:"cid"`
	Maker        string            `json:"maker"`
	CollectionID string            `json:"collectionId"`
	Price        wallet.Amount     `json:"price"`
	Currency     wallet.Instrument `json:"currency"`
}

// receivedOffer finds offer cid among the offers the party's NFTs can be accepted into: who
// made it, at what price, in which collection. accept signs an accept of that offer only.
func (w *cli) receivedOffer(cid string) (*offerSeen, error) {
	tok, err := w.token()
	if err != nil {
		return nil, err
	}
	path, err := w.expandPath("/api/nft/offers/received?owner={me}&limit=" + strconv.Itoa(wallet.MaxPageSize))
	if err != nil {
		return nil, err
	}
	cursor := ""
	for range maxPages {
		var page struct {
			Items  []offerSeen `json:"items"`
			Cursor *string     `json:"cursor"`
		}
		p := path
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		if err := w.do("GET", p, nil, tok, &page); err != nil {
			return nil, err
		}
		for _, o := range page.Items {
			if o.CID == cid {
				return &o, nil
			}
		}
		if page.Cursor == nil {
			break
		}
		cursor = *page.Cursor
	}
	return nil, fmt.Errorf("offer %s is not among the open offers your NFTs can be accepted into (walletctl offers --received)", cid)
}

// ---- what each offer shortcut may sign

func (a offerAsked) String() string {
	what := fmt.Sprintf("%d NFT(s)", a.quantity)
	switch {
	case a.serial != nil:
		what = fmt.Sprintf("NFT #%d", *a.serial)
	case a.traits != nil:
		what += " with " + traitsText(a.traits)
	}
	return fmt.Sprintf("offer %s %s each for %s of %s until %s", a.price, a.currency, what, a.ref, time.Unix(a.expiresAt, 0).UTC().Format(time.RFC3339))
}

// wantOffer admits the offer asked: its kind, collection, NFT or traits, price, quantity and
// expiry, locking exactly price × quantity of the collection's currency out of the maker's
// holdings, the rest back to the maker as change. An offer moves nothing else.
func wantOffer(a offerAsked) intent {
	return func(me string, d *wallet.DecodedPrepared) error {
		c := &checker{asked: a.String(), d: d}
		e := effectsAs[wallet.OfferEffects](c, wallet.KindNFTOffer)
		if e == nil {
			return c.err
		}
		serial := func(p *int) string {
			if p == nil {
				return "none"
			}
			return "#" + strconv.Itoa(*p)
		}
		c.same("maker", e.Maker, me)
		c.same("kind", e.Kind, a.kind)
		c.same("collection", e.CollectionID, a.collectionID)
		sameCollection(c, a.ref, e.CollectionID, e.Slug)
		c.same("price", e.Price, a.price)
		c.same("quantity", e.Quantity, a.quantity)
		c.same("serial", serial(e.Serial), serial(a.serial))
		c.same("traits", traitsText(e.Traits), traitsText(a.traits))
		c.same("expiry", e.ExpiresAt, a.expiresAt)
		lock := times(a.price, a.quantity)
		if c.err == nil && !e.Lock.Amount.Equal(lock) {
			c.does(fmt.Sprintf("lock %s %s, not the %s × %d = %s the offer needs", e.Lock.Amount, e.Lock.Instrument, a.price, a.quantity, lock))
		}
		checkLock(c, e.Lock, a.currency, lock)
		if e.Lock.Change.IsNegative() {
			c.fail(fmt.Sprintf("it returns a change of %s", e.Lock.Change))
		}
		return c.err
	}
}

// times is price × n.
func times(price wallet.Amount, n int) wallet.Amount {
	sum := wallet.Zero
	for range n {
		sum = sum.Add(price)
	}
	return sum
}

// wantOfferCancel admits withdrawing exactly the party's offers cids: what they lock goes
// back to their maker, which must be the party.
func wantOfferCancel(cids []string) intent {
	return func(me string, d *wallet.DecodedPrepared) error {
		c := &checker{asked: "cancel offer(s) " + strings.Join(cids, ", "), d: d}
		if e := effectsAs[wallet.OfferCancelEffects](c, wallet.KindNFTOfferCancel); e != nil {
			c.same("maker", e.Maker, me)
			var got []string
			for _, o := range e.Offers {
				got = append(got, o.OfferID)
			}
			c.same("offers", got, cids)
		}
		return c.err
	}
}

// wantAccept admits selling exactly the NFTs nfts into offer o (as the offer list showed it):
// each goes to the offer's maker, each sale's price is the offer's, split into a fee, a
// royalty and the party's share that sum to it, and the party gets at least least (when set)
// in all. An accept spends none of the party's holdings: what it pays comes out of the
// offer's lock.
func wantAccept(o *offerSeen, nfts []string, least *wallet.Amount) intent {
	return func(me string, d *wallet.DecodedPrepared) error {
		asked := fmt.Sprintf("sell NFT(s) %s into offer %s of %s at %s %s each", strings.Join(nfts, ", "), o.CID, o.Maker, o.Price, o.Currency)
		if least != nil {
			asked += fmt.Sprintf(" for at least %s in all", least)
		}
		c := &checker{asked: asked, d: d}
		e := effectsAs[wallet.OfferAcceptEffects](c, wallet.KindNFTOfferAccept)
		if e == nil {
			return c.err
		}
		c.same("seller", e.Seller, me)
		c.same("offer", e.OfferID, o.CID)
		c.same("maker", e.Maker, o.Maker)
		c.same("collection", e.CollectionID, o.CollectionID)
		c.same("price", e.Price, o.Price)
		c.same("currency", e.Currency, o.Currency)
		if e.Maker == me {
			c.fail("its maker is you")
		}
		var got []string
		sum := wallet.Settlement{Price: wallet.Zero, Fee: wallet.Share{Amount: wallet.Zero}, Royalty: wallet.Share{Amount: wallet.Zero}, Seller: wallet.Share{Amount: wallet.Zero}}
		mine := wallet.Zero // what the party is credited in all
		for _, s := range e.Sales {
			got = append(got, s.NFTCID)
			st := s.Settlement
			c.same("price of NFT "+s.NFTCID, st.Price, e.Price)
			c.same("shares of NFT "+s.NFTCID, st.Fee.Amount.Add(st.Royalty.Amount).Add(st.Seller.Amount), st.Price)
			for _, sh := range []wallet.Share{st.Fee, st.Royalty, st.Seller} {
				switch {
				case sh.Party == nil:
					c.fail("a share of NFT " + s.NFTCID + " names no party")
					return c.err
				case sh.Amount.IsNegative():
					c.fail(fmt.Sprintf("a share of NFT %s is %s", s.NFTCID, sh.Amount))
				case *sh.Party == me:
					mine = mine.Add(sh.Amount)
				}
			}
			c.same("seller of NFT "+s.NFTCID, partyOf(st.Seller.Party), me)
			sum.Price, sum.Fee.Amount = sum.Price.Add(st.Price), sum.Fee.Amount.Add(st.Fee.Amount)
			sum.Royalty.Amount, sum.Seller.Amount = sum.Royalty.Amount.Add(st.Royalty.Amount), sum.Seller.Amount.Add(st.Seller.Amount)
		}
		c.same("NFTs", got, nfts)
		if len(slices.Compact(slices.Sorted(slices.Values(got)))) != len(got) {
			c.fail("it names an NFT twice")
		}
		if least != nil && c.err == nil && mine.Cmp(*least) < 0 {
			c.does(fmt.Sprintf("credit you %s %s for the NFT(s), less than the %s you asked at least", mine, e.Currency, least))
		}
		c.same("proceeds", e.Settlement.Seller.Amount, sum.Seller.Amount)
		c.same("total price", e.Settlement.Price, sum.Price)
		c.same("total fee", e.Settlement.Fee.Amount, sum.Fee.Amount)
		c.same("total royalty", e.Settlement.Royalty.Amount, sum.Royalty.Amount)
		c.same("minimum proceeds", e.MinProceeds, least)
		return c.err
	}
}

// describeOffer is what an offer's transaction does (nil for another kind), first in one line.
func describeOffer(d *wallet.DecodedPrepared) []string {
	until := func(at int64) string { return time.Unix(at, 0).UTC().Format(time.RFC3339) }
	switch e := d.Effects.(type) {
	case *wallet.OfferEffects:
		what := fmt.Sprintf("%d NFT(s)", e.Quantity)
		switch {
		case e.Serial != nil:
			what = fmt.Sprintf("NFT #%d (%s)", *e.Serial, e.NFTID)
		case e.Traits != nil:
			what += " with " + traitsText(e.Traits)
		}
		return []string{fmt.Sprintf("offer %s %s each for %s of %s until %s, as %s", e.Price, e.Lock.Instrument, what, e.CollectionID, until(e.ExpiresAt), e.Maker),
			locking(e.Lock)}
	case *wallet.OfferCancelEffects:
		var cids []string
		for _, o := range e.Offers {
			cids = append(cids, o.OfferID)
		}
		return []string{fmt.Sprintf("cancel offer(s) %s of %s, what they lock back to %s", strings.Join(cids, ", "), e.Maker, e.Maker)}
	case *wallet.OfferAcceptEffects:
		out := []string{fmt.Sprintf("sell %d NFT(s) of %s into offer %s of %s at %s %s each, as %s", len(e.Sales), e.CollectionID, e.OfferID, e.Maker, e.Price, e.Currency, e.Seller)}
		for _, s := range e.Sales {
			st := s.Settlement
			line := fmt.Sprintf("NFT %s (%s) to %s: fee %s to %s, royalty %s to %s, %s to %s", s.NFTCID, s.NFTID, e.Maker,
				st.Fee.Amount, partyOf(st.Fee.Party), st.Royalty.Amount, partyOf(st.Royalty.Party), st.Seller.Amount, partyOf(st.Seller.Party))
			if s.Listing != "" {
				line += ", closing listing " + s.Listing
			}
			out = append(out, line)
		}
		return out
	}
	return nil
}

// partyOf is a share's party, "none" for nil.
func partyOf(p *string) string {
	if p == nil {
		return "none"
	}
	return *p
}
