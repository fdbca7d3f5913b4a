// Package pgproxy is a PostgreSQL proxy for tests that need the database to fail the way a
// network or a server does: it relays the wire protocol between marketd and a real server,
// and on demand refuses new connections, cuts every open one, or cuts a connection at the
// moment it sends COMMIT (before the server sees it, or after the server committed but before
// its answer comes back). It can also hold back the server's reports of one parameter, as a
// connection pooler that does not pass them on does.
package pgproxy

import (
	"encoding/binary"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Cut says when the proxy cuts a connection that sends COMMIT.
type Cut int

const (
	CutNever        Cut = iota
	CutBeforeCommit     // the server never sees the COMMIT: the transaction rolls back
	CutAfterCommit      // the server commits; its answer is lost
)

// Proxy relays connections to one PostgreSQL server.
type Proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	down   bool
	cut    Cut
	cuts   int // COMMITs cut so far
	active map[*link]bool
	hidden string // the parameter whose reports new connections do not relay
}

type link struct {
	client, server net.Conn
	mu             sync.Mutex
	dropReplies    bool
	hidden         string
}

func (l *link) close() {
	l.client.Close()
	l.server.Close()
}

// Start listens on loopback and relays to the server dsn names; it stops when the test ends.
// DSN returns dsn pointed at the proxy.
func Start(t testing.TB, dsn string) *Proxy {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: u.Host, active: map[*link]bool{}}
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.CutAll()
	})
	return p
}

// DSN returns dsn with its host and port replaced by the proxy's.
func (p *Proxy) DSN(dsn string) string {
	u, _ := url.Parse(dsn)
	u.Host = p.ln.Addr().String()
	return u.String()
}

// SetDown refuses new connections (closing them at once) and cuts every open one, as a
// stopped server does; SetDown(false) lets them through again.
func (p *Proxy) SetDown(down bool) {
	p.mu.Lock()
	p.down = down
	p.mu.Unlock()
	if down {
		p.CutAll()
	}
}

// CutCommits arms the proxy to cut the next connection that sends COMMIT, as c says; it
// disarms itself after one cut.
func (p *Proxy) CutCommits(c Cut) {
	p.mu.Lock()
	p.cut = c
	p.mu.Unlock()
}

// HideReports makes connections opened from now on drop the server's ParameterStatus messages
// for parameter name ("" relays them all again).
func (p *Proxy) HideReports(name string) {
	p.mu.Lock()
	p.hidden = name
	p.mu.Unlock()
}

// Cuts counts the COMMITs cut so far.
func (p *Proxy) Cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}

// CutAll closes every open connection.
func (p *Proxy) CutAll() {
	p.mu.Lock()
	links := make([]*link, 0, len(p.active))
	for l := range p.active {
		links = append(links, l)
	}
	p.mu.Unlock()
	for _, l := range links {
		l.close()
	}
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		l := &link{client: c, server: s, hidden: p.hidden}
		p.active[l] = true
		p.mu.Unlock()
		go p.fromServer(l)
		go p.fromClient(l)
	}
}

func (p *Proxy) forget(l *link) {
	l.close()
	p.mu.Lock()
	delete(p.active, l)
	p.mu.Unlock()
}

// fromServer relays the server's bytes, unless the link is being cut after a COMMIT.
func (p *Proxy) fromServer(l *link) {
	defer p.forget(l)
	if l.hidden != "" {
		p.fromServerHiding(l)
		return
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := l.server.Read(buf)
		l.mu.Lock()
		drop := l.dropReplies
		l.mu.Unlock()
		if drop {
			return
		}
		if n > 0 {
			if _, werr := l.client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// fromClient relays the client's messages one by one, looking for a simple-protocol COMMIT.
func (p *Proxy) fromClient(l *link) {
	defer p.forget(l)
	// The startup message (and an SSL request before it) has no type byte.
	for {
		var head [8]byte
		if _, err := io.ReadFull(l.client, head[:]); err != nil {
			return
		}
		size := binary.BigEndian.Uint32(head[:4])
		body := make([]byte, size-8)
		if _, err := io.ReadFull(l.client, body); err != nil {
			return
		}
		if _, err := l.server.Write(append(head[:], body...)); err != nil {
			return
		}
		if code := binary.BigEndian.Uint32(head[4:]); code != 80877103 { // not SSLRequest
			break
		}
	}
	for {
		head, body, err := readMessage(l.client)
		if err != nil {
			return
		}
		if head[0] == 'Q' && strings.EqualFold(strings.TrimRight(strings.TrimSpace(string(body)), "\x00; "), "commit") {
			p.mu.Lock()
			cut := p.cut
			if cut != CutNever {
				p.cut = CutNever
				p.cuts++
			}
			p.mu.Unlock()
			switch cut {
			case CutBeforeCommit:
				return
			case CutAfterCommit:
				l.mu.Lock()
				l.dropReplies = true
				l.mu.Unlock()
				l.server.Write(append(head[:], body...))
				time.Sleep(100 * time.Millisecond) // the server commits
				return
			}
		}
		if _, err := l.server.Write(append(head[:], body...)); err != nil {
			return
		}
	}
}

// fromServerHiding relays the server's messages one by one, but its reports of l.hidden. The
// connection must not use TLS (the tests' sslmode=disable): every message then has a type and
// a length.
func (p *Proxy) fromServerHiding(l *link) {
	for {
		head, body, err := readMessage(l.server)
		if err != nil {
			return
		}
		l.mu.Lock()
		drop := l.dropReplies
		l.mu.Unlock()
		if drop {
			return
		}
		if name, _, _ := strings.Cut(string(body), "\x00"); head[0] == 'S' && name == l.hidden {
			continue
		}
		if _, err := l.client.Write(append(head[:], body...)); err != nil {
			return
		}
	}
}

// readMessage reads one message of the wire protocol after the startup: its type and length
// (head), then its body.
func readMessage(r io.Reader) (head [5]byte, body []byte, err error) {
	if _, err = io.ReadFull(r, head[:]); err != nil {
		return head, nil, err
	}
	body = make([]byte, binary.BigEndian.Uint32(head[1:])-4)
	_, err = io.ReadFull(r, body)
	return head, body, err
}
