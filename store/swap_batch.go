package store

import (
	"context"
)

// Submits of intents to one pool are serialised by the pool's lock, and are batched as every
// such execute is (ledger_execute_batch.go), with one difference: a batch of intents takes the
// pool's lock once and matches each intent in memory against the book as the batch's earlier
// fills left it, and the ledger archives what the whole batch consumes (holdings, LP quotes)
// with one statement (Ledger.CommitBatch). An intent the ledger refuses (a holding spent
// meanwhile) rolls the attempt back and is answered alone, and the batch is applied again
// without it.

// intentsInOnePass applies a batch of swap intents to one pool in one pass.
var intentsInOnePass = &onePass{apply: (*Tx).applyIntents}

// intentBatchKey batches the intents to one pool, matched in memory (applyIntents).
func intentBatchKey(e *intentEffects) batchKey {
	return batchKey{row: "pool/" + e.PoolID, way: intentsInOnePass}
}

// applyIntents applies the batch's intents that are not refused, each as its own update,
// and sets their results. When the ledger refuses one, it answers that one, marks it refused
// and returns errExecuteRefused: the caller rolls back and tries again without it.
func (tx *Tx) applyIntents(ctx context.Context, batch []*executeRequest, prepared map[string]*PreparedTx, refused []bool, results []executeResult) error {
	at, ps, again := tx.pending(batch, prepared, refused, results)
	defer tx.answerRepeats(results, again)
	if len(ps) == 0 {
		return nil
	}
	es, err := batchEffects[intentEffects](ps)
	if err != nil {
		return err
	}
	if _, err := tx.lockPool(ctx, es[0].PoolID); err != nil {
		return err
	}
	type staged struct {
		at     int // in batch
		p      *PreparedTx
		intent *stagedIntent
	}
	var (
		us    []*Update
		ts    []*Transaction
		stage []staged
	)
	for j, p := range ps {
		i := at[j]
		u := &Update{UpdateID: newUpdateID(), Kind: p.Kind, ActAs: p.ActAs}
		st, err := tx.stageIntent(ctx, u, es[j])
		if err != nil {
			if ErrorCode(err) == CodeInternal {
				return err
			}
			results[i].err = err
			continue
		}
		us, ts = append(us, u), append(ts, st.t)
		stage = append(stage, staged{at: i, p: p, intent: st})
	}
	if len(stage) == 0 {
		return nil
	}
	if k, err := tx.s.ledger.CommitBatch(ctx, tx.Tx, us, ts); err != nil {
		if k < 0 || ErrorCode(err) == CodeInternal {
			return err
		}
		results[stage[k].at].err, refused[stage[k].at] = err, true
		return errExecuteRefused
	}
	views := make([]*IntentView, len(stage))
	var fills []Fill
	for j, st := range stage {
		v, fs := st.intent.rows(tx, us[j])
		views[j], fills = v, append(fills, fs...)
		receipt, err := tx.executed(st.p, us[j], st.intent.result, batch[st.at].x.Signature, &results[st.at].receipt)
		if err != nil {
			return err
		}
		results[st.at].receipt = receipt
	}
	if err := tx.recordIntents(ctx, views, fills); err != nil {
		return err
	}
	tx.recorded = KindSwapIntent
	return tx.appendUpdates(ctx, us)
}
