// Package migrations holds the schema as SQL files, embedded in the binary. One set serves both
// dialects: where their SQL differs, a file names the type through the template data below.
package migrations

import "embed"

// Files are the migrations, a pair NNN_name.tx.up.sql / NNN_name.tx.down.sql per change.
//
//go:embed *.sql
var Files embed.FS

// Types are the column types that differ between the dialects.
type Types struct {
	Postgres bool   // for the few statements only one dialect has
	Bytes    string // binary strings
	Decimal  string // exact decimals: SQLite's NUMERIC affinity would turn them into floats
	Exact    string // exact decimals of any scale, for running sums of products
}

// TypesFor returns the types of dialect "postgres" or "sqlite".
func TypesFor(dialect string) Types {
	if dialect == "postgres" {
		return Types{Postgres: true, Bytes: "BYTEA", Decimal: "NUMERIC(38,10)", Exact: "NUMERIC"}
	}
	return Types{Bytes: "BLOB", Decimal: "TEXT", Exact: "TEXT"}
}
