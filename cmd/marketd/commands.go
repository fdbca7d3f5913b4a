package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"marketd/cmd/internal/cmdline"
)

// command is one marketd subcommand and the settings it reads, by flag name; nil for every
// one (serve).
type command struct {
	cmdline.Command
	settings []string
}

// The settings each command reads. An operator command reads the store and nothing the
// server alone uses, so its help shows only what changes what it does.
var (
	storeOnly    = []string{"db", "kek-file"}
	migrateReads = []string{"db", "kek-file", "log-level"}
	seedReads    = []string{"db", "kek-file", "market-fee-bps", "preapproval-ttl"} // the seed's past sales pay the fee; its traders' preapprovals last this long
	jwtReads     = []string{"db", "kek-file", "token-ttl", "log-level"}            // a replaced key is served for the tokens' lifetime
)

var commands = []command{
	{cmdline.Command{Name: "serve", Args: "[flags]", Summary: "run the service: REST, GraphQL and the admin console (applies pending migrations first)"}, nil},
	{cmdline.Command{Name: "migrate up", Args: "[flags]", Summary: "apply every pending migration; prints {applied}"}, migrateReads},
	{cmdline.Command{Name: "migrate down", Args: "[flags]", Summary: "roll back the last group of migrations; prints {rolledBack}"}, migrateReads},
	{cmdline.Command{Name: "migrate status", Args: "[flags]", Summary: "list every migration and whether it is applied; prints {migrations}"}, migrateReads},
	{cmdline.Command{Name: "keys rotate-kek", Args: "--new-kek-file FILE [flags]", Summary: "seal every secret of the store again under a new key-encryption key, in one transaction; prints {resealed, kek, previousKek}"}, migrateReads},
	{cmdline.Command{Name: "keys rotate", Args: "[flags] jwt", Summary: "add a new token signing key; the one it replaces stays in the JWKS until its last token expires; prints {kid, previousKid, previousServedUntil, removed}"}, jwtReads},
	{cmdline.Command{Name: "seed", Args: "--demo [--nfts N] [--seed N] [--offers=false] [flags]", Summary: "fill an empty store with a demo market; prints {seeded, tookMs}"}, seedReads},
	{cmdline.Command{Name: "collection create", Args: "--slug S --name N --creator PARTY --currency CC|USDCx --supply N [flags]", Summary: "create an NFT collection; prints {id, slug}"}, storeOnly},
	{cmdline.Command{Name: "collection add-phase", Args: "--collection ID|SLUG --name N --price DEC --start UNIX --end UNIX --per-party-limit N [flags]", Summary: "add a mint phase to a collection; prints the phase"}, storeOnly},
	{cmdline.Command{Name: "pool create", Args: "--base CC --quote USDCx --fee-bps N [flags]", Summary: "create a swap pool; prints {poolId}"}, storeOnly},
	{cmdline.Command{Name: "oracle set", Args: "--base CC --quote USDCx --price DEC [flags]", Summary: "set the oracle's price of a pair, quote per base; prints it with its timestamp"}, storeOnly},
	{cmdline.Command{Name: "admin create-user", Args: "--role viewer|operator [flags] NAME", Summary: "create an admin console user; the password is read from standard input"}, storeOnly},
	{cmdline.Command{Name: "admin list", Args: "[flags]", Summary: "list the admin console users; prints {users}"}, storeOnly},
	{cmdline.Command{Name: "admin disable", Args: "[flags] NAME", Summary: "disable an admin console user and end its sessions; prints {disabled}"}, storeOnly},
	{cmdline.Command{Name: "admin reset", Args: "[flags] NAME", Summary: "set an admin console user's password (read from standard input) and enable it again; prints {reset}"}, storeOnly},
	{cmdline.Command{Name: "backup", Args: "[flags] FILE", Summary: "copy the embedded store, consistently, to a new FILE (0600) while it serves; prints {file, bytes, tookMs, updates, logSize}"}, storeOnly},
	{cmdline.Command{Name: "restore", Args: "[--force] [flags] FILE", Summary: "make the backup FILE the embedded store, once it passes integrity_check (the server stopped); prints {file, store, bytes, tookMs, updates, logSize}"}, storeOnly},
}

// commandNamed returns the command called name.
func commandNamed(name string) (command, bool) {
	c, rest, ok := cmdline.Find(commands, strings.Fields(name))
	return c, ok && len(rest) == 0
}

// reads tells whether the command reads the setting.
func (c command) reads(setting string) bool {
	return c.settings == nil || slices.Contains(c.settings, setting)
}

// printUsage is marketd -h: every command and where to learn more.
func printUsage(w io.Writer) {
	fmt.Fprint(w, "marketd: the marketplace service\n\nusage: marketd COMMAND [flags]\n\ncommands:\n")
	cmdline.List(w, "marketd", commands)
	fmt.Fprint(w, "\nRun \"marketd COMMAND -h\" for a command's flags and the MARKETD_ environment variables it reads.\n"+
		"Every setting is a flag and an environment variable: the variable wins over the default, the flag over both.\n")
}

// printHelp is "marketd COMMAND -h": what it does, its own flags, the settings it reads.
func printHelp(w io.Writer, c command, own *flag.FlagSet, cfg []setting) {
	cmdline.Help(w, "marketd", "", c.Command, own)
	fmt.Fprint(w, "\nenvironment (each variable is also a flag, which wins over it; the variable wins over the default):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range cfg {
		def := s.def
		if def == "" {
			def = "empty"
		}
		fmt.Fprintf(tw, "  %s\t-%s\t%s (default %s)\n", s.env, s.name, s.usage, def)
	}
	tw.Flush()
}

// runners maps each command to what runs it. (A function, not a variable: the commands call
// parseConfig, which reads the command table.)
func runners() map[string]func([]string) error {
	verb := func(fn func([]string) error, v string) func([]string) error {
		return func(args []string) error { return fn(append([]string{v}, args...)) }
	}
	return map[string]func([]string) error{
		"serve":                serve,
		"migrate up":           verb(migrate, "up"),
		"migrate down":         verb(migrate, "down"),
		"migrate status":       verb(migrate, "status"),
		"keys rotate-kek":      keysRotateKEK,
		"keys rotate":          keysRotateJWT,
		"seed":                 seedCmd,
		"collection create":    collectionCreate,
		"collection add-phase": collectionAddPhase,
		"pool create":          poolCreate,
		"oracle set":           oracleSet,
		"admin create-user":    verb(adminCmd, "create-user"),
		"admin list":           verb(adminCmd, "list"),
		"admin disable":        verb(adminCmd, "disable"),
		"admin reset":          verb(adminCmd, "reset"),
		"backup":               backupCmd,
		"restore":              restoreCmd,
	}
}

// dispatch runs the command args name and returns the process's exit code.
func dispatch(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		printUsage(stderr)
		return 2
	case cmdline.IsHelp(args[0]):
		printUsage(stdout)
		return 0
	case cmdline.GroupHelp(stdout, "marketd", commands, args): // marketd admin -h
		return 0
	}
	c, rest, ok := cmdline.Find(commands, args)
	if !ok {
		return cmdline.Exit(stderr, "marketd", cmdline.NotFound("marketd", commands, args))
	}
	return cmdline.Exit(stderr, "marketd", runners()[c.Name](rest))
}
