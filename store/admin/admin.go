// Package admin holds the admin console's data: its users, its sign-in throttle, its browser
// sessions (an scs store) and the landing page's charts. It builds on the store's exported
// core (store/core.go: the databases, a write transaction, the clock): it writes only the
// console's own tables and the audit log (through store.WriteAudit), and its charts read the
// market's tables. The store never imports it, so the direction is admin to store.
package admin

import "marketd/store"

// Console is the admin console's data over one store.
type Console struct{ s *store.Store }

// New returns the console's data kept in s.
func New(s *store.Store) *Console { return &Console{s} }
