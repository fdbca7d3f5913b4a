package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/uptrace/bun"
)

// Ledger is where contracts live and how a committed transaction changes them. The embedded
// ledger keeps contracts in the store's own tables and commits inside the caller's database
// transaction; a ledger node would accept the same Transaction over its API and the store
// would mirror the update it answers with.
type Ledger interface {
	// Commit applies t as part of update u, signed by u.ActAs. Every consumed contract must be
	// active (else stale) and controlled by the signer, unless it is an offer (a listing, an
	// LP quote, an intent) that the transaction settles, or a contract such an offer holds.
	// Every instrument and every non-fungible asset is conserved unless t mints or burns it.
	// A credit to a party that neither signs nor has an offer settled by t obeys that party's
	// receive-preapproval (USDCx, NFTs). Commit assigns the ids of the contracts t creates.
	Commit(ctx context.Context, tx *Tx, u *Update, t *Transaction) error
}

// Transaction is what one committed update does to the ledger.
type Transaction struct {
	Consume    []ContractRef // contracts it archives
	Create     []Contract    // contracts it creates; Commit sets their ids
	Mint       bool          // it may create holdings out of nothing (the dev tap)
	MintAssets bool          // it may create non-fungible assets that never existed (an NFT mint)
	BurnAssets bool          // it may retire the non-fungible assets it consumes for good (a burn)
}

// ContractRef names a contract: its template (table) and id.
type ContractRef struct {
	Template string `json:"template"`
	CID      string `json:"cid"`
}

// Contract is a bun model of one contract template. Every template's table has the columns
// of Lifecycle and is described in templates.
type Contract interface {
	lifecycle() *Lifecycle
	template() string
	owner() string // the party that controls the contract
}

// valuedContract holds an amount of an instrument: a holding, or what an offer has locked.
type valuedContract interface {
	value() (Instrument, Amount)
}

// assetContract carries one non-fungible asset (an NFT), identified across its contracts.
type assetContract interface {
	asset() string
}

// escrowContract is an offer that locks another contract while it is active (a listing
// locks the NFT it sells).
type escrowContract interface {
	escrowed() string
}

// templateSpec is what the ledger knows of one contract template, by its table's columns.
type templateSpec struct {
	owner    string // the column naming the party that controls the contract
	valued   bool   // columns instrument and amount: what the contract holds
	offer    bool   // a settlement may consume it; its owner thereby consents to what the settlement credits it
	escrow   string // the column of an offer naming the contract it locks while active
	escrowOf string // the template of that contract
	asset    string // the column naming the non-fungible asset the contract carries
	// receive says what a credit of c to a party that neither signs nor consents needs: a
	// preapproval of that kind, or nothing (""); nil means such a credit is never made.
	receive func(c Contract) PreapprovalKind
}

// templates describes every contract template, by table name.
var templates = map[string]templateSpec{
	templateHolding: {owner: "owner", valued: true, receive: func(c Contract) PreapprovalKind {
		if c.(*Holding).Instrument == USDCx {
			return PreapprovalUSDCx
		}
		return ""
	}},
	templatePreapproval: {owner: "party_id"},
	templateNFT:         {owner: "owner", asset: "nft_id", receive: func(Contract) PreapprovalKind { return PreapprovalNFT }},
	templateListing:     {owner: "seller", offer: true, escrow: "nft_cid", escrowOf: templateNFT},
	templatePool:        {owner: "operator"},
	templateLPQuote:     {owner: "lp", valued: true, offer: true},
	templateLPFee:       {owner: "lp", valued: true},
	templateIntent:      {owner: "taker", valued: true, offer: true},
}

// Lifecycle is the part every contract shares: its id, and the updates that created and
// consumed it.
type Lifecycle struct {
	CID            string     `bun:"cid,pk"`
	CreatedUpdate  string     `bun:"created_update"`
	CreatedAt      Timestamp  `bun:"created_at"`
	ConsumedUpdate *string    `bun:"consumed_update"`
	ConsumedAt     *Timestamp `bun:"consumed_at"`
}

func (l *Lifecycle) lifecycle() *Lifecycle { return l }

// Active tells whether no update has consumed the contract.
func (l *Lifecycle) Active() bool { return l.ConsumedUpdate == nil }

// updateEvent is one row of the event log: an update consumed or created a contract.
type updateEvent struct {
	bun.BaseModel `bun:"table:update_events"`

	UpdateID string `bun:"update_id,pk"`
	Seq      int    `bun:"seq,pk"`
	Event    string `bun:"event"` // "consumed" or "created"
	Template string `bun:"template"`
	CID      string `bun:"cid"`
}

// contractID derives the id of the n-th contract an update creates.
func contractID(updateID string, n int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%d", updateID, n))
	return "00" + hex.EncodeToString(sum[:])
}

// consumedContract is what the ledger reads of a contract as it archives it.
type consumedContract struct {
	template   string
	CID        string     `bun:"cid"`
	Owner      string     `bun:"owner"`
	Instrument Instrument `bun:"instrument"`
	Amount     Amount     `bun:"amount"`
	Escrow     string     `bun:"escrow"`
	Asset      string     `bun:"asset"`
}

// embeddedLedger is the Ledger in the store's own tables.
type embeddedLedger struct{}

func (embeddedLedger) Commit(ctx context.Context, tx *Tx, u *Update, t *Transaction) error {
	signer := u.ActAs
	byTemplate := map[string][]string{}
	for _, ref := range t.Consume {
		if _, ok := templates[ref.Template]; !ok {
			return fmt.Errorf("ledger: unknown template %q", ref.Template)
		}
		byTemplate[ref.Template] = append(byTemplate[ref.Template], ref.CID)
	}
	// Archive in a fixed order of tables, so concurrent transactions lock rows in one order.
	var consumed []consumedContract
	for _, template := range slices.Sorted(maps.Keys(byTemplate)) {
		cs, err := tx.consume(ctx, u, template, byTemplate[template])
		if err != nil {
			return err
		}
		consumed = append(consumed, cs...)
	}

	// A settled offer is its owner's consent to what the transaction credits it, and
	// releases the contract it held.
	consent := map[string]bool{signer: true}
	released := map[string]bool{}
	for _, c := range consumed {
		if spec := templates[c.template]; spec.offer {
			consent[c.Owner] = true
			if c.Escrow != "" {
				released[c.Escrow] = true
			}
		}
	}
	spent := map[Instrument]Amount{}
	assetsIn := map[string]int{}
	for _, c := range consumed {
		spec := templates[c.template]
		if c.Owner != signer && !spec.offer && !released[c.CID] {
			return Errorf(CodePartyMismatch, "%s %s belongs to %s, not to the signer %s", noun(c.template), c.CID, c.Owner, signer)
		}
		if spec.valued {
			spent[c.Instrument] = spent[c.Instrument].Add(c.Amount)
		}
		if spec.asset != "" {
			assetsIn[c.Asset]++
		}
	}
	if err := tx.checkNotEscrowed(ctx, byTemplate); err != nil {
		return err
	}

	var events []updateEvent
	for _, ref := range t.Consume {
		events = append(events, updateEvent{UpdateID: u.UpdateID, Seq: len(events), Event: "consumed", Template: ref.Template, CID: ref.CID})
	}
	credited := map[Instrument]Amount{}
	assetsOut := map[string]int{}
	for i, c := range t.Create {
		spec, ok := templates[c.template()]
		if !ok {
			return fmt.Errorf("ledger: unknown template %q", c.template())
		}
		l := c.lifecycle()
		l.CID, l.CreatedUpdate, l.CreatedAt = contractID(u.UpdateID, i), u.UpdateID, At(tx.now)
		if owner := c.owner(); !consent[owner] {
			if spec.receive == nil {
				return fmt.Errorf("ledger: a %s cannot be created for %s, who neither signs nor consents", noun(c.template()), owner)
			}
			if kind := spec.receive(c); kind != "" {
				if err := tx.requirePreapproval(ctx, owner, kind); err != nil {
					return err
				}
			}
		}
		if v, ok := c.(valuedContract); ok {
			inst, amount := v.value()
			if err := checkAmountBounds(amount); err != nil {
				return err
			}
			credited[inst] = credited[inst].Add(amount)
		}
		if a, ok := c.(assetContract); ok {
			assetsOut[a.asset()]++
		}
		if e, ok := c.(escrowContract); ok {
			if err := tx.checkEscrowable(ctx, spec, e.escrowed(), c.owner()); err != nil {
				return err
			}
		}
		events = append(events, updateEvent{UpdateID: u.UpdateID, Seq: len(events), Event: "created", Template: c.template(), CID: l.CID})
	}
	if !t.Mint {
		for _, inst := range Instruments {
			if !spent[inst].Equal(credited[inst]) {
				return fmt.Errorf("ledger: %s not conserved: spends %s, credits %s", inst, spent[inst], credited[inst])
			}
		}
	}
	if err := tx.checkAssets(ctx, t, assetsIn, assetsOut); err != nil {
		return err
	}
	if err := tx.insertContracts(ctx, t.Create); err != nil {
		return err
	}
	if len(events) > 0 {
		return tx.later(ctx, tx.NewInsert().Model(&events))
	}
	return nil
}

// noun is a template's name for messages: "holding", "preapproval".
func noun(template string) string { return strings.TrimSuffix(template, "s") }

// checkAssets enforces that every non-fungible asset has one live contract: a transaction
// that is not a mint creates only assets it consumes, one that is not a burn consumes only
// assets it creates again, and a mint creates only assets that never existed.
func (tx *Tx) checkAssets(ctx context.Context, t *Transaction, in, out map[string]int) error {
	for a, n := range out {
		if n > 1 {
			return fmt.Errorf("ledger: transaction creates asset %s %d times", a, n)
		}
		if in[a] == 0 && !t.MintAssets {
			return fmt.Errorf("ledger: transaction creates asset %s without consuming it or minting", a)
		}
	}
	for a, n := range in {
		if n > 1 {
			return fmt.Errorf("ledger: transaction consumes asset %s %d times", a, n)
		}
		if out[a] == 0 && !t.BurnAssets {
			return fmt.Errorf("ledger: transaction consumes asset %s without creating it again or burning it", a)
		}
	}
	if !t.MintAssets {
		return nil
	}
	minted := map[string][]string{}
	for _, c := range t.Create {
		if a, ok := c.(assetContract); ok && in[a.asset()] == 0 {
			minted[c.template()] = append(minted[c.template()], a.asset())
		}
	}
	for template, assets := range minted {
		col := templates[template].asset
		n, err := tx.NewSelect().Table(template).Where("? IN (?)", bun.Ident(col), bun.In(assets)).Count(ctx)
		if err != nil {
			return err
		}
		if n > 0 {
			return Errorf(CodeStale, "an asset this transaction mints exists already; prepare it again")
		}
	}
	return nil
}

// checkEscrowable refuses an offer that would lock a contract that is not an active one of
// the offer's owner. The row lock keeps a concurrent transaction from consuming the contract
// until this one commits; the unique index on the offer's escrow column keeps two offers
// from locking it.
func (tx *Tx) checkEscrowable(ctx context.Context, spec templateSpec, cid, owner string) error {
	var holder []string
	q := tx.NewSelect().Table(spec.escrowOf).ColumnExpr("?", bun.Ident(templates[spec.escrowOf].owner)).
		Where("cid = ?", cid).Where("consumed_update IS NULL")
	if err := tx.forUpdate(q).Scan(ctx, &holder); err != nil {
		return err
	}
	if len(holder) == 0 {
		return Errorf(CodeStale, "%s %s was consumed since this transaction was prepared; prepare it again", noun(spec.escrowOf), cid)
	}
	if holder[0] != owner {
		return Errorf(CodePartyMismatch, "%s %s belongs to %s, not to %s", noun(spec.escrowOf), cid, holder[0], owner)
	}
	return nil
}

// checkNotEscrowed refuses consuming a contract that an active offer still locks: the offer
// must be settled or withdrawn in the same transaction.
func (tx *Tx) checkNotEscrowed(ctx context.Context, consumed map[string][]string) error {
	for _, template := range slices.Sorted(maps.Keys(templates)) {
		spec := templates[template]
		cids := consumed[spec.escrowOf]
		if spec.escrow == "" || len(cids) == 0 {
			continue
		}
		var locked []string
		err := tx.NewSelect().Table(template).Column("cid").
			Where("? IN (?)", bun.Ident(spec.escrow), bun.In(cids)).Where("consumed_update IS NULL").
			Limit(1).Scan(ctx, &locked)
		if err != nil {
			return err
		}
		if len(locked) > 0 {
			return Errorf(CodeConflict, "%s %s is active and holds a contract this transaction consumes; cancel it first", noun(template), locked[0])
		}
	}
	return nil
}

// insertContracts writes the created contracts, one INSERT per template.
func (tx *Tx) insertContracts(ctx context.Context, cs []Contract) error {
	byType := map[reflect.Type]reflect.Value{}
	var order []reflect.Type
	for _, c := range cs {
		t := reflect.TypeOf(c)
		rows, ok := byType[t]
		if !ok {
			rows = reflect.MakeSlice(reflect.SliceOf(t), 0, 1)
			order = append(order, t)
		}
		byType[t] = reflect.Append(rows, reflect.ValueOf(c))
	}
	for _, t := range order {
		rows := reflect.New(reflect.SliceOf(t))
		rows.Elem().Set(byType[t])
		if err := tx.later(ctx, tx.NewInsert().Model(rows.Interface())); err != nil {
			return err
		}
	}
	return nil
}

// consume archives the contracts cids of template for update u, all or none: a contract
// already consumed (or never created) makes the whole transaction stale. It returns what the
// ledger's rules need to know of each.
func (tx *Tx) consume(ctx context.Context, u *Update, template string, cids []string) ([]consumedContract, error) {
	if len(cids) == 0 {
		return nil, nil
	}
	if len(slices.Compact(slices.Sorted(slices.Values(cids)))) != len(cids) {
		return nil, fmt.Errorf("ledger: transaction consumes a contract twice")
	}
	spec := templates[template]
	cols := []string{"cid", spec.owner + " AS owner"}
	if spec.valued {
		cols = append(cols, "instrument", "amount")
	}
	if spec.escrow != "" {
		cols = append(cols, spec.escrow+" AS escrow")
	}
	if spec.asset != "" {
		cols = append(cols, spec.asset+" AS asset")
	}
	var out []consumedContract
	err := tx.NewUpdate().Table(template).
		Set("consumed_update = ?", u.UpdateID).
		Set("consumed_at = ?", At(tx.now)).
		Where("cid IN (?)", bun.In(cids)).
		Where("consumed_update IS NULL").
		Returning(strings.Join(cols, ", ")).
		Scan(ctx, &out)
	if err != nil {
		return nil, err
	}
	if len(out) != len(cids) {
		return nil, Errorf(CodeStale, "%d of the %d contracts this transaction consumes were consumed since it was prepared (%s); prepare it again", len(cids)-len(out), len(cids), noun(template))
	}
	for i := range out {
		out[i].template = template
	}
	return out, nil
}
