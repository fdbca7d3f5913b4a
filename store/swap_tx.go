package store

// swapTx is what one transaction gathers of swaps (a part of the transaction,
// store_txpart.go): the pools it locked, their books and the LPs' running fees as it left
// them, so each is read once per transaction.
type swapTx struct {
	pools map[string]*Pool       // the swap pools this transaction has locked
	books map[string][]*LPQuote  // their open quotes by pool and side, as this transaction left them
	fees  map[feeKey]*runningFee // LPs' running fees, as this transaction left them
}

// swapPart is the transaction's swap state, made the first time a swap asks for it.
func (tx *Tx) swapPart() *swapTx { return partOf(tx, func() *swapTx { return new(swapTx) }) }

// mark and undo: rolling back to a savepoint forgets the pools, books and fees read (their
// locks may have gone with the savepoint), so the next use reads them again.
func (w *swapTx) mark() int { return 0 }
func (w *swapTx) undo(int)  { w.pools, w.books, w.fees = nil, nil, nil }
