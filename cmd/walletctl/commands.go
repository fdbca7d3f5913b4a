package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"marketd/store"
)

// command is one walletctl command as its help shows it.
type command struct {
	name    string // as typed: "lp publish"
	args    string // its arguments
	summary string // one line: what it does
	section string // where walletctl -h lists it
	offline bool   // reads the key file only, never the server
	flags   func(w *wallet, fs *flag.FlagSet)
}

const (
	secWallet   = "wallet"
	secShortcut = "wallet shortcuts (each is a call or an exec)"
	secNFT      = "NFT shortcuts (each is an exec: prepare, show the summary, sign, execute)"
	secSwap     = "swap shortcuts (each is a call or an exec)"
)

var commands = []command{
	{"keygen", "[--hint NAME]", "create a key file (mode 0600); prints its party id and public key", secWallet, true,
		func(w *wallet, fs *flag.FlagSet) {
			fs.StringVar(&w.hint, "hint", "wallet", "the party id's hint: 1 to 64 of [A-Za-z0-9_-]")
		}},
	{"onboard", "", "onboard the key's party on the ledger: prepare, show the summary, sign, execute", secWallet, false, nil},
	{"login", "", "sign in: get a challenge, check it, sign it, keep the token beside the key", secWallet, false, nil},
	{"logout", "", "end the session on the server", secWallet, false, nil},
	{"whoami", "", "the key's party and the token's expiry, as the server sees them", secWallet, false, nil},
	{"party", "", "print the key's party id", secWallet, true, nil},
	{"token", "", "print the kept session token (for curl)", secWallet, true, nil},
	{"sign", "MESSAGE | - | --hash B64", "sign a message (- reads it from standard input), or a prepared transaction's hash", secWallet, true,
		func(w *wallet, fs *flag.FlagSet) {
			fs.StringVar(&w.hash, "hash", "", "sign this preparedTransactionHash (standard base64 of 32 bytes) instead of a message")
		}},
	{"call", "METHOD PATH [JSON]", "call the API with the token attached; {me} in PATH is the key's party id", secWallet, false, nil},
	{"exec", "PATH JSON", "PATH/prepare, check the hash is the transaction's, show the summary, sign, execute", secWallet, false, nil},

	{"balance", "", "the party's balances", secShortcut, false, nil},
	{"utxos", "", "how many holdings make them up", secShortcut, false, nil},
	{"tap", "CC|USDCx AMOUNT", "dev mode: credit the party out of thin air", secShortcut, false, nil},
	{"send", "PARTY AMOUNT", "transfer CC to a party", secShortcut, false, nil},
	{"preapprove", "nft|usdcx", "consent to receive NFTs or USDCx from others", secShortcut, false, nil},
	{"renew", "nft|usdcx", "move that consent's expiry later", secShortcut, false, nil},
	{"rewards", "[history]", "the party's activity rewards, or their history", secShortcut, false, nil},

	{"mint", "COLLECTION [QUANTITY]", fmt.Sprintf("mint from the open phase (QUANTITY 2 to %d: one batch)", store.MaxBatch), secNFT, false, nil},
	{"list", "CONTRACT_ID PRICE [EXPIRY]", "list an NFT for sale; EXPIRY is Unix seconds or a duration (24h)", secNFT, false, nil},
	{"cancel", "CID...", fmt.Sprintf("withdraw listings (2 to %d: one batch)", store.MaxBatch), secNFT, false, nil},
	{"buy", "CID", "buy a listing", secNFT, false, nil},
	{"sweep", "COLLECTION MAX_TOTAL COUNT|CID...", fmt.Sprintf("buy the COUNT cheapest listings, or the named ones (at most %d), for at most MAX_TOTAL in all", store.MaxBatch), secNFT, false, nil},
	{"transfer", "CONTRACT_ID PARTY", "give an NFT to a party (it needs an NFT preapproval)", secNFT, false, nil},
	{"burn", "CONTRACT_ID", "destroy an NFT for good", secNFT, false, nil},

	{"pools", "", "the swap pools and their oracle prices", secSwap, false, nil},
	{"quote", "CC|USDCx AMOUNT [POOL]", "an indicative quote for selling AMOUNT", secSwap, false, nil},
	{"lp publish", "POOL ask|bid PRICE SIZE [TTL]", "publish an LP quote (TTL default 1h)", secSwap, false, nil},
	{"lp cancel", "CID", "cancel an LP quote, releasing what it locks", secSwap, false, nil},
	{"lp claim", "POOL", "claim the fees the pool's fills kept for you", secSwap, false, nil},
	{"lp active", "", "your open LP quotes", secSwap, false, nil},
	{"swap submit", "POOL CC|USDCx AMOUNT MIN [TTL]", "sell AMOUNT for at least MIN by now+TTL (default 1h)", secSwap, false, nil},
	{"swap cancel", "INTENT", "cancel a pending intent", secSwap, false, nil},
	{"swap status", "INTENT", "an intent's status and fills", secSwap, false, nil},
	{"swap active", "", "your pending intents", secSwap, false, nil},
	{"swap history", "", "your filled swaps", secSwap, false, nil},
}

// The settings every command shares: a flag anywhere on the line, or its variable.
const (
	envServer = "WALLETCTL_SERVER"
	envKey    = "WALLETCTL_KEY"
)

// usageError is a command line that does not parse: walletctl exits 2 and names the help.
type usageError struct {
	cmd string // "walletctl lp publish"
	err error
}

func (e *usageError) Error() string {
	return fmt.Sprintf("%s: %v\nRun \"%s -h\" for its usage.", e.cmd, e.err, e.cmd)
}

func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}

// groupOf lists the commands named "name VERB" (lp, swap).
func groupOf(name string) []command {
	var out []command
	for _, c := range commands {
		if strings.HasPrefix(c.name, name+" ") {
			out = append(out, c)
		}
	}
	return out
}

// lookup finds the command args start with ("lp publish" takes two words) and returns it
// with the arguments after its name.
func lookup(args []string) (command, []string, error) {
	for _, c := range commands {
		if c.name == args[0] {
			return c, args[1:], nil
		}
		if len(args) > 1 && c.name == args[0]+" "+args[1] {
			return c, args[2:], nil
		}
	}
	group := groupOf(args[0])
	if len(group) == 0 {
		return command{}, nil, &usageError{"walletctl", fmt.Errorf("unknown command %q", args[0])}
	}
	var b strings.Builder
	if len(args) > 1 {
		fmt.Fprintf(&b, "unknown command %q; one of\n", args[1])
	} else {
		b.WriteString("wants one of\n")
	}
	printCommands(&b, group)
	return command{}, nil, &usageError{"walletctl " + args[0], errors.New(strings.TrimRight(b.String(), "\n"))}
}

// printCommands writes one line per command: how to call it and what it does.
func printCommands(w io.Writer, cs []command) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range cs {
		fmt.Fprintf(tw, "  walletctl %s\t%s\n", strings.TrimSpace(c.name+" "+c.args), c.summary)
	}
	tw.Flush()
}

// printUsage is walletctl -h: every command by section, and the settings they share.
func printUsage(w io.Writer) {
	fmt.Fprint(w, "walletctl: a wallet for marketd\n\nusage: walletctl [--server URL] [--key FILE] COMMAND [ARGS]\n")
	section := ""
	var cs []command
	flush := func() {
		if len(cs) > 0 {
			fmt.Fprintf(w, "\n%s:\n", section)
			printCommands(w, cs)
		}
		cs = nil
	}
	for _, c := range commands {
		if c.section != section {
			flush()
			section = c.section
		}
		cs = append(cs, c)
	}
	flush()
	fmt.Fprint(w, "\nCOLLECTION is a collection's id (col_...) or its slug.\n")
	printSettings(w, false)
	fmt.Fprint(w, "\nRun \"walletctl COMMAND -h\" for a command's own flags and the variables it reads.\n")
}

// printSettings lists the variables a command reads (offline ones never reach a server).
func printSettings(w io.Writer, offline bool) {
	fmt.Fprint(w, "\nenvironment (each variable is also a flag, anywhere on the line, which wins over it):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if !offline {
		fmt.Fprintf(tw, "  %s\t--server URL\tthe service (default http://localhost:8080)\n", envServer)
	}
	fmt.Fprintf(tw, "  %s\t--key FILE\tthe key file; the session token is kept in FILE.token (default wallet.key)\n", envKey)
	tw.Flush()
}

// printHelp is "walletctl COMMAND -h".
func printHelp(w io.Writer, c command, own *flag.FlagSet) {
	globals := "[--server URL] [--key FILE]"
	if c.offline {
		globals = "[--key FILE]"
	}
	fmt.Fprintf(w, "walletctl %s: %s\n\nusage: walletctl %s %s\n", c.name, c.summary, globals, strings.TrimSpace(c.name+" "+c.args))
	n := 0
	own.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprint(w, "\nflags:\n")
		own.SetOutput(w)
		own.PrintDefaults()
	}
	printSettings(w, c.offline)
}

// parseOwn parses the command's own flags (most have none, so any flag is an error) and
// returns its arguments. -h prints its help and returns flag.ErrHelp.
func (w *wallet) parseOwn(c command, args []string) ([]string, error) {
	fs := flag.NewFlagSet("walletctl "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if c.flags != nil {
		c.flags(w, fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printHelp(w.out, c, fs)
			return nil, err
		}
		return nil, &usageError{"walletctl " + c.name, err}
	}
	return fs.Args(), nil
}
