package store

import (
	"context"
	"time"
)

// keepExpired is how long expired sign-in state and unexecuted prepared transactions are kept
// after they can no longer be used, so support can still see what happened.
const keepExpired = 24 * time.Hour

// Pruned counts what one Prune removed.
type Pruned struct {
	Nonces, Prepared, Sessions, Superseded int64
}

// Prune removes state nobody can use any more: spent nonces whose challenges expired, prepared
// transactions that expired unexecuted, and sessions whose tokens have all expired. Executed
// prepared transactions stay: they are the signed record, and replays answer from them.
func (s *Store) Prune(ctx context.Context) (Pruned, error) {
	var out Pruned
	err := s.inTx(ctx, func(tx *Tx) error {
		cutoff := At(tx.Now().Add(-keepExpired))
		steps := []struct {
			n     *int64
			table string
			where string
		}{
			{&out.Nonces, "spent_nonces", "expires_at < ?"},
			{&out.Prepared, "prepared_txs", "update_id IS NULL AND expires_at < ?"},
			{&out.Superseded, "superseded_tokens", "expires_at < ?"},
			{&out.Sessions, "signin_sessions", "token_expires_at < ?"},
		}
		for _, st := range steps {
			res, err := tx.NewDelete().TableExpr(st.table).Where(st.where, cutoff).Exec(ctx)
			if err != nil {
				return err
			}
			*st.n, _ = res.RowsAffected()
		}
		return nil
	})
	return out, err
}
