package wallet_test

import (
	"crypto/ed25519"
	"strings"
	"testing"
	"time"

	"marketd/store/wallet"
)

// testChallenges are challenges as the service issues them, with and without a statement,
// on whole seconds and with a fraction.
func testChallenges() []wallet.Challenge {
	pub := make(ed25519.PublicKey, ed25519.PublicKeySize)
	for i := range pub {
		pub[i] = byte(i)
	}
	issued := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	base := wallet.Challenge{
		Domain:    "localhost:8080",
		PartyID:   wallet.PartyIDFor("alice", pub),
		URI:       "http://localhost:8080",
		Version:   "1",
		Network:   "devnet",
		Nonce:     "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE",
		IssuedAt:  issued,
		ExpiresAt: issued.Add(10 * time.Minute),
	}
	withStatement := base
	withStatement.Statement = "Sign in to the marketplace. No fee is charged."
	fraction := base
	fraction.Domain, fraction.URI = "market.example.com", "https://market.example.com/app"
	fraction.IssuedAt = issued.Add(123456789 * time.Nanosecond)
	fraction.ExpiresAt = fraction.IssuedAt.Add(time.Hour)
	unicode := withStatement
	unicode.Statement = "Connexion à la place de marché ✓"
	unicode.Network = "mainnet"
	return []wallet.Challenge{base, withStatement, fraction, unicode}
}

func TestParseChallenge_RoundTrip(t *testing.T) {
	for _, c := range testChallenges() {
		text := c.Text()
		got, err := wallet.ParseChallenge(text)
		if err != nil {
			t.Fatalf("ParseChallenge(%q): %v", text, err)
		}
		if got.Text() != text {
			t.Fatalf("Text of the parsed challenge differs:\n%s\n%s", got.Text(), text)
		}
		if !got.IssuedAt.Equal(c.IssuedAt) || !got.ExpiresAt.Equal(c.ExpiresAt) {
			t.Fatalf("times %v %v, want %v %v", got.IssuedAt, got.ExpiresAt, c.IssuedAt, c.ExpiresAt)
		}
		got.IssuedAt, got.ExpiresAt, c.IssuedAt, c.ExpiresAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		if got != c {
			t.Fatalf("parsed\n%+v\nwant\n%+v", got, c)
		}
	}
}

func TestParseChallenge_TextLayout(t *testing.T) {
	c := testChallenges()[0]
	want := "localhost:8080 wants you to sign in with your ledger party:\n" +
		c.PartyID + "\n\n" +
		"URI: http://localhost:8080\nVersion: 1\nNetwork: devnet\n" +
		"Nonce: aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE\n" +
		"Issued At: 2026-11-22T12:00:00Z\nExpiration Time: 2026-11-22T12:10:00Z"
	if got := c.Text(); got != want {
		t.Fatalf("Text:\n%s\nwant\n%s", got, want)
	}
	c.Statement = "Hello"
	if got := c.Text(); !strings.Contains(got, c.PartyID+"\n\nHello\n\nURI: ") {
		t.Fatalf("statement not between blank lines:\n%s", got)
	}
}

func TestParseChallenge_RejectsWhatTextNeverProduces(t *testing.T) {
	good := testChallenges()[0].Text()
	stmt := testChallenges()[1].Text()
	replace := func(s, old, new string) string {
		if !strings.Contains(s, old) {
			t.Fatalf("%q not in the challenge", old)
		}
		return strings.Replace(s, old, new, 1)
	}
	cases := map[string]string{
		"empty":                     "",
		"trailing newline":          good + "\n",
		"CRLF line ends":            strings.ReplaceAll(good, "\n", "\r\n"),
		"leading newline":           "\n" + good,
		"no domain":                 replace(good, "localhost:8080 wants", " wants"),
		"domain with a space":       replace(good, "localhost:8080 wants", "local host wants"),
		"other headline":            replace(good, "sign in with your ledger party", "log in with your party"),
		"bad party id":              replace(good, "alice::1220", "alice::1221"),
		"uppercase fingerprint":     replace(good, testChallenges()[0].PartyID, strings.ToUpper(testChallenges()[0].PartyID)),
		"missing blank line":        replace(good, "\n\nURI:", "\nURI:"),
		"text on the blank line":    replace(good, "\n\nURI:", "\nx\nURI:"),
		"blank statement":           replace(stmt, "Sign in to the marketplace. No fee is charged.", " "),
		"statement without blank":   replace(stmt, "charged.\n\nURI", "charged.\nx\nURI"),
		"statement padded":          replace(stmt, "Sign in", " Sign in"),
		"fields out of order":       replace(replace(good, "Version: 1\n", ""), "Network: devnet\n", "Network: devnet\nVersion: 1\n"),
		"empty URI":                 replace(good, "URI: http://localhost:8080", "URI: "),
		"URI with trailing space":   replace(good, "URI: http://localhost:8080", "URI: http://localhost:8080 "),
		"no space after colon":      replace(good, "URI: ", "URI:"),
		"version 2":                 replace(good, "Version: 1", "Version: 2"),
		"short nonce":               replace(good, "Nonce: aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE", "Nonce: aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1d"),
		"nonce with a dash":         replace(good, "Nonce: aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE", "Nonce: aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1-E"),
		"offset instead of Z":       replace(good, "Issued At: 2026-11-22T12:00:00Z", "Issued At: 2026-11-22T12:00:00+00:00"),
		"lowercase z":               replace(good, "Issued At: 2026-11-22T12:00:00Z", "Issued At: 2026-11-22T12:00:00z"),
		"trailing zero in fraction": replace(good, "Issued At: 2026-11-22T12:00:00Z", "Issued At: 2026-11-22T12:00:00.50Z"),
		"zero fraction":             replace(good, "Issued At: 2026-11-22T12:00:00Z", "Issued At: 2026-11-22T12:00:00.000Z"),
		"comma fraction":            replace(good, "Issued At: 2026-11-22T12:00:00Z", "Issued At: 2026-11-22T12:00:00,5Z"),
		"date only":                 replace(good, "Issued At: 2026-11-22T12:00:00Z", "Issued At: 2026-11-22"),
		"expiry before issue":       replace(good, "Expiration Time: 2026-11-22T12:10:00Z", "Expiration Time: 2026-11-22T11:10:00Z"),
		"expiry equal to issue":     replace(good, "Expiration Time: 2026-11-22T12:10:00Z", "Expiration Time: 2026-11-22T12:00:00Z"),
		"extra line":                good + "\nResources: x",
		"missing expiration":        good[:strings.LastIndex(good, "\n")],
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			if c, err := wallet.ParseChallenge(text); err == nil {
				t.Fatalf("ParseChallenge accepted %q as %+v", text, c)
			}
		})
	}
}

func FuzzParseChallenge(f *testing.F) {
	for _, c := range testChallenges() {
		f.Add(c.Text())
	}
	f.Add("")
	f.Add("\n\n\n\n\n\n\n\n")
	f.Add("\n\n\n\n\n\n\n\n\n\n")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := wallet.ParseChallenge(text)
		if err != nil {
			return
		}
		if got := c.Text(); got != text {
			t.Fatalf("ParseChallenge accepted a text that Text does not reproduce:\n in %q\nout %q", text, got)
		}
		if again, err := wallet.ParseChallenge(c.Text()); err != nil || again.Text() != text {
			t.Fatalf("the parsed challenge does not parse again: %v", err)
		}
	})
}
