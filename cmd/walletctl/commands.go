package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"marketd/cmd/internal/cmdline"
	"marketd/store/wallet"
)

// command is one walletctl command: where walletctl -h lists it, whether it reads the key
// file only (never the server), and its own flags.
type command struct {
	cmdline.Command
	section string
	offline bool
	flags   func(w *cli, fs *flag.FlagSet)
}

const (
	secWallet   = "wallet"
	secShortcut = "wallet shortcuts (each is a call, or an exec that signs only what was asked)"
	secNFT      = "NFT shortcuts (each is an exec: prepare, check it does what was asked, sign, execute)"
	secSwap     = "swap shortcuts (each is a call, or an exec that signs only what was asked)"
)

var commands = []command{
	{cmdline.Command{Name: "keygen", Args: "[--hint NAME]", Summary: "create a key file (mode 0600); prints its party id and public key"}, secWallet, true,
		func(w *cli, fs *flag.FlagSet) {
			fs.StringVar(&w.hint, "hint", "wallet", "the party id's hint: 1 to 64 of [A-Za-z0-9_-]")
		}},
	{cmdline.Command{Name: "onboard", Args: "", Summary: "onboard the key's party on the ledger: prepare, check it onboards this key, sign, execute"}, secWallet, false, nil},
	{cmdline.Command{Name: "login", Args: "[--network NAME] [--accept-domain HOST] [--accept-uri URI]",
		Summary: "sign in: get a challenge, check each of its fields is what was asked, sign it, keep the token beside the key"}, secWallet, false,
		func(w *cli, fs *flag.FlagSet) {
			networkFlag(w, fs)
			fs.StringVar(&w.acceptDomain, "accept-domain", "", "sign a challenge naming this domain instead of --server's host (a proxy that forwards for the service)")
			fs.StringVar(&w.acceptURI, "accept-uri", "", "sign a challenge naming this URI instead of --server's")
		}},
	{cmdline.Command{Name: "logout", Args: "", Summary: "end the session on the server"}, secWallet, false, nil},
	{cmdline.Command{Name: "whoami", Args: "", Summary: "the key's party and the token's expiry, as the server sees them"}, secWallet, false, nil},
	{cmdline.Command{Name: "party", Args: "", Summary: "print the key's party id"}, secWallet, true, nil},
	{cmdline.Command{Name: "token", Args: "", Summary: "print the kept session token (for curl)"}, secWallet, true, nil},
	{cmdline.Command{Name: "sign", Args: "MESSAGE | - | --hash B64", Summary: "sign a message (- reads it from standard input), or a prepared transaction's hash"}, secWallet, true,
		func(w *cli, fs *flag.FlagSet) {
			fs.StringVar(&w.hash, "hash", "", "sign this preparedTransactionHash (standard base64 of 32 bytes) instead of a message")
		}},
	{cmdline.Command{Name: "call", Args: "METHOD PATH [JSON]", Summary: "call the API with the token attached; {me} in PATH is the key's party id"}, secWallet, false, nil},
	{cmdline.Command{Name: "verify", Args: "[--network NAME] [--witness VKEY ... [--witnesses K]] [RECEIPT]", Summary: "check that each kept receipt (or the JSON one given) is in the server's transparency log, as this key signed it, and that the log only grew since last seen; with witnesses, in the newest tree K of them cosigned"}, secWallet, false, logFlags},
	{cmdline.Command{Name: "audit", Args: "[--network NAME] [--witness VKEY ... [--witnesses K]]", Summary: "download the whole transparency log: check every entry's signature, that its key is its party's and the signed bytes its kind's, that no signature commits two updates, the root hash, and that the log only grew since last seen; with witnesses, the newest tree K of them cosigned"}, secWallet, false, logFlags},
	{cmdline.Command{Name: "exec", Args: "PATH JSON", Summary: "PATH/prepare, check the hash, print what the signed bytes do, sign, execute (it checks the party only, not what the transaction does)"}, secWallet, false, nil},

	{cmdline.Command{Name: "balance", Args: "", Summary: "the party's balances"}, secShortcut, false, nil},
	{cmdline.Command{Name: "utxos", Args: "", Summary: "how many holdings make them up"}, secShortcut, false, nil},
	{cmdline.Command{Name: "tap", Args: "CC|USDCx AMOUNT", Summary: "dev mode: credit the party out of thin air"}, secShortcut, false, nil},
	{cmdline.Command{Name: "send", Args: "PARTY AMOUNT", Summary: "transfer CC to a party"}, secShortcut, false, nil},
	{cmdline.Command{Name: "preapprove", Args: "nft|usdcx", Summary: "consent to receive NFTs or USDCx from others"}, secShortcut, false, nil},
	{cmdline.Command{Name: "renew", Args: "nft|usdcx", Summary: "move that consent's expiry later"}, secShortcut, false, nil},
	{cmdline.Command{Name: "rewards", Args: "[history]", Summary: "the party's activity rewards, or their history"}, secShortcut, false, nil},

	{cmdline.Command{Name: "mint", Args: "[--max-price P] COLLECTION [QUANTITY]", Summary: fmt.Sprintf("mint from the open phase (QUANTITY 2 to %d: one batch); the collection signed for must be the one named, at no more than --max-price each", wallet.MaxBatch)}, secNFT, false, maxPriceFlag},
	{cmdline.Command{Name: "list", Args: "CONTRACT_ID PRICE [EXPIRY]", Summary: "list an NFT for sale; EXPIRY is Unix seconds or a duration (24h)"}, secNFT, false, nil},
	{cmdline.Command{Name: "cancel", Args: "CID...", Summary: fmt.Sprintf("withdraw listings (2 to %d: one batch)", wallet.MaxBatch)}, secNFT, false, nil},
	{cmdline.Command{Name: "buy", Args: "CID", Summary: "buy a listing"}, secNFT, false, nil},
	{cmdline.Command{Name: "sweep", Args: "[--max-price P] COLLECTION MAX_TOTAL COUNT|CID...", Summary: fmt.Sprintf("buy the COUNT cheapest listings, or the named ones (at most %d), for at most MAX_TOTAL in all and --max-price each", wallet.MaxBatch)}, secNFT, false, maxPriceFlag},
	{cmdline.Command{Name: "transfer", Args: "CONTRACT_ID PARTY", Summary: "give an NFT to a party (it needs an NFT preapproval)"}, secNFT, false, nil},
	{cmdline.Command{Name: "burn", Args: "CONTRACT_ID", Summary: "destroy an NFT for good"}, secNFT, false, nil},
	{cmdline.Command{Name: "offer", Args: "COLLECTION PRICE [--quantity N] [--serial S|--contract CID|--trait T=V...] [--expires E]",
		Summary: "bid PRICE each for N NFTs of the collection (an item offer for one NFT, a trait offer, else a collection offer), locking PRICE × N of your funds"}, secNFT, false, offerFlags},
	{cmdline.Command{Name: "offer cancel", Args: "CID...", Summary: fmt.Sprintf("withdraw your offers (at most %d: one batch), what they lock back to you", wallet.MaxBatch)}, secNFT, false, nil},
	{cmdline.Command{Name: "offers", Args: "[--received] [--collection C]", Summary: "your open offers, or (--received) the offers your NFTs can be accepted into"}, secNFT, false,
		func(w *cli, fs *flag.FlagSet) {
			fs.BoolVar(&w.received, "received", false, "list the offers of others your NFTs can be accepted into")
			fs.StringVar(&w.collection, "collection", "", "only the offers of this collection (id or slug); reads every page")
		}},
	{cmdline.Command{Name: "accept", Args: "OFFER_CID NFT_CID... [--min-proceeds AMOUNT]", Summary: fmt.Sprintf("sell your NFTs (at most %d) into an offer: each goes to its maker, you get its price less fee and royalty", wallet.MaxBatch)}, secNFT, false,
		func(w *cli, fs *flag.FlagSet) {
			fs.StringVar(&w.minProceeds, "min-proceeds", "", "refuse to sign unless you get at least this in all, after fee and royalty")
		}},

	{cmdline.Command{Name: "pools", Args: "", Summary: "the swap pools and their oracle prices"}, secSwap, false, nil},
	{cmdline.Command{Name: "quote", Args: "CC|USDCx AMOUNT [POOL]", Summary: "an indicative quote for selling AMOUNT"}, secSwap, false, nil},
	{cmdline.Command{Name: "lp publish", Args: "POOL ask|bid PRICE SIZE [TTL]", Summary: "publish an LP quote (TTL default 1h)"}, secSwap, false, nil},
	{cmdline.Command{Name: "lp cancel", Args: "CID", Summary: "cancel an LP quote, releasing what it locks"}, secSwap, false, nil},
	{cmdline.Command{Name: "lp claim", Args: "POOL", Summary: "claim the fees the pool's fills kept for you"}, secSwap, false, nil},
	{cmdline.Command{Name: "lp active", Args: "", Summary: "your open LP quotes"}, secSwap, false, nil},
	{cmdline.Command{Name: "swap submit", Args: "POOL CC|USDCx AMOUNT MIN [TTL]", Summary: "sell AMOUNT for at least MIN by now+TTL (default 1h)"}, secSwap, false, nil},
	{cmdline.Command{Name: "swap cancel", Args: "INTENT", Summary: "cancel a pending intent"}, secSwap, false, nil},
	{cmdline.Command{Name: "swap status", Args: "INTENT", Summary: "an intent's status and fills"}, secSwap, false, nil},
	{cmdline.Command{Name: "swap active", Args: "", Summary: "your pending intents"}, secSwap, false, nil},
	{cmdline.Command{Name: "swap history", Args: "", Summary: "your filled swaps"}, secSwap, false, nil},
}

// maxPriceFlag is --max-price: the most one NFT of a mint or a sweep may cost.
func maxPriceFlag(w *cli, fs *flag.FlagSet) {
	fs.StringVar(&w.maxPrice, "max-price", "", "refuse to sign when one NFT costs more than this (a decimal of the collection's currency)")
}

// logFlags are verify's and audit's: --network, and the witness policy.
func logFlags(w *cli, fs *flag.FlagSet) {
	networkFlag(w, fs)
	fs.Func("witness", "a witness's cosignature verifier key (<name>+<hash>+<key>, as its /witness/key serves it); repeat for each witness of the policy (also WALLETCTL_WITNESSES, space-separated)", func(v string) error {
		w.witnesses.keys = append(w.witnesses.keys, v)
		return nil
	})
	fs.IntVar(&w.witnesses.quorum, "witnesses", 0, "how many of the --witness keys must have cosigned the tree checked (default: all of them)")
}

// networkFlag is --network: the ledger network a challenge or a signed transaction must name.
func networkFlag(w *cli, fs *flag.FlagSet) {
	fs.StringVar(&w.network, "network", envOr(envNetwork, "devnet"), "the ledger network the challenge and the log's signed transactions must name")
}

// The settings every command shares: a flag anywhere on the line, or its variable.
const (
	envServer = "WALLETCTL_SERVER"
	envKey    = "WALLETCTL_KEY"
	// envNetwork is the ledger network login expects a challenge to name (login --network).
	envNetwork = "WALLETCTL_NETWORK"
)

// printUsage is walletctl -h: every command by section, and the settings they share.
func printUsage(w io.Writer) {
	fmt.Fprint(w, "walletctl: a wallet for marketd\n\nusage: walletctl [--server URL] [--key FILE] COMMAND [ARGS]\n")
	section := ""
	var cs []command
	flush := func() {
		if len(cs) > 0 {
			fmt.Fprintf(w, "\n%s:\n", section)
			cmdline.List(w, "walletctl", cs)
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
	fmt.Fprint(w, signingRules)
	printSettings(w, false)
	fmt.Fprint(w, "\nRun \"walletctl COMMAND -h\" for a command's own flags and the variables it reads.\n")
}

// signingRules is what walletctl checks before it signs a prepared transaction.
const signingRules = `
Before it signs, walletctl checks that the hash is the SHA-256 of preparedTransaction and that
the transaction acts as the key's party, decodes those bytes and prints what they do (never the
server's summary). A shortcut also refuses, exiting non-zero and executing nothing, a transaction
that does anything but what was asked: a send gives the receiver exactly AMOUNT and returns the
rest to you (nothing to anyone else); the NFT, listing(s), offer(s), price, expiry, collection,
quantity, traits, MAX_TOTAL, pool, side, size, amount, MIN and TTL are the ones given; a payment
pays only what the sale or mint owes; an offer locks exactly PRICE × N of the collection's
currency, its change back to you; an accept sends only the NFTs named, to the offer's maker,
for at least --min-proceeds. exec cannot know what was meant: it checks the party only. A slug
is resolved by the server. walletctl warns when --server is plain http to anything but this machine.
`

// printSettings lists the variables a command reads (offline ones never reach a server).
func printSettings(w io.Writer, offline bool) {
	fmt.Fprint(w, "\nenvironment (each variable is also a flag, anywhere on the line, which wins over it):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if !offline {
		fmt.Fprintf(tw, "  %s\t--server URL\tthe service (default http://localhost:8080)\n", envServer)
	}
	fmt.Fprintf(tw, "  %s\t--key FILE\tthe key file; the session token is kept in FILE.token, receipts in FILE.receipts, the log's pinned key and last checkpoint in FILE.log (default wallet.key)\n", envKey)
	tw.Flush()
}

// printHelp is "walletctl COMMAND -h".
func printHelp(w io.Writer, c command, own *flag.FlagSet) {
	globals := "[--server URL] [--key FILE]"
	if c.offline {
		globals = "[--key FILE]"
	}
	cmdline.Help(w, "walletctl", globals, c.Command, own)
	printSettings(w, c.offline)
}

// parseOwn parses the command's own flags (most have none, so any flag is an error) and
// returns its arguments. -h prints its help and returns flag.ErrHelp.
func (w *cli) parseOwn(c command, args []string) ([]string, error) {
	fs := flag.NewFlagSet("walletctl "+c.Name, flag.ContinueOnError)
	if c.flags != nil {
		c.flags(w, fs)
	}
	rest, err := cmdline.Parse("walletctl", c.Command, fs, args)
	// A command's own flags may also follow its arguments: "offer apes 5 --quantity 3".
	var pos []string
	for err == nil && c.flags != nil && len(rest) > 0 && !endOfFlags(args, rest) {
		pos, args = append(pos, rest[0]), rest[1:]
		rest, err = cmdline.Parse("walletctl", c.Command, fs, args)
	}
	if errors.Is(err, flag.ErrHelp) {
		printHelp(w.out, c, fs)
	}
	return append(pos, rest...), err
}

// endOfFlags tells whether parsing args stopped at "--" before rest: what follows is
// arguments only.
func endOfFlags(args, rest []string) bool {
	n := len(args) - len(rest)
	return n > 0 && args[n-1] == "--"
}
