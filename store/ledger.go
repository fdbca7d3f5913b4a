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
// would mirror the update it answers with. Its methods take exported types only, so a
// package outside the store can implement it (internal/memledger does, in memory): tx is the
// store's database transaction the commit is part of, which a ledger outside the database
// need not use; contracts are read through the Contract interface and the optional
// ValuedContract, AssetContract and EscrowContract.
type Ledger interface {
	// Commit applies t as part of update u, signed by u.ActAs. Every consumed contract must be
	// active (else stale) and controlled by the signer, unless it is an offer (a listing, an
	// LP quote, an intent) that the transaction settles, or a contract such an offer holds.
	// Every instrument and every non-fungible asset is conserved unless t mints or burns it.
	// A credit to a party that neither signs nor has an offer settled by t obeys that party's
	// receive-preapproval (USDCx, NFTs). Commit assigns the ids of the contracts t creates.
	Commit(ctx context.Context, tx *Tx, u *Update, t *Transaction) error
	// CommitBatch applies ts[i] as part of us[i], in order, as Commit would one after the
	// other; a transaction may consume what an earlier one of the batch creates. When one of
	// them would fail it answers its index and error, and the caller must roll back whatever
	// the call did; else it answers -1 and nil.
	CommitBatch(ctx context.Context, tx *Tx, us []*Update, ts []*Transaction) (int, error)
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
	Life() *Lifecycle   // its id and the updates that created and consumed it
	Template() string   // its template: the table it lives in
	Controller() string // the party that controls the contract
}

// ValuedContract holds an amount of an instrument: a holding, or what an offer has locked.
type ValuedContract interface {
	Holds() (Instrument, Amount)
}

// AssetContract carries one non-fungible asset (an NFT), identified across its contracts.
type AssetContract interface {
	Asset() string
}

// payloadContract is a contract whose template gives the ledger's observers a payload
// (templateSpec.payload): what they read of it beyond the ledger's own rules.
type payloadContract interface {
	payload() contractPayload
}

// contractPayload is what a template's observers read of a contract the ledger creates or
// archives: a key and two figures, whose meaning the template's part gives (for an LP quote
// its pool, price and remaining size). The ledger only carries it.
type contractPayload struct {
	Key     string
	Figures [2]Amount
}

// EscrowContract is an offer that locks another contract while it is active (a listing
// locks the NFT it sells).
type EscrowContract interface {
	Escrowed() string
}

// templateSpec is what the ledger knows of one contract template, by its table's columns.
type templateSpec struct {
	owner    string // the column naming the party that controls the contract
	valued   bool   // columns instrument and amount: what the contract holds
	offer    bool   // a settlement may consume it; its owner thereby consents to what the settlement credits it
	escrow   string // the column of an offer naming the contract it locks while active
	escrowOf string // the template of that contract
	asset    string // the column naming the non-fungible asset the contract carries
	// payload names the columns of the key and the two figures the ledger's observers read of
	// the contract as it is archived ("" for none: an empty key, a zero figure); the
	// contract's payload method answers the same of a contract in memory.
	payload [3]string
	// folds: a settlement of its owner's offer may consume it if it creates the same template
	// for the same owner with at least as much: an LP's running fee, which each fill of the
	// LP's quote consumes and creates again with the fill's fee added.
	folds bool
	// receive says what a credit of c to a party that neither signs nor consents needs: a
	// preapproval of that kind, or nothing (""); nil means such a credit is never made.
	receive func(c Contract) PreapprovalKind
}

// templates describes every contract template, by table name: the ledger's own here, the
// others as their part registers them (registerTemplate).
var templates = map[string]templateSpec{
	templateHolding: {owner: "owner", valued: true, receive: func(c Contract) PreapprovalKind {
		if c.(*Holding).Instrument == USDCx {
			return PreapprovalUSDCx
		}
		return ""
	}},
	templatePreapproval: {owner: "party_id"},
}

// registerTemplate makes a contract template known to the ledger; a part registers its
// templates from the init of the file that defines their contracts.
func registerTemplate(name string, spec templateSpec) {
	if _, ok := templates[name]; ok {
		panic("ledger: template " + name + " registered twice")
	}
	templates[name] = spec
}

// ledgerObserver sees, inside the transaction, what a batch of ledger transactions does as
// the ledger commits it: consumed[i] is what ts[i] archives, ts[i].Create what it creates. An
// error fails the whole batch. A part keeps state derived from contracts this way (a swap
// pool's running figures).
type ledgerObserver func(ctx context.Context, tx *Tx, consumed [][]consumedContract, ts []*Transaction) error

// ledgerObservers are the observers of every commit, in the order they were registered.
var ledgerObservers []ledgerObserver

// observeLedger registers o to see every commit; a part registers from its file's init.
func observeLedger(o ledgerObserver) { ledgerObservers = append(ledgerObservers, o) }

// Lifecycle is the part every contract shares: its id, and the updates that created and
// consumed it.
type Lifecycle struct {
	CID            string     `bun:"cid,pk"`
	CreatedUpdate  string     `bun:"created_update"`
	CreatedAt      Timestamp  `bun:"created_at"`
	ConsumedUpdate *string    `bun:"consumed_update"`
	ConsumedAt     *Timestamp `bun:"consumed_at"`
}

func (l *Lifecycle) Life() *Lifecycle { return l }

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
	CID        string
	Owner      string
	Instrument Instrument
	Amount     Amount
	Escrow     string
	Asset      string
	Payload    contractPayload // what its template's observers read of it
	batch      int             // the index of the consuming transaction in its batch
}

// embeddedLedger is the Ledger in the store's own tables.
type embeddedLedger struct{}

func (l embeddedLedger) Commit(ctx context.Context, tx *Tx, u *Update, t *Transaction) error {
	_, err := l.CommitBatch(ctx, tx, []*Update{u}, []*Transaction{t})
	return err
}

// identify gives the contracts t creates their ids (a function of the update's id and their
// place in t, so a caller may name them before the commit) and their creation.
func identify(tx *Tx, u *Update, t *Transaction) {
	for i, c := range t.Create {
		l := c.Life()
		l.CID, l.CreatedUpdate, l.CreatedAt = contractID(u.UpdateID, i), u.UpdateID, At(tx.now)
	}
}

// CommitBatch archives what the whole batch consumes with one statement per template; what an
// earlier transaction of the batch created is archived in memory, before it is written.
func (embeddedLedger) CommitBatch(ctx context.Context, tx *Tx, us []*Update, ts []*Transaction) (int, error) {
	created := map[string]Contract{} // by id: what the batch created and has not consumed yet
	byTemplate := map[string][]batchConsume{}
	consumed := make([][]consumedContract, len(ts))
	wanted := make([]int, len(ts)) // how many contracts each transaction archives in the store
	for i, t := range ts {
		identify(tx, us[i], t)
		seen := map[string]bool{}
		for _, ref := range t.Consume {
			if _, ok := templates[ref.Template]; !ok {
				return i, fmt.Errorf("ledger: unknown template %q", ref.Template)
			}
			if seen[ref.CID] {
				return i, fmt.Errorf("ledger: transaction consumes a contract twice")
			}
			seen[ref.CID] = true
			if c, ok := created[ref.CID]; ok && c.Template() == ref.Template {
				delete(created, ref.CID)
				l := c.Life()
				l.ConsumedUpdate, l.ConsumedAt = &us[i].UpdateID, AtPtr(tx.now)
				consumed[i] = append(consumed[i], consumedOf(c))
				continue
			}
			byTemplate[ref.Template] = append(byTemplate[ref.Template], batchConsume{ref.CID, i})
			wanted[i]++
		}
		for _, c := range t.Create {
			created[c.Life().CID] = c
		}
	}
	cs, err := tx.consume(ctx, us, byTemplate)
	if err != nil {
		return 0, err
	}
	got := make([]int, len(ts))
	for _, c := range cs {
		consumed[c.batch] = append(consumed[c.batch], c)
		got[c.batch]++
	}
	for i := range ts {
		if got[i] != wanted[i] {
			return i, Errorf(CodeStale, "%d of the %d contracts this transaction consumes were consumed since it was prepared; prepare it again", wanted[i]-got[i], len(ts[i].Consume))
		}
	}
	var events []updateEvent
	var creates []Contract
	minted := map[string][]batchConsume{} // by template: the assets each transaction mints
	for i, t := range ts {
		evs, assets, err := tx.check(ctx, us[i], t, consumed[i])
		if err != nil {
			return i, err
		}
		for template, as := range assets {
			for _, a := range as {
				minted[template] = append(minted[template], batchConsume{a, i})
			}
		}
		events = append(events, evs...)
		creates = append(creates, t.Create...)
	}
	if i, err := tx.mintedAnew(ctx, minted); err != nil || i >= 0 {
		if err != nil {
			return -1, err
		}
		return i, Errorf(CodeStale, "an asset this transaction mints exists already; prepare it again")
	}
	for _, observe := range ledgerObservers {
		if err := observe(ctx, tx, consumed, ts); err != nil {
			return 0, err
		}
	}
	if err := tx.insertContracts(ctx, creates); err != nil {
		return 0, err
	}
	if len(events) > 0 {
		return -1, tx.later(ctx, tx.NewInsert().Model(&events))
	}
	return -1, nil
}

// batchConsume is a contract a transaction of a batch archives: its id and the transaction's index.
type batchConsume struct {
	cid   string
	batch int
}

// consumedOf is what the ledger knows of a contract it archives before writing it.
func consumedOf(c Contract) consumedContract {
	cc := consumedContract{template: c.Template(), CID: c.Life().CID, Owner: c.Controller()}
	if v, ok := c.(ValuedContract); ok {
		cc.Instrument, cc.Amount = v.Holds()
	}
	if e, ok := c.(EscrowContract); ok {
		cc.Escrow = e.Escrowed()
	}
	if a, ok := c.(AssetContract); ok {
		cc.Asset = a.Asset()
	}
	if p, ok := c.(payloadContract); ok {
		cc.Payload = p.payload()
	}
	return cc
}

// check applies the ledger's rules to t, whose consumed contracts are archived, and returns
// the update's events.
func (tx *Tx) check(ctx context.Context, u *Update, t *Transaction, consumed []consumedContract) ([]updateEvent, map[string][]string, error) {
	signer := u.ActAs
	byTemplate := map[string][]string{}
	for _, c := range consumed {
		byTemplate[c.template] = append(byTemplate[c.template], c.CID)
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
	folded := map[foldKey]Amount{} // what running contracts of others this settlement folds
	for _, c := range consumed {
		spec := templates[c.template]
		if c.Owner != signer && !spec.offer && !released[c.CID] {
			if !spec.folds || !consent[c.Owner] {
				return nil, nil, Errorf(CodePartyMismatch, "%s %s belongs to %s, not to the signer %s", noun(c.template), c.CID, c.Owner, signer)
			}
			k := foldKey{c.template, c.Owner, c.Instrument}
			folded[k] = folded[k].Add(c.Amount)
		}
		if spec.valued {
			spent[c.Instrument] = spent[c.Instrument].Add(c.Amount)
		}
		if spec.asset != "" {
			assetsIn[c.Asset]++
		}
	}
	if err := tx.checkNotEscrowed(ctx, byTemplate); err != nil {
		return nil, nil, err
	}

	var events []updateEvent
	for _, ref := range t.Consume {
		events = append(events, updateEvent{UpdateID: u.UpdateID, Seq: len(events), Event: "consumed", Template: ref.Template, CID: ref.CID})
	}
	credited := map[Instrument]Amount{}
	assetsOut := map[string]int{}
	for _, c := range t.Create {
		spec, ok := templates[c.Template()]
		if !ok {
			return nil, nil, fmt.Errorf("ledger: unknown template %q", c.Template())
		}
		if owner := c.Controller(); !consent[owner] {
			if spec.receive == nil {
				return nil, nil, fmt.Errorf("ledger: a %s cannot be created for %s, who neither signs nor consents", noun(c.Template()), owner)
			}
			if kind := spec.receive(c); kind != "" {
				if err := tx.requirePreapproval(ctx, owner, kind); err != nil {
					return nil, nil, err
				}
			}
		}
		if v, ok := c.(ValuedContract); ok {
			inst, amount := v.Holds()
			if err := checkAmountBounds(amount); err != nil {
				return nil, nil, err
			}
			credited[inst] = credited[inst].Add(amount)
		}
		if a, ok := c.(AssetContract); ok {
			assetsOut[a.Asset()]++
		}
		if e, ok := c.(EscrowContract); ok {
			if err := tx.checkEscrowable(ctx, spec, e.Escrowed(), c.Controller()); err != nil {
				return nil, nil, err
			}
		}
		events = append(events, updateEvent{UpdateID: u.UpdateID, Seq: len(events), Event: "created", Template: c.Template(), CID: c.Life().CID})
	}
	if len(folded) > 0 { // a settlement folded another party's running contract
		for _, c := range t.Create {
			if v, ok := c.(ValuedContract); ok {
				inst, amount := v.Holds()
				k := foldKey{c.Template(), c.Controller(), inst}
				if a, ok := folded[k]; ok {
					folded[k] = a.Sub(amount)
				}
			}
		}
	}
	for k, a := range folded {
		if a.IsPositive() {
			return nil, nil, fmt.Errorf("ledger: a settlement takes %s %s from %s's %s", a, k.instrument, k.owner, noun(k.template))
		}
	}
	if !t.Mint {
		for _, inst := range Instruments {
			if !spent[inst].Equal(credited[inst]) {
				return nil, nil, fmt.Errorf("ledger: %s not conserved: spends %s, credits %s", inst, spent[inst], credited[inst])
			}
		}
	}
	minted, err := checkAssets(t, assetsIn, assetsOut)
	return events, minted, err
}

// foldKey names the running contracts of one template, owner and instrument.
type foldKey struct {
	template, owner string
	instrument      Instrument
}

// noun is a template's name for messages: "holding", "preapproval".
func noun(template string) string { return strings.TrimSuffix(template, "s") }

// checkAssets enforces that every non-fungible asset has one live contract: a transaction
// that is not a mint creates only assets it consumes, one that is not a burn consumes only
// assets it creates again. It returns the assets a mint creates, by template: the caller
// checks that they never existed (mintedAnew).
func checkAssets(t *Transaction, in, out map[string]int) (map[string][]string, error) {
	for a, n := range out {
		if n > 1 {
			return nil, fmt.Errorf("ledger: transaction creates asset %s %d times", a, n)
		}
		if in[a] == 0 && !t.MintAssets {
			return nil, fmt.Errorf("ledger: transaction creates asset %s without consuming it or minting", a)
		}
	}
	for a, n := range in {
		if n > 1 {
			return nil, fmt.Errorf("ledger: transaction consumes asset %s %d times", a, n)
		}
		if out[a] == 0 && !t.BurnAssets {
			return nil, fmt.Errorf("ledger: transaction consumes asset %s without creating it again or burning it", a)
		}
	}
	if !t.MintAssets {
		return nil, nil
	}
	minted := map[string][]string{}
	for _, c := range t.Create {
		if a, ok := c.(AssetContract); ok && in[a.Asset()] == 0 {
			minted[c.Template()] = append(minted[c.Template()], a.Asset())
		}
	}
	return minted, nil
}

// mintedAnew checks, with one statement per template for the whole batch, that the assets
// its transactions mint (minted, by template, each with its transaction's index) never
// existed, nor are minted twice in the batch. It returns the index of the first transaction
// that mints one that did (-1 for none).
func (tx *Tx) mintedAnew(ctx context.Context, minted map[string][]batchConsume) (int, error) {
	refused := -1
	refuse := func(i int) {
		if refused < 0 || i < refused {
			refused = i
		}
	}
	for _, template := range sortedKeys(minted) {
		assets := minted[template]
		ids := make([]string, len(assets))
		by := map[string]int{}
		for j, a := range assets {
			ids[j] = a.cid
			if i, ok := by[a.cid]; ok {
				refuse(max(i, a.batch))
				continue
			}
			by[a.cid] = a.batch
		}
		var existing []string
		col := templates[template].asset
		if err := tx.NewSelect().Table(template).Column(col).Where("? IN (?)", bun.Ident(col), bun.In(ids)).Scan(ctx, &existing); err != nil {
			return -1, err
		}
		for _, a := range existing {
			refuse(by[a])
		}
	}
	return refused, nil
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

// consume archives the contracts that the batch's updates us consume, each for its update,
// with one UPDATE per template, in a fixed order of tables so concurrent transactions lock
// rows in one order; on PostgreSQL the UPDATEs are one statement (data-modifying WITH
// queries, run in the order the UNION reads them). A contract already consumed (or never
// created) is left out of the answer. It returns what the ledger's rules need to know of each.
func (tx *Tx) consume(ctx context.Context, us []*Update, byTemplate map[string][]batchConsume) ([]consumedContract, error) {
	var (
		rows    []consumedRow
		queries []string
	)
	for _, template := range slices.Sorted(maps.Keys(byTemplate)) {
		q := tx.consumeQuery(us, template, byTemplate[template])
		if tx.s.dialect != Postgres || len(byTemplate) == 1 {
			var part []consumedRow
			if err := q.Scan(ctx, &part); err != nil {
				return nil, err
			}
			rows = append(rows, part...)
			continue
		}
		b, err := q.AppendQuery(tx.s.wdb.QueryGen(), nil)
		if err != nil {
			return nil, err
		}
		queries = append(queries, string(b))
	}
	if len(queries) > 0 {
		var with, union []string
		for i, q := range queries {
			with = append(with, fmt.Sprintf("c%d AS (%s)", i, q))
			union = append(union, fmt.Sprintf("SELECT * FROM c%d", i))
		}
		// Executed as written: the text holds no placeholders, only quoted values.
		sqlRows, err := tx.Tx.Tx.QueryContext(ctx, "WITH "+strings.Join(with, ", ")+" "+strings.Join(union, " UNION ALL "))
		if err != nil {
			return nil, err
		}
		if err := tx.s.wdb.ScanRows(ctx, sqlRows, &rows); err != nil {
			return nil, err
		}
	}
	batchOf := map[string]int{}
	for i, u := range us {
		batchOf[u.UpdateID] = i
	}
	out := make([]consumedContract, len(rows))
	for i, r := range rows {
		out[i] = consumedContract{template: r.Template, CID: r.CID, Owner: r.Owner, batch: batchOf[r.ConsumedUpdate]}
		if r.Instrument != nil {
			out[i].Instrument = *r.Instrument
		}
		if r.Amount != nil {
			out[i].Amount = *r.Amount
		}
		if r.Escrow != nil {
			out[i].Escrow = *r.Escrow
		}
		if r.Asset != nil {
			out[i].Asset = *r.Asset
		}
		if r.Key != nil {
			out[i].Payload.Key = *r.Key
		}
		for j, f := range [2]*Amount{r.Figure1, r.Figure2} {
			if f != nil {
				out[i].Payload.Figures[j] = *f
			}
		}
	}
	return out, nil
}

// consumedRow is what archiving a contract answers, in the same columns for every template.
type consumedRow struct {
	Template       string      `bun:"template"`
	CID            string      `bun:"cid"`
	Owner          string      `bun:"owner"`
	ConsumedUpdate string      `bun:"consumed_update"`
	Instrument     *Instrument `bun:"instrument"`
	Amount         *Amount     `bun:"amount"`
	Escrow         *string     `bun:"escrow"`
	Asset          *string     `bun:"asset"`
	Key            *string     `bun:"payload_key"`
	Figure1        *Amount     `bun:"payload_figure1"`
	Figure2        *Amount     `bun:"payload_figure2"`
}

// consumeQuery archives the contracts cs of template, each for its update of us, and
// returns them as consumedRow.
func (tx *Tx) consumeQuery(us []*Update, template string, cs []batchConsume) *bun.UpdateQuery {
	spec := templates[template]
	col := func(name, as string) string {
		switch {
		case name != "":
			return name + " AS " + as
		case as == "amount" || as == "payload_figure1" || as == "payload_figure2": // typed, as the UNION of templates needs
			return "CAST(NULL AS NUMERIC) AS " + as
		}
		return "NULL AS " + as
	}
	instrument, amount := "", ""
	if spec.valued {
		instrument, amount = "instrument", "amount"
	}
	cols := []string{"'" + template + "' AS template", "cid", col(spec.owner, "owner"), "consumed_update",
		col(instrument, "instrument"), col(amount, "amount"), col(spec.escrow, "escrow"), col(spec.asset, "asset"),
		col(spec.payload[0], "payload_key"), col(spec.payload[1], "payload_figure1"), col(spec.payload[2], "payload_figure2")}
	cids := make([]string, len(cs))
	updates := map[string]bool{}
	for i, c := range cs {
		cids[i] = c.cid
		updates[us[c.batch].UpdateID] = true
	}
	q := tx.NewUpdate().Table(template)
	if len(updates) == 1 {
		q = q.Set("consumed_update = ?", us[cs[0].batch].UpdateID)
	} else {
		set, args := []byte("consumed_update = CASE cid"), make([]any, 0, 2*len(cs))
		for _, c := range cs {
			set = append(set, " WHEN ? THEN ?"...)
			args = append(args, c.cid, us[c.batch].UpdateID)
		}
		q = q.Set(string(append(set, " END"...)), args...)
	}
	return q.Set("consumed_at = ?", At(tx.now)).
		Where("cid IN (?)", bun.In(cids)).
		Where("consumed_update IS NULL").
		Returning(strings.Join(cols, ", "))
}
