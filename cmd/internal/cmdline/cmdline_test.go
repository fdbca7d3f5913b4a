package cmdline

import (
	"errors"
	"flag"
	"strings"
	"testing"
)

var table = []Command{{Name: "serve"}, {Name: "lp publish", Args: "POOL"}, {Name: "lp cancel", Args: "CID"}, {Name: "offer", Args: "COLLECTION"}, {Name: "offer cancel", Args: "CID"}}

func TestFind_TakesOneWordOrAGroupAndItsVerb(t *testing.T) {
	for _, tc := range []struct {
		args []string
		name string
		rest []string
	}{
		{[]string{"serve", "-x"}, "serve", []string{"-x"}},
		{[]string{"lp", "cancel", "c1"}, "lp cancel", []string{"c1"}},
		{[]string{"lp"}, "", nil},
		{[]string{"lp", "withdraw"}, "", nil},
		{[]string{"publish"}, "", nil},
		{[]string{"offer", "apes"}, "offer", []string{"apes"}},
		{[]string{"offer", "cancel", "c1"}, "offer cancel", []string{"c1"}},
		{[]string{"offer"}, "offer", nil},
	} {
		c, rest, ok := Find(table, tc.args)
		if ok != (tc.name != "") || c.Name != tc.name || strings.Join(rest, " ") != strings.Join(tc.rest, " ") {
			t.Errorf("Find(%q) = %q %q %v, want %q %q", tc.args, c.Name, rest, ok, tc.name, tc.rest)
		}
	}
}

func TestNotFound_ListsTheGroupOrSaysTheWordIsUnknown(t *testing.T) {
	if e := NotFound("walletctl", table, []string{"lp", "withdraw"}); e.Cmd != "walletctl lp" ||
		!strings.Contains(e.Error(), `unknown command "withdraw"; one of`) || !strings.Contains(e.Error(), "walletctl lp cancel CID") {
		t.Errorf("lp withdraw: %q", e)
	}
	if e := NotFound("walletctl", table, []string{"sell"}); e.Cmd != "walletctl" || !strings.Contains(e.Error(), `unknown command "sell"`) {
		t.Errorf("sell: %q", e)
	}
}

func TestExit_IsZeroForHelpTwoForUsageOneOtherwise(t *testing.T) {
	var b strings.Builder
	for _, tc := range []struct {
		err  error
		code int
	}{
		{nil, 0}, {flag.ErrHelp, 0}, {&UsageError{"x", errors.New("bad flag")}, 2}, {errors.New("store down"), 1},
	} {
		if got := Exit(&b, "x", tc.err); got != tc.code {
			t.Errorf("Exit(%v) = %d, want %d", tc.err, got, tc.code)
		}
	}
	if want := "x: bad flag\nRun \"x -h\" for its usage.\nx: store down\n"; b.String() != want {
		t.Errorf("stderr %q, want %q", b.String(), want)
	}
}

func TestGroupHelp_OfAGroupThatIsAlsoACommandIsTheCommandsOwn(t *testing.T) {
	var b strings.Builder
	if !GroupHelp(&b, "walletctl", table, []string{"lp", "-h"}) || !strings.Contains(b.String(), "walletctl lp cancel CID") {
		t.Errorf("lp -h: %q", b.String())
	}
	b.Reset()
	if GroupHelp(&b, "walletctl", table, []string{"offer", "-h"}) || b.Len() != 0 {
		t.Errorf("offer -h answered as a group: %q", b.String())
	}
}
