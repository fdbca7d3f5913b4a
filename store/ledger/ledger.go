// Package ledger is the core of marketd's ledger: what a contract, a transaction and an update
// are, the rules every committed transaction obeys, and the embedded ledger that keeps contracts
// in the store's own tables. It knows nothing of the markets built on it (NFTs, swaps), of
// sign-in or of the console; they register their contract templates (RegisterTemplate) and
// observers (Observe) with it, and a second ledger implements Ledger importing only this
// package.
//
// The rules it keeps, whichever Ledger commits:
//
//   - Value is held as UTXO-style contracts of exact decimals (Amount), never floats; every
//     instrument is conserved by a transaction unless it mints (the dev tap), and every
//     non-fungible asset has one live contract: created only by a mint or by consuming it,
//     consumed only by creating it again or by a burn.
//   - A contract is consumed once: a transaction that names one already consumed is stale and
//     changes nothing. Only its controller spends it (else party_mismatch), unless it is an
//     offer the transaction settles, a contract such an offer locks, or its owner's running
//     contract the settlement folds. An offer locks what it escrows while it is active
//     (conflict).
//   - A credit to a party that neither signs nor has an offer settled by the transaction needs
//     that party's active receive-preapproval of its kind (preapproval_required).
//   - A batch commits all of its transactions or none, answering the index of the one it
//     refuses; each transaction is its own update, and updates get offsets in commit order.
//   - Everything a commit writes is part of the caller's database transaction (Tx): the
//     transaction's instant stamps every row, and writes nobody reads back are deferred to one
//     round trip before COMMIT (Later, Flush).
package ledger

import "context"

// Ledger is where contracts live and how a committed transaction changes them. The embedded
// ledger (Embedded) keeps contracts in the store's own tables and commits inside the caller's
// database transaction; a ledger node would accept the same Transaction over its API and the
// store would mirror the update it answers with. A package outside the store implements it
// importing only this package: tx is the database transaction the commit is part of, which a
// ledger outside the database need not use; contracts are read through the Contract interface
// and the optional ValuedContract, AssetContract and EscrowContract.
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
