package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"

	"golang.org/x/term"

	"marketd/store/admin"
)

// adminCmd manages the admin console's users: create-user, list, disable, reset.
func adminCmd(args []string) error {
	const usage = "admin wants create-user --role viewer|operator NAME, list, disable NAME or reset NAME"
	if len(args) == 0 {
		return errors.New(usage)
	}
	verb := args[0]
	var role string
	c, extra, err := parseConfig("admin "+verb, args[1:], func(fs *flag.FlagSet) {
		if verb == "create-user" {
			fs.StringVar(&role, "role", "", "viewer (reads) or operator (also acts) (required)")
		}
	})
	if err != nil {
		return err
	}
	want := 1
	if verb == "list" {
		want = 0
	}
	if len(extra) != want {
		return errors.New(usage)
	}
	ctx := context.Background()
	switch verb {
	case "create-user", "reset", "disable", "list":
	default:
		return errors.New(usage)
	}
	var password string
	if verb == "create-user" || verb == "reset" {
		// Check what can be checked before asking for a password.
		if verb == "create-user" {
			if _, err := admin.ParseRole(role); err != nil {
				return storeError(err)
			}
		}
		if password, err = readPassword(os.Stdin, os.Stderr, extra[0]); err != nil {
			return err
		}
	}
	s, err := operatorStore(ctx, c)
	if err != nil {
		return err
	}
	defer s.Close()
	con := admin.New(s)
	switch verb {
	case "create-user":
		u, err := con.CreateUser(ctx, extra[0], admin.Role(role), password, cliActor())
		if err != nil {
			return storeError(err)
		}
		return printResult(map[string]any{"created": u.Name, "role": u.Role})
	case "reset":
		if err := con.ResetPassword(ctx, extra[0], password, cliActor()); err != nil {
			return storeError(err)
		}
		return printResult(map[string]any{"reset": extra[0]})
	case "disable":
		if err := con.DisableUser(ctx, extra[0], cliActor()); err != nil {
			return storeError(err)
		}
		return printResult(map[string]any{"disabled": extra[0]})
	}
	us, err := con.Users(ctx)
	if err != nil {
		return err
	}
	type row struct {
		Name       string `json:"name"`
		Role       string `json:"role"`
		Disabled   bool   `json:"disabled"`
		CreatedAt  int64  `json:"createdAt"`
		PasswordAt int64  `json:"passwordSetAt"`
	}
	out := []row{}
	for _, u := range us {
		out = append(out, row{u.Name, string(u.Role), u.DisabledAt != nil, u.CreatedAt.Unix(), u.PasswordAt.Unix()})
	}
	return printResult(map[string]any{"users": out})
}

// cliActor is who the audit log says acted from the command line: the OS user, on this host.
func cliActor() admin.AuditEntry {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return admin.AuditEntry{Actor: "cli:" + name, Addr: "host " + host}
}

// readPassword reads a password: prompted twice without echo on a terminal, else one line
// of in (so `echo "$PW" | marketd admin create-user ...` works in scripts).
func readPassword(in *os.File, prompt io.Writer, name string) (string, error) {
	fd := int(in.Fd())
	if !term.IsTerminal(fd) {
		line, err := bufio.NewReader(in).ReadString('\n')
		if err != nil && (err != io.EOF || line == "") {
			return "", errors.New("read the password from standard input: no line")
		}
		return strings.TrimRight(line, "\r\n"), nil
	}
	fmt.Fprintf(prompt, "Password for %s: ", name)
	a, err := term.ReadPassword(fd)
	fmt.Fprintln(prompt)
	if err != nil {
		return "", err
	}
	fmt.Fprint(prompt, "Again: ")
	b, err := term.ReadPassword(fd)
	fmt.Fprintln(prompt)
	if err != nil {
		return "", err
	}
	if string(a) != string(b) {
		return "", errors.New("the passwords differ")
	}
	return string(a), nil
}
