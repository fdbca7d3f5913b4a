package wallet

import "fmt"

// Code is the machine-readable code of an Error. Each code has exactly one meaning, and a code
// is never reused for another. The codes the ledger answers are declared here, beside the
// amounts that answer one; the service that runs it declares the others with the same type.
type Code string

// The codes the ledger answers.
const (
	CodeInvalidRequest      Code = "invalid_request"      // an amount or a name it cannot take
	CodePartyMismatch       Code = "party_mismatch"       // a contract spent by another than its owner
	CodeStale               Code = "stale"                // a contract consumed since the transaction was prepared
	CodeConflict            Code = "conflict"             // a contract an active offer still locks
	CodePreapprovalRequired Code = "preapproval_required" // a credit without the receiver's consent
)

// ProblemType is the code as a problem's type URI, the "type" of a problem+json body (and of a
// GraphQL error's extensions that carry the same fields).
func (c Code) ProblemType() string { return "urn:marketd:problem:" + string(c) }

// Error is the one error type of the domain: a code for machines and a message for people.
// The message is safe to show to the caller; wrapped causes are not.
type Error struct {
	Code    Code
	Message string
	Err     error // the cause, for logs only
	// Members are further members of the problem, by name, that a caller acts on (a crossed
	// order's "crossing": the order to take instead); a door writes them beside the code.
	Members map[string]any
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Truncate shortens s to n bytes to quote it in an error's message, marking the cut: what a
// caller sent is quoted back no longer than that (the store's errors quote the same way).
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
