package store

import (
	"testing"

	"marketd/store/ledger"
)

// The codes the ledger answers are the store's codes of the same names: a front door maps
// what the ledger refuses with as it maps the store's own.
func TestCodes_TheLedgersAreTheStores(t *testing.T) {
	for _, c := range []struct{ store, ledger Code }{
		{CodeInvalidRequest, ledger.CodeInvalidRequest},
		{CodePartyMismatch, ledger.CodePartyMismatch},
		{CodeStale, ledger.CodeStale},
		{CodeConflict, ledger.CodeConflict},
		{CodePreapprovalRequired, ledger.CodePreapprovalRequired},
	} {
		if c.store != c.ledger {
			t.Errorf("the store's code %q is the ledger's %q", c.store, c.ledger)
		}
	}
}
