package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// command is one marketd subcommand as its help shows it.
type command struct {
	name     string   // as typed: "oracle set"
	synopsis string   // what follows the name
	summary  string   // one line: what it does
	settings []string // the settings it reads, by flag name; nil for every one (serve)
}

// The settings each command reads. An operator command reads the store and nothing the
// server alone uses, so its help shows only what changes what it does.
var (
	storeOnly    = []string{"db"}
	migrateReads = []string{"db", "log-level"}
	seedReads    = []string{"db", "market-fee-bps", "preapproval-ttl"} // the seed's past sales pay the fee; its traders' preapprovals last this long
)

var commands = []command{
	{"serve", "[flags]", "run the service: REST, GraphQL and the admin console (applies pending migrations first)", nil},
	{"migrate up", "[flags]", "apply every pending migration; prints {applied}", migrateReads},
	{"migrate down", "[flags]", "roll back the last group of migrations; prints {rolledBack}", migrateReads},
	{"migrate status", "[flags]", "list every migration and whether it is applied; prints {migrations}", migrateReads},
	{"seed", "--demo [--nfts N] [--seed N] [flags]", "fill an empty store with a demo market; prints {seeded, tookMs}", seedReads},
	{"collection create", "--slug S --name N --creator PARTY --currency CC|USDCx --supply N [flags]", "create an NFT collection; prints {id, slug}", storeOnly},
	{"collection add-phase", "--collection ID|SLUG --name N --price DEC --start UNIX --end UNIX --per-party-limit N [flags]", "add a mint phase to a collection; prints the phase", storeOnly},
	{"pool create", "--base CC --quote USDCx --fee-bps N [flags]", "create a swap pool; prints {poolId}", storeOnly},
	{"oracle set", "--base CC --quote USDCx --price DEC [flags]", "set the oracle's price of a pair, quote per base; prints it with its timestamp", storeOnly},
	{"admin create-user", "--role viewer|operator [flags] NAME", "create an admin console user; the password is read from standard input", storeOnly},
	{"admin list", "[flags]", "list the admin console users; prints {users}", storeOnly},
	{"admin disable", "[flags] NAME", "disable an admin console user and end its sessions; prints {disabled}", storeOnly},
	{"admin reset", "[flags] NAME", "set an admin console user's password (read from standard input) and enable it again; prints {reset}", storeOnly},
}

// commandNamed returns the command called name.
func commandNamed(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// reads tells whether the command reads the setting.
func (c command) reads(setting string) bool {
	if c.settings == nil {
		return true
	}
	for _, s := range c.settings {
		if s == setting {
			return true
		}
	}
	return false
}

// groupOf lists the commands named "group VERB".
func groupOf(group string) []command {
	var out []command
	for _, c := range commands {
		if strings.HasPrefix(c.name, group+" ") {
			out = append(out, c)
		}
	}
	return out
}

// printCommands writes one line per command: its name and what it does.
func printCommands(w io.Writer, cs []command) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range cs {
		fmt.Fprintf(tw, "  marketd %s\t%s\n", c.name, c.summary)
	}
	tw.Flush()
}

// printUsage is marketd -h: every command and where to learn more.
func printUsage(w io.Writer) {
	fmt.Fprint(w, "marketd: the marketplace service\n\nusage: marketd COMMAND [flags]\n\ncommands:\n")
	printCommands(w, commands)
	fmt.Fprint(w, "\nRun \"marketd COMMAND -h\" for a command's flags and the MARKETD_ environment variables it reads.\n"+
		"Every setting is a flag and an environment variable: the variable wins over the default, the flag over both.\n")
}

// printHelp is "marketd COMMAND -h": what it does, its own flags, the settings it reads.
func printHelp(w io.Writer, c command, own *flag.FlagSet, cfg []setting) {
	fmt.Fprintf(w, "marketd %s: %s\n\nusage: marketd %s %s\n", c.name, c.summary, c.name, c.synopsis)
	n := 0
	own.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprint(w, "\nflags:\n")
		own.SetOutput(w)
		own.PrintDefaults()
	}
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

// usageError is a command line that does not parse: marketd exits 2 and names the help.
type usageError struct {
	cmd string
	err error
}

func (e *usageError) Error() string {
	return fmt.Sprintf("%s: %v\nRun \"marketd %s -h\" for its usage.", e.cmd, e.err, e.cmd)
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
		"seed":                 seedCmd,
		"collection create":    collectionCreate,
		"collection add-phase": collectionAddPhase,
		"pool create":          poolCreate,
		"oracle set":           oracleSet,
		"admin create-user":    verb(adminCmd, "create-user"),
		"admin list":           verb(adminCmd, "list"),
		"admin disable":        verb(adminCmd, "disable"),
		"admin reset":          verb(adminCmd, "reset"),
	}
}

func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}

// dispatch runs the command args name and returns the process's exit code.
func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return 2
	}
	if isHelp(args[0]) {
		printUsage(stdout)
		return 0
	}
	run := runners()
	name, rest := args[0], args[1:]
	if len(rest) > 0 {
		if _, ok := run[name+" "+rest[0]]; ok {
			name, rest = name+" "+rest[0], rest[1:]
		}
	}
	fn, ok := run[name]
	if !ok {
		group := groupOf(name)
		switch {
		case len(group) == 0:
			fmt.Fprintf(stderr, "marketd: unknown command %q\n\n", name)
			printUsage(stderr)
			return 2
		case len(rest) > 0 && isHelp(rest[0]):
			fmt.Fprintf(stdout, "marketd %s: one of\n", name)
			printCommands(stdout, group)
			return 0
		}
		if len(rest) > 0 {
			fmt.Fprintf(stderr, "marketd %s: unknown command %q; one of\n", name, rest[0])
		} else {
			fmt.Fprintf(stderr, "marketd %s: wants one of\n", name)
		}
		printCommands(stderr, group)
		return 2
	}
	err := fn(rest)
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "marketd", ue.Error())
		return 2
	}
	fmt.Fprintln(stderr, "marketd:", err)
	return 1
}
