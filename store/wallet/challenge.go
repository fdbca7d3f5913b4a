package wallet

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Challenge is the sign-in message a wallet signs, laid out as EIP-4361 with the ledger's
// fields: the domain (the public URL's authority) wants the party to sign in, then the URI,
// Version 1, the Network, a single-use nonce of 32 letters and digits, and the issue and
// expiry instants in RFC 3339 UTC. The wallet signs the text's UTF-8 bytes exactly as served.
type Challenge struct {
	Domain    string
	PartyID   string
	Statement string // optional; without it the statement line and its blank line are left out
	URI       string
	Version   string
	Network   string
	Nonce     string
	IssuedAt  time.Time
	ExpiresAt time.Time
}

const challengeHeadline = " wants you to sign in with your ledger party:"

var noncePattern = regexp.MustCompile(`^[A-Za-z0-9]{32}$`)

// Text is the exact message to sign: the lines joined by \n, no trailing newline.
func (c Challenge) Text() string {
	var b strings.Builder
	b.Grow(400)
	b.WriteString(c.Domain + challengeHeadline + "\n")
	b.WriteString(c.PartyID + "\n\n")
	if c.Statement != "" {
		b.WriteString(c.Statement + "\n\n")
	}
	b.WriteString("URI: " + c.URI + "\n")
	b.WriteString("Version: " + c.Version + "\n")
	b.WriteString("Network: " + c.Network + "\n")
	b.WriteString("Nonce: " + c.Nonce + "\n")
	b.WriteString("Issued At: " + formatChallengeTime(c.IssuedAt) + "\n")
	b.WriteString("Expiration Time: " + formatChallengeTime(c.ExpiresAt))
	return b.String()
}

// formatChallengeTime writes RFC 3339 UTC with a Z, with a fraction only when there is one.
func formatChallengeTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// ParseChallenge reads a challenge message. It accepts exactly the texts Text produces, so a
// wallet can check what it is asked to sign, field by field, before signing.
func ParseChallenge(text string) (Challenge, error) {
	var c Challenge
	lines := strings.Split(text, "\n")
	if len(lines) != 9 && len(lines) != 11 {
		return c, fmt.Errorf("challenge: %d lines, want 9, or 11 with a statement", len(lines))
	}
	head, ok := strings.CutSuffix(lines[0], challengeHeadline)
	if !ok || head == "" || strings.ContainsAny(head, " \t\r") {
		return c, errors.New("challenge: first line must be \"<domain>" + challengeHeadline + "\"")
	}
	c.Domain = head
	c.PartyID = lines[1]
	if !ValidPartyID(c.PartyID) {
		return c, fmt.Errorf("challenge: second line %q is not a party id", clip(c.PartyID, 80))
	}
	if lines[2] != "" {
		return c, errors.New("challenge: third line must be blank")
	}
	rest := lines[3:]
	if len(lines) == 11 {
		c.Statement = lines[3]
		if !ValidStatement(c.Statement) || lines[4] != "" {
			return c, errors.New("challenge: a statement is one non-blank line followed by a blank line")
		}
		rest = lines[5:]
	}
	fields := []struct {
		name string
		dst  *string
	}{{"URI", &c.URI}, {"Version", &c.Version}, {"Network", &c.Network}, {"Nonce", &c.Nonce}}
	for i, f := range fields {
		v, ok := strings.CutPrefix(rest[i], f.name+": ")
		if !ok || v == "" || strings.TrimSpace(v) != v {
			return c, fmt.Errorf("challenge: want a %q line", f.name+": ...")
		}
		*f.dst = v
	}
	if c.Version != "1" {
		return c, fmt.Errorf("challenge: version %q, want 1", c.Version)
	}
	if !ValidNonce(c.Nonce) {
		return c, errors.New("challenge: nonce must be 32 of [A-Za-z0-9]")
	}
	var err error
	if c.IssuedAt, err = parseChallengeTime(rest[4], "Issued At"); err != nil {
		return c, err
	}
	if c.ExpiresAt, err = parseChallengeTime(rest[5], "Expiration Time"); err != nil {
		return c, err
	}
	if !c.ExpiresAt.After(c.IssuedAt) {
		return c, errors.New("challenge: expiration time must be after issued at")
	}
	return c, nil
}

func parseChallengeTime(line, name string) (time.Time, error) {
	v, ok := strings.CutPrefix(line, name+": ")
	if !ok {
		return time.Time{}, fmt.Errorf("challenge: want a %q line", name+": ...")
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil || formatChallengeTime(t) != v {
		return time.Time{}, fmt.Errorf("challenge: %s %q is not an RFC 3339 UTC time ending in Z", name, clip(v, 40))
	}
	return t.UTC(), nil
}

// ValidNonce tells whether s has the form of a nonce: 32 of [A-Za-z0-9].
func ValidNonce(s string) bool { return noncePattern.MatchString(s) }

// ValidStatement tells whether s can be a challenge's statement: one line of printable text.
func ValidStatement(s string) bool {
	return s != "" && strings.TrimSpace(s) == s && !strings.ContainsAny(s, "\r\n")
}

// clip shortens s for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
