package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// When the database cannot be reached, a request that needs it is answered 503 unavailable
// (the front doors add Retry-After), never 500: the caller can do nothing about it but retry.
// A transaction whose COMMIT lost its connection may or may not have applied: that is
// outcome_unknown, and the same execute sent again answers its receipt or applies it once.

const msgUnreachable = "the database is unavailable; retry in a moment"

// DatabaseFault tells whether err comes from the database failing (unreachable, or a lost
// commit) rather than from the request: what operators count as an outage.
func DatabaseFault(err error) bool {
	var e *Error
	if errors.As(err, &e) { // a refusal the domain decided is never one: no need to look further
		return e.Code == CodeOutcomeUnknown || e.Code == CodeUnavailable && unreachable(e.Err)
	}
	return unreachable(err)
}

// unreachable tells whether err says the database could not be reached or dropped the
// connection, rather than refusing the statement.
func unreachable(err error) bool {
	if err == nil {
		return false
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		// 08: connection exception; 57P01-03: the server is shutting down or starting;
		// 53300: too many connections.
		return strings.HasPrefix(pg.Code, "08") || pg.Code == "57P01" || pg.Code == "57P02" || pg.Code == "57P03" || pg.Code == "53300"
	}
	var connect *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &connect), errors.As(err, &netErr),
		errors.Is(err, driver.ErrBadConn), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	// pgx reports a connection closed under it by text only.
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "connection reset") || strings.Contains(msg, "broken pipe")
}

// commitFault turns an error from COMMIT into what the caller can act on: a lost connection
// (or a deadline that ran out) leaves the outcome unknown.
func commitFault(ctx context.Context, err error) error {
	if err == nil || !(unreachable(err) || ctx.Err() != nil) {
		return err
	}
	return &Error{Code: CodeOutcomeUnknown, Err: err,
		Message: "the connection to the database was lost while this transaction committed, so it may or may not have applied; send the same execute again: it answers the receipt if it applied, and applies it once if not"}
}
