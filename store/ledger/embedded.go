package ledger

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/uptrace/bun"
)

// Embedded is the Ledger in the store's own tables: each template's table holds its
// contracts, update_events what each update consumed and created.
type Embedded struct{}

// Commit commits t as u: a batch of one.
func (l Embedded) Commit(ctx context.Context, tx *Tx, u *Update, t *Transaction) error {
	_, err := l.CommitBatch(ctx, tx, []*Update{u}, []*Transaction{t})
	return err
}

// Identify gives the contracts t creates their ids (a function of the update's id and their
// place in t, so a caller may name them before the commit) and their creation, as the embedded
// ledger's commit does.
func Identify(tx *Tx, u *Update, t *Transaction) {
	for i, c := range t.Create {
		l := c.Life()
		l.CID, l.CreatedUpdate, l.CreatedAt = ContractID(u.UpdateID, i), u.UpdateID, At(tx.Now())
	}
}

// CommitBatch archives what the whole batch consumes with one statement per template; what an
// earlier transaction of the batch created is archived in memory, before it is written.
func (Embedded) CommitBatch(ctx context.Context, tx *Tx, us []*Update, ts []*Transaction) (int, error) {
	if len(us) != len(ts) {
		return -1, fmt.Errorf("ledger: %d updates for %d transactions", len(us), len(ts))
	}
	created := map[string]Contract{} // by id: what the batch created and has not consumed yet
	byTemplate := map[string][]batchConsume{}
	consumed := make([][]Archived, len(ts))
	wanted := make([]int, len(ts)) // how many contracts each transaction archives in the store
	for i, t := range ts {
		Identify(tx, us[i], t)
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
				l.ConsumedUpdate, l.ConsumedAt = &us[i].UpdateID, AtPtr(tx.Now())
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
	locks, err := tx.escrowLocks(ctx, consumed)
	if err != nil {
		return -1, err
	}
	var events []EventRow
	var creates []Contract
	minted := map[string][]batchConsume{} // by template: the assets each transaction mints
	for i, t := range ts {
		evs, assets, err := tx.check(ctx, us[i], t, consumed[i], locks)
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
	for _, observe := range observers {
		if err := observe(ctx, tx, consumed, ts); err != nil {
			return 0, err
		}
	}
	if err := tx.insertContracts(ctx, creates); err != nil {
		return 0, err
	}
	if len(events) > 0 {
		return -1, tx.Later(ctx, tx.NewInsert().Model(&events))
	}
	return -1, nil
}

// batchConsume is a contract a transaction of a batch archives: its id and the transaction's index.
type batchConsume struct {
	cid   string
	batch int
}

// consumedOf is what the ledger knows of a contract it archives before writing it.
func consumedOf(c Contract) Archived {
	cc := Archived{Template: c.Template(), CID: c.Life().CID, Owner: c.Controller()}
	if v, ok := c.(ValuedContract); ok {
		cc.Instrument, cc.Amount = v.Holds()
	}
	if e, ok := c.(EscrowContract); ok {
		cc.Escrow = e.Escrowed()
	}
	if a, ok := c.(AssetContract); ok {
		cc.Asset = a.Asset()
	}
	if p, ok := c.(PayloadContract); ok {
		cc.Payload = p.Payload()
	}
	return cc
}

// check applies the ledger's rules to t, whose consumed contracts are archived, and returns
// the update's events.
func (tx *Tx) check(ctx context.Context, u *Update, t *Transaction, consumed []Archived, locks escrowLocks) ([]EventRow, map[string][]string, error) {
	signer := u.ActAs
	byTemplate := map[string][]string{}
	for _, c := range consumed {
		byTemplate[c.Template] = append(byTemplate[c.Template], c.CID)
	}
	// A settled offer is its owner's consent to what the transaction credits it, and
	// releases the contract it held.
	consent := map[string]bool{signer: true}
	released := map[string]bool{}
	for _, c := range consumed {
		if spec := templates[c.Template]; spec.Offer {
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
		spec := templates[c.Template]
		if c.Owner != signer && !spec.Offer && !released[c.CID] {
			if !spec.Folds || !consent[c.Owner] {
				return nil, nil, Errorf(CodePartyMismatch, "%s %s belongs to %s, not to the signer %s", noun(c.Template), c.CID, c.Owner, signer)
			}
			k := foldKey{c.Template, c.Owner, c.Instrument}
			folded[k] = folded[k].Add(c.Amount)
		}
		if spec.Valued {
			spent[c.Instrument] = spent[c.Instrument].Add(c.Amount)
		}
		if spec.Asset != "" {
			assetsIn[c.Asset]++
		}
	}
	if err := locks.refuse(byTemplate); err != nil {
		return nil, nil, err
	}

	var events []EventRow
	for _, ref := range t.Consume {
		events = append(events, EventRow{UpdateID: u.UpdateID, Seq: len(events), Event: "consumed", Template: ref.Template, CID: ref.CID})
	}
	credited := map[Instrument]Amount{}
	assetsOut := map[string]int{}
	for _, c := range t.Create {
		spec, ok := templates[c.Template()]
		if !ok {
			return nil, nil, fmt.Errorf("ledger: unknown template %q", c.Template())
		}
		if owner := c.Controller(); !consent[owner] {
			if spec.Receive == nil {
				return nil, nil, fmt.Errorf("ledger: a %s cannot be created for %s, who neither signs nor consents", noun(c.Template()), owner)
			}
			if kind := spec.Receive(c); kind != "" {
				if err := CheckPreapproval(ctx, tx, owner, kind, tx.Now()); err != nil {
					return nil, nil, err
				}
			}
		}
		if v, ok := c.(ValuedContract); ok {
			inst, amount := v.Holds()
			if err := CheckAmountBounds(amount); err != nil {
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
		events = append(events, EventRow{UpdateID: u.UpdateID, Seq: len(events), Event: "created", Template: c.Template(), CID: c.Life().CID})
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
	for _, template := range slices.Sorted(maps.Keys(minted)) {
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
		col := templates[template].Asset
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
func (tx *Tx) checkEscrowable(ctx context.Context, spec TemplateSpec, cid, owner string) error {
	var holder []string
	q := tx.NewSelect().Table(spec.EscrowOf).ColumnExpr("?", bun.Ident(templates[spec.EscrowOf].Owner)).
		Where("cid = ?", cid).Where("consumed_update IS NULL")
	if err := tx.ForUpdate(q).Scan(ctx, &holder); err != nil {
		return err
	}
	if len(holder) == 0 {
		return Errorf(CodeStale, "%s %s was consumed since this transaction was prepared; prepare it again", noun(spec.EscrowOf), cid)
	}
	if holder[0] != owner {
		return Errorf(CodePartyMismatch, "%s %s belongs to %s, not to %s", noun(spec.EscrowOf), cid, holder[0], owner)
	}
	return nil
}

// escrowLocks are the active offers that lock a contract a batch consumes: by the offer's
// template, then the locked contract's id, the offer's id.
type escrowLocks map[string]map[string]string

// escrowLocks reads, with one statement per escrowing template for the whole batch, the
// active offers that still lock a contract the batch consumes (consumed: each transaction's
// archived contracts). It runs once every consume of the batch is written, so an offer the
// batch settles or withdraws is no longer active.
func (tx *Tx) escrowLocks(ctx context.Context, consumed [][]Archived) (escrowLocks, error) {
	byTemplate := map[string][]string{}
	for _, cs := range consumed {
		for _, c := range cs {
			byTemplate[c.Template] = append(byTemplate[c.Template], c.CID)
		}
	}
	locks := escrowLocks{}
	for _, template := range slices.Sorted(maps.Keys(templates)) {
		spec := templates[template]
		cids := byTemplate[spec.EscrowOf]
		if spec.Escrow == "" || len(cids) == 0 {
			continue
		}
		var rows []struct {
			CID  string `bun:"cid"`
			Held string `bun:"held"`
		}
		err := tx.NewSelect().Table(template).ColumnExpr("cid, ? AS held", bun.Ident(spec.Escrow)).
			Where("? IN (?)", bun.Ident(spec.Escrow), bun.In(cids)).Where("consumed_update IS NULL").
			Scan(ctx, &rows)
		if err != nil {
			return nil, err
		}
		if len(rows) > 0 {
			locks[template] = map[string]string{}
		}
		for _, r := range rows {
			locks[template][r.Held] = r.CID
		}
	}
	return locks, nil
}

// refuse refuses consuming a contract that an active offer still locks (consumed: the
// transaction's archived contracts by template): the offer must be settled or withdrawn in
// the same transaction.
func (l escrowLocks) refuse(consumed map[string][]string) error {
	for _, template := range slices.Sorted(maps.Keys(l)) {
		for _, cid := range consumed[templates[template].EscrowOf] {
			if offer, ok := l[template][cid]; ok {
				return Errorf(CodeConflict, "%s %s is active and holds a contract this transaction consumes; cancel it first", noun(template), offer)
			}
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
		if err := tx.Later(ctx, tx.NewInsert().Model(rows.Interface())); err != nil {
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
func (tx *Tx) consume(ctx context.Context, us []*Update, byTemplate map[string][]batchConsume) ([]Archived, error) {
	var (
		rows    []consumedRow
		queries []string
	)
	for _, template := range slices.Sorted(maps.Keys(byTemplate)) {
		q := tx.consumeQuery(us, template, byTemplate[template])
		if tx.dialect != Postgres || len(byTemplate) == 1 {
			var part []consumedRow
			if err := q.Scan(ctx, &part); err != nil {
				return nil, err
			}
			rows = append(rows, part...)
			continue
		}
		b, err := q.AppendQuery(tx.db.QueryGen(), nil)
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
		sqlRows, err := tx.SQL().QueryContext(ctx, "WITH "+strings.Join(with, ", ")+" "+strings.Join(union, " UNION ALL "))
		if err != nil {
			return nil, err
		}
		if err := tx.db.ScanRows(ctx, sqlRows, &rows); err != nil {
			return nil, err
		}
	}
	batchOf := map[string]int{}
	for i, u := range us {
		batchOf[u.UpdateID] = i
	}
	out := make([]Archived, len(rows))
	for i, r := range rows {
		out[i] = Archived{Template: r.Template, CID: r.CID, Owner: r.Owner, batch: batchOf[r.ConsumedUpdate]}
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
	if spec.Valued {
		instrument, amount = "instrument", "amount"
	}
	cols := []string{"'" + template + "' AS template", "cid", col(spec.Owner, "owner"), "consumed_update",
		col(instrument, "instrument"), col(amount, "amount"), col(spec.Escrow, "escrow"), col(spec.Asset, "asset"),
		col(spec.Payload[0], "payload_key"), col(spec.Payload[1], "payload_figure1"), col(spec.Payload[2], "payload_figure2")}
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
	return q.Set("consumed_at = ?", At(tx.Now())).
		Where("cid IN (?)", bun.In(cids)).
		Where("consumed_update IS NULL").
		Returning(strings.Join(cols, ", "))
}
