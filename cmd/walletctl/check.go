package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"marketd/store/wallet"
)

// What walletctl signs is the prepared transaction's bytes, never the server's summary of
// them: it decodes the bytes, shows what they do, and a shortcut refuses to sign unless they
// do exactly what was asked. Anything on the path (a proxy, a rewritten request, a swapped
// answer) can change what the server prepares, but not what walletctl was told to do.

// intent is what a shortcut was asked to do; it returns a *mismatch for a transaction that
// does anything else. me is the key's party.
type intent func(me string, d *wallet.DecodedPrepared) error

// mismatch is a transaction that does not do what was asked.
type mismatch struct {
	asked, does, detail string
}

func (m *mismatch) Error() string {
	s := fmt.Sprintf("not signing: you asked to %s, but the transaction would %s", m.asked, m.does)
	if m.detail != "" {
		s += " (" + m.detail + ")"
	}
	return s
}

// checker compares a decoded transaction with what was asked, keeping the first difference.
type checker struct {
	asked string
	d     *wallet.DecodedPrepared
	err   error
}

// same records a difference in field unless got equals want (amounts by value).
func (c *checker) same(field string, got, want any) {
	if c.err != nil || equal(got, want) {
		return
	}
	c.fail(fmt.Sprintf("its %s is %s, not %s", field, show(got), show(want)))
}

// fail records that the transaction does its headline, not what was asked, because of detail.
func (c *checker) fail(detail string) {
	if c.err == nil {
		c.err = &mismatch{asked: c.asked, does: headline(c.d), detail: detail}
	}
}

// does records that the transaction does something that was not asked.
func (c *checker) does(what string) {
	if c.err == nil {
		c.err = &mismatch{asked: c.asked, does: what}
	}
}

func equal(got, want any) bool {
	switch g := got.(type) {
	case wallet.Amount:
		w, ok := want.(wallet.Amount)
		return ok && g.Equal(w)
	case *wallet.Amount:
		w, ok := want.(*wallet.Amount)
		return ok && (g == nil) == (w == nil) && (g == nil || g.Equal(*w))
	case *int64:
		w, ok := want.(*int64)
		return ok && (g == nil) == (w == nil) && (g == nil || *g == *w)
	case []string:
		w, ok := want.([]string)
		return ok && slices.Equal(slices.Sorted(slices.Values(g)), slices.Sorted(slices.Values(w)))
	}
	return got == want
}

func show(v any) string {
	switch x := v.(type) {
	case *wallet.Amount:
		if x == nil {
			return "none"
		}
		return x.String()
	case *int64:
		if x == nil {
			return "none"
		}
		return fmt.Sprint(*x)
	case string:
		if x == "" {
			return "none"
		}
	}
	return fmt.Sprint(v)
}

// effectsAs returns the transaction's effects as E, or a mismatch when it is of another kind.
func effectsAs[E any](c *checker, kinds ...string) *E {
	e, ok := c.d.Effects.(*E)
	if !ok || !slices.Contains(kinds, c.d.Kind) {
		c.does(headline(c.d))
		return nil
	}
	return e
}

// amountPattern is what walletctl accepts as an amount on its command line.
var amountPattern = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

// askedAmount reads an amount argument before anything is sent.
func askedAmount(name, s string) (wallet.Amount, error) {
	var a wallet.Amount
	if len(s) > 64 || !amountPattern.MatchString(s) || a.UnmarshalText([]byte(s)) != nil {
		return a, fmt.Errorf("%s %q: want a decimal amount like 12.5", name, s)
	}
	return a, nil
}

// ---- what each shortcut may sign

func wantOnboard(k *keyFile) intent {
	return func(me string, d *wallet.DecodedPrepared) error {
		c := &checker{asked: "onboard your key as " + k.PartyID, d: d}
		if e := effectsAs[wallet.OnboardEffects](c, wallet.KindOnboard); e != nil {
			c.same("public key", base64.StdEncoding.EncodeToString(e.PublicKey), k.PublicKey)
			c.same("party", e.PartyID, k.PartyID)
		}
		return c.err
	}
}

func wantTap(inst wallet.Instrument, amount wallet.Amount) intent {
	return func(me string, d *wallet.DecodedPrepared) error {
		c := &checker{asked: fmt.Sprintf("tap %s %s", amount, inst), d: d}
		if e := effectsAs[wallet.TapEffects](c, wallet.KindTap); e != nil {
			c.same("owner", e.Owner, me)
			c.same("instrument", e.Instrument, inst)
			c.same("amount", e.Amount, amount)
		}
		return c.err
	}
}

// wantSend admits a transfer whose receiver's new holdings total exactly amount and whose
// every other new holding is the sender's change: nothing to a third party.
func wantSend(receiver string, amount wallet.Amount) intent {
	return func(me string, d *wallet.DecodedPrepared) error {
		c := &checker{asked: fmt.Sprintf("send %s CC to %s", amount, receiver), d: d}
		e := effectsAs[wallet.TransferEffects](c, wallet.KindCCTransfer)
		if e == nil {
			return c.err
		}
		c.same("sender", e.Sender, me)
		c.same("instrument", e.Instrument, wallet.CC)
		credits := creditsOf(c, e.Outputs)
		for _, owner := range sortedOwners(credits) {
			if owner != me && owner != receiver {
				c.does(fmt.Sprintf("send %s %s to %s", credits[owner], e.Instrument, owner))
			}
		}
		if receiver != me && !credits[receiver].Equal(amount) {
			c.does(fmt.Sprintf("send %s %s to %s", credits[receiver], e.Instrument, receiver))
		}
		c.same("receiver", e.Receiver, receiver)
		c.same("amount", e.Amount, amount)
		change := spent(e.Inputs).Sub(e.Fee)
		if receiver != me {
			change = change.Sub(amount)
		}
		if !credits[me].Equal(change) {
			c.does(fmt.Sprintf("return %s %s to you of the %s it spends (fee %s), not %s", credits[me], e.Instrument, spent(e.Inputs), e.Fee, change))
		}
		return c.err
	}
}

func wantPreapproval(kind wallet.PreapprovalKind) intent {
	return func(me string, d *wallet.DecodedPrepared) error {
		c := &checker{asked: "consent to receive " + string(kind), d: d}
		k := wallet.KindNFTPreapproval
		if kind == wallet.PreapprovalUSDCx {
			k = wallet.KindUSDCxPreapproval
		}
		if e := effectsAs[wallet.PreapprovalEffects](c, k); e != nil {
			c.same("party", e.PartyID, me)
			c.same("kind", e.Kind, kind)
		}
		return c.err
	}
}

// wantRenewal admits the renewal of the party's own preapproval of kind: it archives the one it
// replaces and creates its successor, expiring after the renewal was prepared, and moves
// nothing else.
func wantRenewal(kind wallet.PreapprovalKind) intent {
	return func(me string, d *wallet.DecodedPrepared) error {
		c := &checker{asked: "renew your consent to receive " + string(kind), d: d}
		if e := effectsAs[wallet.PreapprovalEffects](c, wallet.KindPreapprovalRenew); e != nil {
			c.same("party", e.PartyID, me)
			c.same("kind", e.Kind, kind)
			if e.Replaces == "" {
				c.fail("it names no preapproval to renew")
			}
			if e.ExpiresAt <= d.PreparedAt {
				c.fail(fmt.Sprintf("it expires at %d, before it was prepared at %d", e.ExpiresAt, d.PreparedAt))
			}
		}
		return c.err
	}
}

// wantMint admits minting quantity NFTs of the collection the user named (ref: its slug or
// id), whose id a read of the server gave, at no more than maxPrice each when set. The slug
// is compared with the signed effects, not with that read's answer: a proxy that answers a
// look-alike's id gets a transaction naming the look-alike's slug, which is refused here.
func wantMint(ref, collectionID string, quantity int, maxPrice *wallet.Amount) intent {
	return func(me string, d *wallet.DecodedPrepared) error {
		c := &checker{asked: fmt.Sprintf("mint %d NFT(s) of %s", quantity, ref), d: d}
		e := effectsAs[wallet.MintEffects](c, wallet.KindNFTMint)
		if e == nil {
			return c.err
		}
		c.same("minter", e.Minter, me)
		c.same("collection", e.CollectionID, collectionID)
		sameCollection(c, ref, e.CollectionID, e.Slug)
		if maxPrice != nil && e.Price.Cmp(*maxPrice) > 0 {
			c.does(fmt.Sprintf("pay %s %s an NFT, more than the %s you allowed", e.Price, e.Currency, maxPrice))
		}
		c.same("quantity", e.Quantity, quantity)
		total := e.Price.MulFloor(decimal.NewFromInt(int64(quantity)), e.Currency.Decimals())
		checkPayment(c, me, e.Payment, e.Currency, map[string]wallet.Amount{e.Creator: total})
		return c.err
	}
}

func wantList(contractID string, price wallet.Amount, expiresAt *int64) intent {
	return func(me string, d *wallet.DecodedPrepared) error {
		c := &checker{asked: fmt.Sprintf("list NFT %s for %s", contractID, price), d: d}
		e := effectsAs[wallet.ListEffects](c, wallet.KindNFTList)
		if e == nil {
			return c.err
		}
		c.same("seller", e.Seller, me)
		if len(e.Listings) != 1 {
			c.fail(fmt.Sprintf("it lists %d NFTs, not 1", len(e.Listings)))
			return c.err
		}
		l := e.Listings[0]
		c.same("NFT", l.NFTCID, contractID)
		c.same("price", l.Price, price)
		c.same("expiry", l.ExpiresAt, expiresAt)
		return c.err
	}
}

func wantCancel(cids []string) intent {
	return func(me string, d *wallet.DecodedPrepared) error {
		c := &checker{asked: "cancel listing(s) " + strings.Join(cids, ", "), d: d}
		if e := effectsAs[wallet.CancelEffects](c, wallet.KindNFTCancel); e != nil {
			c.same("seller", e.Seller, me)
			var got []string
			for _, l := range e.Listings {
				got = append(got, l.CID)
			}
			c.same("listings", got, cids)
		}
		return c.err
	}
}

// wantBuy admits buying exactly the listings asked (by cid, or a count of one collection's),
// for at most maxTotal when one is set, paying each sale's shares and nothing else.
func wantBuy(asked, kind, collectionID string, cids []string, count int, maxTotal *wallet.Amount) intent {
	return func(me string, d *wallet.DecodedPrepared) error {
		c := &checker{asked: asked, d: d}
		e := effectsAs[wallet.BuyEffects](c, kind)
		if e == nil {
			return c.err
		}
		c.same("buyer", e.Buyer, me)
		if collectionID != "" {
			c.same("collection", e.CollectionID, collectionID)
		}
		var got []string
		price := wallet.Zero
		due := map[string]wallet.Amount{}
		for _, p := range e.Purchases {
			got = append(got, p.Listing)
			price = price.Add(p.Price)
			c.same("collection of listing "+p.Listing, p.CollectionID, e.CollectionID)
			st := p.Settlement
			c.same("settled price of listing "+p.Listing, st.Price, p.Price)
			c.same("shares of listing "+p.Listing, st.Fee.Amount.Add(st.Royalty.Amount).Add(st.Seller.Amount), p.Price)
			for _, sh := range []wallet.Share{st.Fee, st.Royalty, st.Seller} {
				if sh.Party == nil {
					c.fail("a share of listing " + p.Listing + " names no party")
					return c.err
				}
				due[*sh.Party] = due[*sh.Party].Add(sh.Amount)
			}
		}
		if count > 0 {
			c.same("number of listings", len(got), count)
		} else {
			c.same("listings", got, cids)
		}
		c.same("maximum total", e.MaxTotal, maxTotal)
		if maxTotal != nil && price.Cmp(*maxTotal) > 0 {
			c.does(fmt.Sprintf("pay %s in all, more than the %s you allowed", price, maxTotal))
		}
		if e.Payment != nil {
			checkPayment(c, me, e.Payment, e.Payment.Currency, due)
		} else if price.IsPositive() {
			c.fail("it names no payment")
		}
		return c.err
	}
}

// sameCollection checks that the signed effects name the collection the user typed: its slug,
// or its id when the user gave one.
func sameCollection(c *checker, ref, collectionID, slug string) {
	if strings.HasPrefix(ref, "col_") {
		c.same("collection", collectionID, ref)
		return
	}
	c.same("collection slug", slug, ref)
}

// wantSweep adds to buy's checks that the sweep is of the collection the user named and that
// no NFT costs more than maxPrice when set.
func wantSweep(buy intent, ref string, maxPrice *wallet.Amount) intent {
	return func(me string, d *wallet.DecodedPrepared) error {
		if err := buy(me, d); err != nil {
			return err
		}
		c := &checker{asked: "buy listings of " + ref, d: d}
		e := effectsAs[wallet.BuyEffects](c, wallet.KindNFTSweep)
		if e == nil {
			return c.err
		}
		sameCollection(c, ref, e.CollectionID, e.Slug)
		for _, p := range e.Purchases {
			if maxPrice != nil && p.Price.Cmp(*maxPrice) > 0 {
				c.does(fmt.Sprintf("pay %s for listing %s, more than the %s you allowed", p.Price, p.Listing, maxPrice))
			}
		}
		return c.err
	}
}

func wantMove(kind, contractID, receiver string) intent {
	return func(me string, d *wallet.DecodedPrepared) error {
		asked := fmt.Sprintf("transfer NFT %s to %s", contractID, receiver)
		if receiver == "" {
			asked = fmt.Sprintf("burn NFT %s", contractID)
		}
		c := &checker{asked: asked, d: d}
		if e := effectsAs[wallet.MoveEffects](c, kind); e != nil {
			c.same("owner", e.Owner, me)
			c.same("NFT", e.NFTCID, contractID)
			c.same("receiver", e.Receiver, receiver)
		}
		return c.err
	}
}

func wantLPQuote(pool, side string, price, size wallet.Amount, expiresAt int64) intent {
	return func(me string, d *wallet.DecodedPrepared) error {
		c := &checker{asked: fmt.Sprintf("quote to %s %s at %s on %s", side, size, price, pool), d: d}
		e := effectsAs[wallet.LPQuoteEffects](c, wallet.KindLPQuote)
		if e == nil {
			return c.err
		}
		c.same("LP", e.LP, me)
		c.same("pool", e.PoolID, pool)
		c.same("side", e.Side, side)
		c.same("price", e.Price, price)
		c.same("size", e.Size, size)
		c.same("expiry", e.ExpiresAt, expiresAt)
		lock := size // an ask locks what it sells, a bid what it pays, rounded up
		if side == wallet.SideBid {
			lock = wallet.MustAmount(price.Decimal().Mul(size.Decimal()).RoundCeil(e.Lock.Instrument.Decimals()).String())
		}
		checkLock(c, e.Lock, e.Lock.Instrument, lock)
		return c.err
	}
}

func wantLPCancel(cid string) intent {
	return func(me string, d *wallet.DecodedPrepared) error {
		c := &checker{asked: "cancel LP quote " + cid, d: d}
		if e := effectsAs[wallet.LPQuoteCancelEffects](c, wallet.KindLPQuoteCancel); e != nil {
			c.same("LP", e.LP, me)
			c.same("quote", e.QuoteID, cid)
		}
		return c.err
	}
}

func wantClaimFees(pool string) intent {
	return func(me string, d *wallet.DecodedPrepared) error {
		c := &checker{asked: "claim your fees in " + pool, d: d}
		if e := effectsAs[wallet.ClaimFeesEffects](c, wallet.KindLPClaimFees); e != nil {
			c.same("LP", e.LP, me)
			c.same("pool", e.PoolID, pool)
		}
		return c.err
	}
}

func wantSwap(pool string, sell wallet.Instrument, amount, minReceive wallet.Amount, deadline int64) intent {
	return func(me string, d *wallet.DecodedPrepared) error {
		c := &checker{asked: fmt.Sprintf("swap %s %s for at least %s on %s", amount, sell, minReceive, pool), d: d}
		e := effectsAs[wallet.SwapIntentEffects](c, wallet.KindSwapIntent)
		if e == nil {
			return c.err
		}
		c.same("taker", e.Taker, me)
		c.same("pool", e.PoolID, pool)
		c.same("instrument sold", e.Sell, sell)
		c.same("amount", e.Amount, amount)
		c.same("minReceive", e.MinReceive, minReceive)
		c.same("deadline", e.Deadline, deadline)
		checkLock(c, e.Lock, sell, amount)
		return c.err
	}
}

func wantIntentCancel(intentCID string) intent {
	return func(me string, d *wallet.DecodedPrepared) error {
		c := &checker{asked: "cancel intent " + intentCID, d: d}
		if e := effectsAs[wallet.IntentCancelEffects](c, wallet.KindIntentCancel); e != nil {
			c.same("taker", e.Taker, me)
			c.same("intent", e.IntentCID, intentCID)
		}
		return c.err
	}
}

// ---- holdings

// creditsOf sums new holdings by owner; a holding of no positive amount is a mismatch.
func creditsOf(c *checker, outs []wallet.NewHolding) map[string]wallet.Amount {
	m := map[string]wallet.Amount{}
	for _, o := range outs {
		if !o.Amount.IsPositive() {
			c.fail(fmt.Sprintf("it creates a holding of %s for %s", o.Amount, o.Owner))
		}
		m[o.Owner] = m[o.Owner].Add(o.Amount)
	}
	return m
}

func spent(ins []wallet.SpentHolding) wallet.Amount {
	sum := wallet.Zero
	for _, in := range ins {
		sum = sum.Add(in.Amount)
	}
	return sum
}

func sortedOwners(m map[string]wallet.Amount) []string {
	return slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	})
}

// checkPayment admits a payment in cur that credits every other party exactly what is due to
// it and returns all the rest of what it spends to me.
func checkPayment(c *checker, me string, p *wallet.Payment, cur wallet.Instrument, due map[string]wallet.Amount) {
	if p == nil {
		c.fail("it names no payment")
		return
	}
	c.same("currency", p.Currency, cur)
	credits := creditsOf(c, p.Outputs)
	owed := wallet.Zero
	for _, party := range sortedOwners(due) {
		if party != me {
			owed = owed.Add(due[party])
		}
	}
	for _, party := range sortedOwners(credits) {
		if party != me && !credits[party].Equal(due[party]) {
			c.does(fmt.Sprintf("pay %s %s to %s, who is due %s", credits[party], p.Currency, party, due[party]))
		}
	}
	for _, party := range sortedOwners(due) {
		if party != me && due[party].IsPositive() && !credits[party].Equal(due[party]) {
			c.does(fmt.Sprintf("pay %s %s to %s, who is due %s", credits[party], p.Currency, party, due[party]))
		}
	}
	if change := spent(p.Inputs).Sub(owed); !credits[me].Equal(change) {
		c.does(fmt.Sprintf("return %s %s to you of the %s it spends, not %s", credits[me], p.Currency, spent(p.Inputs), change))
	}
}

// checkLock admits a lock of exactly amount of inst, the change of which comes back.
func checkLock(c *checker, l wallet.LockedFunds, inst wallet.Instrument, amount wallet.Amount) {
	c.same("locked instrument", l.Instrument, inst)
	c.same("locked amount", l.Amount, amount)
	c.same("change", l.Change, spent(l.Inputs).Sub(l.Amount))
}

// ---- what a transaction does, from its bytes

// headline is what the transaction does, in one line.
func headline(d *wallet.DecodedPrepared) string {
	return describe(d)[0]
}

// describe is what the transaction does, first in one line, then what it spends and creates.
func describe(d *wallet.DecodedPrepared) []string {
	until := func(at int64) string { return time.Unix(at, 0).UTC().Format(time.RFC3339) }
	switch e := d.Effects.(type) {
	case *wallet.OnboardEffects:
		return []string{fmt.Sprintf("onboard party %s for public key %s", e.PartyID, base64.StdEncoding.EncodeToString(e.PublicKey))}
	case *wallet.TapEffects:
		return []string{fmt.Sprintf("credit %s %s to %s out of thin air (dev tap)", e.Amount, e.Instrument, e.Owner)}
	case *wallet.TransferEffects:
		out := []string{fmt.Sprintf("send %s %s from %s to %s (fee %s)", e.Amount, e.Instrument, e.Sender, e.Receiver, e.Fee)}
		return append(out, holdings(e.Inputs, e.Outputs, e.Instrument)...)
	case *wallet.PreapprovalEffects:
		s := fmt.Sprintf("consent, as %s, to receive %s until %s", e.PartyID, e.Kind, until(e.ExpiresAt))
		if d.Kind == wallet.KindPreapprovalRenew {
			s = "renew the " + s
		}
		if e.Replaces != "" {
			s += ", replacing " + e.Replaces
		}
		return []string{s}
	case *wallet.MintEffects:
		out := []string{fmt.Sprintf("mint %d NFT(s) of %s to %s in phase %q at %s %s each", e.Quantity, e.CollectionID, e.Minter, e.Phase, e.Price, e.Currency)}
		return append(out, paying(e.Payment)...)
	case *wallet.ListEffects:
		var out []string
		for _, l := range e.Listings {
			s := fmt.Sprintf("list NFT %s (%s) for %s %s", l.NFTCID, l.NFTID, l.Price, l.Currency)
			if l.ExpiresAt != nil {
				s += " until " + until(*l.ExpiresAt)
			}
			out = append(out, s)
		}
		return withHead(fmt.Sprintf("list %d NFT(s) of %s", len(e.Listings), e.Seller), out)
	case *wallet.CancelEffects:
		var cids []string
		for _, l := range e.Listings {
			cids = append(cids, l.CID)
		}
		return []string{fmt.Sprintf("cancel listing(s) %s of %s", strings.Join(cids, ", "), e.Seller)}
	case *wallet.BuyEffects:
		var out []string
		price := wallet.Zero
		for _, p := range e.Purchases {
			price = price.Add(p.Price)
			out = append(out, fmt.Sprintf("buy listing %s (NFT %s) from %s for %s", p.Listing, p.NFTID, p.Seller, p.Price))
		}
		head := fmt.Sprintf("buy %d NFT(s) of %s for %s in all, as %s", len(e.Purchases), e.CollectionID, price, e.Buyer)
		if e.MaxTotal != nil {
			head += ", at most " + e.MaxTotal.String()
		}
		return append(withHead(head, out), paying(e.Payment)...)
	case *wallet.MoveEffects:
		s := fmt.Sprintf("transfer NFT %s (%s) from %s to %s", e.NFTCID, e.NFTID, e.Owner, e.Receiver)
		if e.Receiver == "" {
			s = fmt.Sprintf("burn NFT %s (%s) of %s for good", e.NFTCID, e.NFTID, e.Owner)
		}
		if e.Listing != "" {
			s += ", withdrawing listing " + e.Listing
		}
		return []string{s}
	case *wallet.LPQuoteEffects:
		out := []string{fmt.Sprintf("quote to %s %s at %s on %s until %s, as %s", e.Side, e.Size, e.Price, e.PoolID, until(e.ExpiresAt), e.LP)}
		return append(out, locking(e.Lock))
	case *wallet.LPQuoteCancelEffects:
		return []string{fmt.Sprintf("cancel LP quote %s of %s on %s", e.QuoteID, e.LP, e.PoolID)}
	case *wallet.ClaimFeesEffects:
		var pays []string
		for _, inst := range wallet.Instruments {
			if a, ok := e.Payout[inst]; ok {
				pays = append(pays, a.String()+" "+string(inst))
			}
		}
		return []string{fmt.Sprintf("pay %s the fees accrued in %s: %s", e.LP, e.PoolID, strings.Join(pays, ", "))}
	case *wallet.SwapIntentEffects:
		out := []string{fmt.Sprintf("swap %s %s for at least %s %s on %s by %s, as %s", e.Amount, e.Sell, e.MinReceive, e.Receive, e.PoolID, until(e.Deadline), e.Taker)}
		return append(out, locking(e.Lock))
	case *wallet.IntentCancelEffects:
		return []string{fmt.Sprintf("cancel intent %s of %s on %s, releasing %s %s", e.IntentCID, e.Taker, e.PoolID, e.Amount, e.Instrument)}
	}
	if lines := describeOffer(d); lines != nil {
		return lines
	}
	return []string{"do a " + d.Kind}
}

func withHead(head string, lines []string) []string {
	if len(lines) == 1 {
		return lines
	}
	return append([]string{head}, lines...)
}

func holdings(ins []wallet.SpentHolding, outs []wallet.NewHolding, inst wallet.Instrument) []string {
	out := []string{fmt.Sprintf("spends %d holding(s) worth %s %s", len(ins), spent(ins), inst)}
	for _, o := range outs {
		out = append(out, fmt.Sprintf("creates %s %s for %s", o.Amount, inst, o.Owner))
	}
	return out
}

func paying(p *wallet.Payment) []string {
	if p == nil {
		return nil
	}
	return holdings(p.Inputs, p.Outputs, p.Currency)
}

func locking(l wallet.LockedFunds) string {
	return fmt.Sprintf("locks %s %s of %d holding(s) worth %s, %s back as change", l.Amount, l.Instrument, len(l.Inputs), spent(l.Inputs), l.Change)
}

// printTransaction shows what the transaction does, from its bytes; full adds every effect,
// for a transaction walletctl cannot check against an intent.
func printTransaction(log io.Writer, hash string, d *wallet.DecodedPrepared, full bool) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "signing %s: %s as %s on %s\n", hash, d.Kind, d.ActAs, d.Network)
	for _, line := range describe(d) {
		fmt.Fprintf(&b, "  %s\n", line)
	}
	if full {
		effects, _ := json.MarshalIndent(d.Effects, "  ", "  ")
		fmt.Fprintf(&b, "  effects: %s\n", effects)
		fmt.Fprint(&b, "  (exec checks only that it acts as your party, not that it does what you meant)\n")
	}
	fmt.Fprintf(&b, "  expires: %s\n", time.Unix(d.ExpiresAt, 0).Format(time.RFC3339))
	log.Write(b.Bytes())
}
