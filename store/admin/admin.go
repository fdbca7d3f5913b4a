// Package admin holds the admin console's data: its audit log, its users, its sign-in
// throttle, its browser sessions (an scs store), the landing page's charts, and its lists of
// what the market and its parties did (every offer, the ledger's updates and prepared
// transactions, the parties' sign-in sessions, which an operator may revoke). It builds on the
// store's exported core (store/core.go: the databases, a write transaction, the clock, keyset
// pages under the service's cursor key) and the auth part's session hooks: it writes only the
// console's own tables and the audit log, which the store itself never writes, and reads the
// market's tables. The store never imports it, so the direction is admin to store.
package admin

import "marketd/store"

// Console is the admin console's data over one store.
type Console struct{ s *store.Store }

// New returns the console's data kept in s.
func New(s *store.Store) *Console { return &Console{s} }
