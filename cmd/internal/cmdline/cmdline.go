// Package cmdline is what marketd and walletctl share about their command lines: a table of
// subcommands, each named by one or two words, that gives the program's -h, each command's
// -h and the lookup of the command a line names. -h is help on standard output and exit 0;
// a line that does not parse is a UsageError, exit 2, that names the command's help.
package cmdline

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Command is one subcommand as help shows it.
type Command struct {
	Name    string // as typed after the program: "oracle set"
	Args    string // what follows the name
	Summary string // one line: what it does
}

// Cmd returns c; a program's own command type embeds Command and so is Named.
func (c Command) Cmd() Command { return c }

// Named is a program's command type.
type Named interface{ Cmd() Command }

// IsHelp tells whether arg asks for help.
func IsHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}

// UsageError is a command line that does not parse.
type UsageError struct {
	Cmd string // the program and the command: "marketd oracle set"
	Err error
}

func (e *UsageError) Error() string {
	return fmt.Sprintf("%s: %v\nRun \"%s -h\" for its usage.", e.Cmd, e.Err, e.Cmd)
}

// Find returns the command args name (one word, or two for a group's verb) and the
// arguments after its name. A group's verb wins over a command named by the group's word
// alone: "offer cancel c1" is "offer cancel", not "offer" with "cancel c1".
func Find[C Named](cs []C, args []string) (C, []string, bool) {
	if len(args) > 1 {
		for _, c := range cs {
			if c.Cmd().Name == args[0]+" "+args[1] {
				return c, args[2:], true
			}
		}
	}
	for _, c := range cs {
		if c.Cmd().Name == args[0] {
			return c, args[1:], true
		}
	}
	var none C
	return none, nil, false
}

// Group lists the commands named "group VERB".
func Group[C Named](cs []C, group string) []C {
	var out []C
	for _, c := range cs {
		if strings.HasPrefix(c.Cmd().Name, group+" ") {
			out = append(out, c)
		}
	}
	return out
}

// NotFound is the UsageError of a line that names no command: an unknown word, or a group
// without a verb it knows, with the group's commands listed.
func NotFound[C Named](prog string, cs []C, args []string) *UsageError {
	group := Group(cs, args[0])
	if len(group) == 0 {
		return &UsageError{prog, fmt.Errorf("unknown command %q", args[0])}
	}
	var b strings.Builder
	if len(args) > 1 {
		fmt.Fprintf(&b, "unknown command %q; one of\n", args[1])
	} else {
		b.WriteString("wants one of\n")
	}
	List(&b, prog, group)
	return &UsageError{prog + " " + args[0], errors.New(strings.TrimRight(b.String(), "\n"))}
}

// List writes one line per command: how to call it and what it does.
func List[C Named](w io.Writer, prog string, cs []C) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range cs {
		c := c.Cmd()
		fmt.Fprintf(tw, "  %s %s\t%s\n", prog, strings.TrimSpace(c.Name+" "+c.Args), c.Summary)
	}
	tw.Flush()
}

// Parse parses the command's flags from args and returns the arguments after them. -h
// returns flag.ErrHelp (the caller prints the help); any other failure is a UsageError.
func Parse(prog string, c Command, fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &UsageError{strings.TrimSpace(prog + " " + c.Name), err}
	}
	return fs.Args(), nil
}

// Help writes the head of "PROG COMMAND -h": what it does, how to call it (globals are the
// program's flags that come first), and its own flags, if it has any.
func Help(w io.Writer, prog, globals string, c Command, own *flag.FlagSet) {
	fmt.Fprintf(w, "%s %s: %s\n\nusage: %s\n", prog, c.Name, c.Summary, strings.Join(strings.Fields(prog+" "+globals+" "+c.Name+" "+c.Args), " "))
	n := 0
	own.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprint(w, "\nflags:\n")
		own.SetOutput(w)
		own.PrintDefaults()
	}
}

// GroupHelp answers "PROG GROUP -h" with the group's commands on w; it tells whether args
// asked for that. A group that is also a command of its own ("offer" beside "offer cancel")
// is that command's help instead.
func GroupHelp[C Named](w io.Writer, prog string, cs []C, args []string) bool {
	if len(args) < 2 || !IsHelp(args[1]) || len(Group(cs, args[0])) == 0 {
		return false
	}
	for _, c := range cs {
		if c.Cmd().Name == args[0] {
			return false
		}
	}
	fmt.Fprintf(w, "%s %s: one of\n", prog, args[0])
	List(w, prog, Group(cs, args[0]))
	return true
}

// Exit reports err on stderr and returns the process's exit code: 0 for none or for help,
// 2 for a UsageError, 1 for any other failure.
func Exit(stderr io.Writer, prog string, err error) int {
	var ue *UsageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, err)
		return 2
	}
	fmt.Fprintf(stderr, "%s: %v\n", prog, err)
	return 1
}
