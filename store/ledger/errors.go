package ledger

import "marketd/store/wallet"

// Code is the machine-readable code of an Error (wallet.Code): the ledger's codes are
// declared in wallet, beside the amounts that answer one.
type Code = wallet.Code

// The codes the ledger answers.
const (
	CodeInvalidRequest      = wallet.CodeInvalidRequest      // an amount or a name it cannot take
	CodePartyMismatch       = wallet.CodePartyMismatch       // a contract spent by another than its owner
	CodeStale               = wallet.CodeStale               // a contract consumed since the transaction was prepared
	CodeConflict            = wallet.CodeConflict            // a contract an active offer still locks
	CodePreapprovalRequired = wallet.CodePreapprovalRequired // a credit without the receiver's consent
)

// Error is the one error type of the domain (wallet.Error): a code for machines and a message
// for people.
type Error = wallet.Error

// Errorf returns an *Error with code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return wallet.Errorf(code, format, args...)
}

// Truncate shortens s to n bytes to quote it in an error's message, marking the cut.
func Truncate(s string, n int) string { return wallet.Truncate(s, n) }
