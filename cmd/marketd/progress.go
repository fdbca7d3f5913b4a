package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"golang.org/x/term"
)

// progressLine shows how far long work has come, on one line of a terminal rewritten in
// place: "seeded 250,000 / 1,000,000 NFTs, 42 s". Where standard error is not a terminal
// (a script, a pipe, a log file) it writes nothing: the command's one JSON object on
// standard output is all a script sees.
type progressLine struct {
	w        io.Writer
	terminal bool
	format   string // with two %s: done and total
	now      func() time.Time
	start    time.Time
	last     time.Time
	shown    bool
}

// newProgress is a progress line on stderr, shown only when stderr is a terminal.
func newProgress(stderr *os.File, format string) *progressLine {
	return &progressLine{w: stderr, terminal: term.IsTerminal(int(stderr.Fd())), format: format, now: time.Now, start: time.Now()}
}

// redrawEvery bounds how often the line is rewritten; the last report always is.
const redrawEvery = 200 * time.Millisecond

// report draws the line; it is a store.Progress.
func (p *progressLine) report(done, total int) {
	if !p.terminal {
		return
	}
	now := p.now()
	if p.shown && done < total && now.Sub(p.last) < redrawEvery {
		return
	}
	p.last, p.shown = now, true
	// \r returns to the line's start and \x1b[K clears what a longer line left.
	fmt.Fprintf(p.w, "\r"+p.format+", %d s\x1b[K", thousands(done), thousands(total), int(now.Sub(p.start).Seconds()))
}

// end finishes the line, if one was drawn, so what follows starts on a line of its own.
func (p *progressLine) end() {
	if p.shown {
		fmt.Fprintln(p.w)
		p.shown = false
	}
}

// thousands writes n with a comma every three digits: 1,000,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var b []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	if neg {
		return "-" + string(b)
	}
	return string(b)
}
