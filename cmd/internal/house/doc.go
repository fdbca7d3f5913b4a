// Package house holds the repository's house rules, each a test over the whole repository
// rather than over one package: comments name only identifiers that exist, no document cites
// one outside the repository, the store's files stay small, the top README starts with the two
// commands and maps the code, links between documents resolve, every benchmark has one row
// in cmd/marketd/README.md's table, and walletctl builds on nothing of the server. It has no code of its own: `go test ./...` runs the rules
// with everything else.
package house
