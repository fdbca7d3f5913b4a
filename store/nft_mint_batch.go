package store

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/uptrace/bun"
)

// A drop: a collection's mint phase opens and a crowd mints from it at once, every mint
// locking the collection's row. Its executes are batched as every execute of one row is
// (ledger_execute_batch.go), and a batch of mints applies in one pass instead of one mint after
// another: the collection is locked once, its phases, the minters' counts and the next items
// are read once, each mint is checked in memory against the counts the earlier mints of the
// batch left, the ledger commits all their transactions with one CommitBatch, and the NFTs'
// items, traits and history events of the whole batch are written with one INSERT per table
// (mintedRows). A mint the
// phase or the supply no longer allows is answered alone and changes nothing; one the ledger
// refuses (its payment spent meanwhile) rolls the attempt back, and the batch is applied
// again without it. A mint applied alone is a batch of one.

// mintsInOnePass applies a batch of mints of one collection in one pass.
var mintsInOnePass = &onePass{apply: (*Tx).applyMintBatch}

// mintBatchKey batches the mints of one collection, applied in one pass (applyMintBatch).
func mintBatchKey(e *mintEffects) batchKey {
	return batchKey{row: "collection/" + e.CollectionID, way: mintsInOnePass}
}

// buyBatchKey batches the buys and sweeps of one collection: they all lock it.
func buyBatchKey(e *buyEffects) batchKey { return batchKey{row: "collection/" + e.CollectionID} }

func applyMint(ctx context.Context, tx *Tx, u *Update, e *mintEffects) (any, error) {
	results, errs, _, err := tx.applyMints(ctx, []*Update{u}, []*mintEffects{e})
	if err != nil {
		return nil, err
	}
	return results[0], errs[0]
}

// phaseParty is a party in a phase, whose mints the phase counts.
type phaseParty struct{ phase, party string }

// applyMints applies the mints es of one collection, each as its own ledger update us[i],
// in one pass. A mint the phase or the supply does not allow any more gets its error in errs
// and changes nothing. When the ledger refuses one, err is its refusal and refusedAt its
// index; any other err (refusedAt -1) fails them all.
func (tx *Tx) applyMints(ctx context.Context, us []*Update, es []*mintEffects) (results []any, errs []error, refusedAt int, err error) {
	ct, err := tx.lockCollection(ctx, es[0].CollectionID)
	if err != nil {
		return nil, nil, -1, err
	}
	c := ct.c
	var names, minters []string
	total := 0
	for _, e := range es {
		if e.CollectionID != c.ID {
			return nil, nil, -1, fmt.Errorf("nft: a batch of mints of %s has one of %s", c.ID, e.CollectionID)
		}
		names, minters, total = append(names, e.Phase), append(minters, e.Minter), total+e.Quantity
	}
	var phases []MintPhase
	if err := tx.NewSelect().Model(&phases).Where("collection_id = ?", c.ID).Where("name IN (?)", bun.In(names)).Scan(ctx); err != nil {
		return nil, nil, -1, err
	}
	byName := map[string]*MintPhase{}
	var allowLists []string
	for i := range phases {
		byName[phases[i].Name] = &phases[i]
		if phases[i].AllowList {
			allowLists = append(allowLists, phases[i].Name)
		}
	}
	var counts []phaseMints
	if err := tx.NewSelect().Model(&counts).Where("collection_id = ?", c.ID).Where("phase IN (?)", bun.In(names)).
		Where("party_id IN (?)", bun.In(minters)).Scan(ctx); err != nil {
		return nil, nil, -1, err
	}
	minted := map[phaseParty]int{}
	for _, pm := range counts {
		minted[phaseParty{pm.Phase, pm.PartyID}] = pm.Minted
	}
	allowed := map[phaseParty]bool{}
	if len(allowLists) > 0 {
		var rows []phaseAllow
		if err := tx.NewSelect().Model(&rows).Where("collection_id = ?", c.ID).Where("phase IN (?)", bun.In(allowLists)).
			Where("party_id IN (?)", bun.In(minters)).Scan(ctx); err != nil {
			return nil, nil, -1, err
		}
		for _, r := range rows {
			allowed[phaseParty{r.Phase, r.PartyID}] = true
		}
	}
	// The items of every serial the batch may mint, in serial order from the next one.
	var items []collectionItem
	if err := tx.NewSelect().Model(&items).Where("collection_id = ?", c.ID).Where("serial > ?", c.Minted).
		Where("serial <= ?", min(c.Minted+total, c.Supply)).Order("serial").Scan(ctx); err != nil {
		return nil, nil, -1, err
	}
	first := c.Minted
	type stagedMint struct {
		at    int // in es
		items []collectionItem
		nfts  []*NFT
	}
	var (
		staged  []stagedMint
		ts      []*Transaction
		sus     []*Update
		changed = map[phaseParty]bool{}
	)
	errs, results = make([]error, len(es)), make([]any, len(es))
	for i, e := range es {
		ph, ok := byName[e.Phase]
		if !ok {
			return nil, nil, -1, fmt.Errorf("nft: collection %s has no phase %q", c.ID, e.Phase)
		}
		if e.Slug != "" && e.Slug != c.Slug {
			errs[i] = Errorf(CodeStale, "the mint was prepared for collection %q, not %q", e.Slug, c.Slug)
			continue
		}
		if !ph.ActiveAt(tx.Now()) {
			errs[i] = Errorf(CodeStale, "phase %q of %s is not active any more; prepare again", ph.Name, c.Slug)
			continue
		}
		k := phaseParty{ph.Name, e.Minter}
		if err := mintCheck(c, ph, allowed[k], minted[k], e.Quantity, CodeStale); err != nil {
			errs[i] = err
			continue
		}
		from := c.Minted - first
		if from+e.Quantity > len(items) || items[from+e.Quantity-1].Serial != c.Minted+e.Quantity {
			return nil, nil, -1, fmt.Errorf("nft: collection %s has no items for serials %d to %d", c.ID, c.Minted+1, c.Minted+e.Quantity)
		}
		st := stagedMint{at: i, items: items[from : from+e.Quantity]}
		t := &Transaction{MintAssets: true}
		for _, it := range st.items {
			n := &NFT{NFTID: nftIDOf(c.ID, it.Serial), CollectionID: c.ID, Serial: it.Serial, Owner: e.Minter}
			st.nfts, t.Create = append(st.nfts, n), append(t.Create, n)
		}
		addPayment(t, e.Payment)
		staged, ts, sus = append(staged, st), append(ts, t), append(sus, us[i])
		c.Minted, ph.Minted, minted[k] = c.Minted+e.Quantity, ph.Minted+e.Quantity, minted[k]+e.Quantity
		ct.owners[e.Minter] += e.Quantity
		changed[k] = true
	}
	if len(staged) == 0 {
		return results, errs, -1, nil
	}
	if k, err := tx.s.ledger.CommitBatch(ctx, tx.Tx, sus, ts); err != nil {
		if k < 0 {
			return nil, nil, -1, err
		}
		return nil, nil, staged[k].at, err
	}
	var rows mintedRows
	for _, st := range staged {
		if err := rows.add(tx, us[st.at], c, st.items, st.nfts, es[st.at].Price); err != nil {
			return nil, nil, -1, err
		}
		res := MintResult{}
		for _, n := range st.nfts {
			res.ContractIDs = append(res.ContractIDs, n.CID)
		}
		results[st.at] = res
	}
	if err := tx.writeMinted(ctx, &rows); err != nil {
		return nil, nil, -1, err
	}
	keys := slices.SortedFunc(maps.Keys(changed), func(a, b phaseParty) int {
		return cmp.Or(strings.Compare(a.phase, b.phase), strings.Compare(a.party, b.party))
	})
	pms := make([]phaseMints, len(keys))
	phaseChanged := map[string]bool{}
	for i, k := range keys {
		pms[i] = phaseMints{CollectionID: c.ID, Phase: k.phase, PartyID: k.party, Minted: minted[k]}
		phaseChanged[k.phase] = true
	}
	for _, name := range sortedKeys(phaseChanged) {
		if err := tx.Later(ctx, tx.NewUpdate().Model(byName[name]).Column("minted").WherePK()); err != nil {
			return nil, nil, -1, err
		}
	}
	if err := tx.Later(ctx, tx.NewInsert().Model(&pms).On("CONFLICT (collection_id, phase, party_id) DO UPDATE").Set("minted = EXCLUDED.minted")); err != nil {
		return nil, nil, -1, err
	}
	if err := ct.close(ctx); err != nil {
		return nil, nil, -1, err
	}
	return results, errs, -1, nil
}

// applyMintBatch applies the batch's mints that are not refused in one pass (applyInOnePass).
func (tx *Tx) applyMintBatch(ctx context.Context, batch []*executeRequest, prepared map[string]*PreparedTx, refused []bool, results []executeResult) error {
	return applyInOnePass(ctx, tx, batch, prepared, refused, results, KindNFTMint, tx.applyMints)
}

// applyInOnePass applies the batch's executes of kind that are not refused, each as its own
// update, with apply (one pass over all their effects), and sets their results. An execute
// apply answers alone gets its own error; when the ledger refuses one, it answers that one,
// marks it refused and returns errExecuteRefused: the caller rolls back and tries again
// without it.
func applyInOnePass[E any](ctx context.Context, tx *Tx, batch []*executeRequest, prepared map[string]*PreparedTx, refused []bool, results []executeResult,
	kind string, apply func(ctx context.Context, us []*Update, es []*E) ([]any, []error, int, error)) error {
	at, ps, again := tx.pending(batch, prepared, refused, results)
	es, err := batchEffects[E](ps)
	if err != nil {
		return err
	}
	us := make([]*Update, len(ps))
	for j, p := range ps {
		us[j] = &Update{UpdateID: newUpdateID(), Kind: p.Kind, ActAs: p.ActAs}
	}
	if len(es) > 0 {
		minted, errs, k, err := apply(ctx, us, es)
		if err != nil {
			if k < 0 || ErrorCode(err) == CodeInternal {
				return err
			}
			results[at[k]].err, refused[at[k]] = err, true
			return errExecuteRefused
		}
		var applied []*Update
		for j, i := range at {
			if errs[j] != nil {
				results[i].err = errs[j]
				continue
			}
			receipt, err := tx.executed(ps[j], us[j], minted[j], batch[i].x.Signature, &results[i].receipt)
			if err != nil {
				return err
			}
			results[i].receipt = receipt
			applied = append(applied, us[j])
		}
		if len(applied) > 0 {
			tx.recorded = kind
			if err := tx.appendUpdates(ctx, applied); err != nil {
				return err
			}
		}
	}
	tx.answerRepeats(results, again)
	return nil
}
