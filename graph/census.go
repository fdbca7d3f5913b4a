package graph

import (
	"net"
	"net/http"
	"sync"

	"marketd/store"
)

// census counts the websockets and the subscriptions of each client address and of the whole
// handler, and refuses one past its limit (SocketLimits): an address cannot hold the service's
// sockets, nor the service more than it can serve.
type census struct {
	limits SocketLimits

	mu      sync.Mutex
	sockets int
	subs    int
	by      map[string]*addressCount
}

// addressCount is what one client address holds.
type addressCount struct{ sockets, subs int }

// openSocket counts in a socket of addr, or refuses it with too_many_sockets.
func (c *census) openSocket(addr string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.at(addr)
	switch {
	case c.sockets >= c.limits.ServiceSockets:
		c.forget(addr)
		return store.Errorf(store.CodeTooManySockets, "the service holds %d websockets, the most it may; try again later", c.sockets)
	case n.sockets >= c.limits.SocketsPerAddress:
		return store.Errorf(store.CodeTooManySockets, "this client address holds %d websockets, the most one address may; close one, or run more subscriptions on one socket", n.sockets)
	}
	n.sockets++
	c.sockets++
	return nil
}

// closeSocket counts out a socket of addr.
func (c *census) closeSocket(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sockets--
	c.at(addr).sockets--
	c.forget(addr)
}

// startSubscription counts in a subscription of addr, or refuses it with
// too_many_subscriptions.
func (c *census) startSubscription(addr string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.at(addr)
	switch {
	case c.subs >= c.limits.ServiceSubscriptions:
		c.forget(addr)
		return store.Errorf(store.CodeTooManySubscriptions, "the service runs %d subscriptions, the most it may; try again later", c.subs)
	case n.subs >= c.limits.SubscriptionsPerAddress:
		c.forget(addr)
		return store.Errorf(store.CodeTooManySubscriptions, "this client address runs %d subscriptions, the most one address may; complete one first", n.subs)
	}
	n.subs++
	c.subs++
	return nil
}

// endSubscription counts out a subscription of addr.
func (c *census) endSubscription(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.subs--
	c.at(addr).subs--
	c.forget(addr)
}

// at is what addr holds, counted from now on.
func (c *census) at(addr string) *addressCount {
	n := c.by[addr]
	if n == nil {
		if c.by == nil {
			c.by = map[string]*addressCount{}
		}
		n = &addressCount{}
		c.by[addr] = n
	}
	return n
}

// forget drops the count of an address that holds nothing.
func (c *census) forget(addr string) {
	if n := c.by[addr]; n.sockets == 0 && n.subs == 0 {
		delete(c.by, addr)
	}
}

// peerAddress is the connection's peer host: a request's client address when no function
// of the service's names it.
func peerAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
