package store

import "context"

// A transaction knows transactions, locks and deferred writes; what a part of the store (the
// NFT market, swaps) gathers while one runs lives in that part's own state, a txPart, which
// the transaction keeps for it. A part's state is made the first time the part asks for it
// (partOf), or when the transaction begins for a part every transaction has (registerTxPart):
// one whose work after the end must run after every write, whatever it wrote.
//
// The rules a part keeps:
//   - Its state rolls back with a savepoint: mark says how far it went, undo forgets what it
//     gathered since (a batch rolls an execute the ledger refuses back to its savepoint).
//   - Work it owes inside the transaction, once the transaction's work is done and before the
//     update log is appended and the deferred writes are sent, is its beforeCommit.
//   - Work it owes once the transaction has ended, whatever the outcome, is its afterEnd: it
//     runs after the receipts are completed and before the write answers.
type txPart interface {
	// mark tells how far the part's state went, for undo.
	mark() int
	// undo forgets what the part gathered since mark answered m (0: since it was made).
	undo(m int)
}

// partBeforeCommit is a part with work inside the transaction, after the transaction's work.
type partBeforeCommit interface {
	beforeCommit(ctx context.Context, tx *Tx) error
}

// partAfterEnd is a part with work once the transaction has ended.
type partAfterEnd interface {
	afterEnd(ctx context.Context, s *Store, outcome txOutcome)
}

// txOutcome is how a write transaction ended.
type txOutcome int

const (
	// txRolledBack: the work or a step before the COMMIT failed; nothing was written.
	txRolledBack txOutcome = iota
	// txUnknown: the COMMIT was sent and the write does not answer success (its answer was
	// lost, or it was refused, or the receipts it owes could not be completed): it may have
	// applied.
	txUnknown
	// txCommitted: the transaction surely committed and the write answers success.
	txCommitted
)

// standingParts makes the parts every transaction has from its start.
var standingParts []func() txPart

// registerTxPart makes every transaction begin with a part made by newPart; a part's file
// registers it from its init.
func registerTxPart(newPart func() txPart) {
	standingParts = append(standingParts, newPart)
}

// newTxParts makes the parts a transaction begins with.
func newTxParts() []txPart {
	parts := make([]txPart, len(standingParts))
	for i, newPart := range standingParts {
		parts[i] = newPart()
	}
	return parts
}

// partOf returns the transaction's part of type P, made by newPart the first time it is
// asked for.
func partOf[P txPart](tx *Tx, newPart func() P) P {
	if q, ok := findPart[P](tx.parts); ok {
		return q
	}
	p := newPart()
	tx.parts = append(tx.parts, p)
	return p
}

// findPart returns the part of type P among parts, if there is one.
func findPart[P txPart](parts []txPart) (P, bool) {
	for _, p := range parts {
		if q, ok := p.(P); ok {
			return q, true
		}
	}
	var none P
	return none, false
}

// beforeCommit runs the parts' work inside the transaction, in the order they were made.
func (tx *Tx) beforeCommit(ctx context.Context) error {
	for _, p := range tx.parts {
		if b, ok := p.(partBeforeCommit); ok {
			if err := b.beforeCommit(ctx, tx); err != nil {
				return err
			}
		}
	}
	return nil
}

// partsEnded runs the parts' work once their transaction has ended, in the order they were made.
func (s *Store) partsEnded(ctx context.Context, parts []txPart, outcome txOutcome) {
	for _, p := range parts {
		if a, ok := p.(partAfterEnd); ok {
			a.afterEnd(ctx, s, outcome)
		}
	}
}

// markParts tells how far each part's state went.
func (tx *Tx) markParts() []int {
	m := make([]int, len(tx.parts))
	for i, p := range tx.parts {
		m[i] = p.mark()
	}
	return m
}

// undoParts forgets what each part gathered since m; a part made since forgets everything.
func (tx *Tx) undoParts(m []int) {
	for i, p := range tx.parts {
		at := 0
		if i < len(m) {
			at = m[i]
		}
		p.undo(at)
	}
}
