package store

import (
	"errors"

	"marketd/store/ledger"
)

// Code is the machine-readable error code every problem+json body and GraphQL error carries
// (ledger.Code). Every code is declared here, those the ledger answers too (with the values it
// gives them: TestCodes_TheLedgersAreTheStores holds them equal). Each code has
// exactly one meaning, and a code is never reused for another; the front doors map it to an
// HTTP status in one place each (rest/problem.go, graph/handler.go), and rest/openapi.yaml
// lists which codes each endpoint answers.
type Code = ledger.Code

const (
	CodeInvalidRequest       Code = "invalid_request"
	CodeInvalidCursor        Code = "invalid_cursor"
	CodeUnauthenticated      Code = "unauthenticated"
	CodeInvalidToken         Code = "invalid_token"
	CodeTokenRotated         Code = "token_rotated"
	CodeTokenRevoked         Code = "token_revoked"
	CodeNonceInvalid         Code = "nonce_invalid"
	CodeInvalidSignature     Code = "invalid_signature"
	CodePartyMismatch        Code = "party_mismatch"
	CodeCrossOrigin          Code = "cross_origin"
	CodeNotAllowlisted       Code = "not_allowlisted"
	CodeNotFound             Code = "not_found"
	CodePartyNotFound        Code = "party_not_found"
	CodePreparedNotFound     Code = "prepared_not_found"
	CodeStale                Code = "stale"
	CodeConflict             Code = "conflict"
	CodeInsufficientFunds    Code = "insufficient_funds"
	CodePreapprovalRequired  Code = "preapproval_required"
	CodePreparedExpired      Code = "prepared_expired"
	CodeRateLimited          Code = "rate_limited"
	CodeInternal             Code = "internal"
	CodeMethodNotAllowed     Code = "method_not_allowed"
	CodePayloadTooLarge      Code = "payload_too_large"
	CodeUnsupportedMediaType Code = "unsupported_media_type"
	CodeNotAcceptable        Code = "not_acceptable"
	CodeUnavailable          Code = "unavailable"
	// CodeOutcomeUnknown: the database connection was lost while a transaction committed, so
	// whether it applied is not known. Sending the same execute again is safe: it answers the
	// receipt if the transaction applied, and applies it once if not.
	CodeOutcomeUnknown Code = "outcome_unknown"
	// CodeTooManySubscriptions: a GraphQL socket already runs as many subscriptions as one
	// socket may; REST never answers it.
	CodeTooManySubscriptions Code = "too_many_subscriptions"
	// CodeTooManySockets: a GraphQL websocket refused before its upgrade, its client address
	// or the whole service holding as many sockets as it may; REST never answers it.
	CodeTooManySockets Code = "too_many_sockets"
	// CodeCrossesListing: an offer at or above the price of an active listing it matches;
	// the problem's crossing member names that listing, to buy instead.
	CodeCrossesListing Code = "crosses_listing"
	// CodeCrossesOffer: a listing at or below the best open offer its NFT matches; the
	// problem's crossing member names that offer, to accept instead.
	CodeCrossesOffer Code = "crosses_offer"
	// CodeOfferMismatch: an accept names an NFT the offer does not take.
	CodeOfferMismatch Code = "offer_mismatch"
	// CodeOfferExhausted: an accept names more NFTs than the offer has units left.
	CodeOfferExhausted Code = "offer_exhausted"
)

// Error is the one error type of the domain (ledger.Error): a code for machines and a message
// for people. The message is safe to show to the caller; wrapped causes are not.
type Error = ledger.Error

// Errorf returns an *Error with code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return ledger.Errorf(code, format, args...)
}

// ErrorCode returns the code of err: unavailable when the database cannot be reached or
// dropped the connection, CodeInternal for anything else that is not an *Error.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if unreachable(err) {
		return CodeUnavailable
	}
	return CodeInternal
}

// ErrorMessage returns the caller-safe message of err; internal errors get a generic one.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	if unreachable(err) {
		return msgUnreachable
	}
	return "internal error"
}
