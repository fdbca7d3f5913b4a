package graph

import (
	"context"
	"net/http"
	"sync"

	"marketd/store"
)

// Wallet is a party's wallet; its fields load when asked for.
type Wallet struct {
	PartyID string
}

// Rewards is a party's reward balance; its history loads when asked for.
type Rewards struct {
	partyID    string
	Balance    store.Amount
	Instrument store.Instrument
}

// caller is the identity of a GraphQL request, read from its token once and only when a
// field needs it: public reads never look at the token.
type caller struct {
	once sync.Once
	read func() (*store.Auth, error)
	auth *store.Auth
	err  error
}

type callerKey struct{}

func withCaller(authenticate func(*http.Request) (*store.Auth, error), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := &caller{read: func() (*store.Auth, error) {
			if authenticate == nil {
				return nil, store.Errorf(store.CodeUnauthenticated, "this server takes no tokens on GraphQL")
			}
			return authenticate(r)
		}}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}

// actAs returns nil when the request's token is partyID's, else the error REST would give.
func actAs(ctx context.Context, partyID string) error {
	p, err := callerParty(ctx)
	if err != nil {
		return err
	}
	if p != partyID {
		return store.Errorf(store.CodePartyMismatch, "the query names %s, the token is for %s", partyID, p)
	}
	return nil
}

// callerParty is the party the request's token is for.
func callerParty(ctx context.Context) (string, error) {
	c, _ := ctx.Value(callerKey{}).(*caller)
	// An answer that looked at the caller is that caller's: the response cache never keeps it.
	store.Spoil(ctx)
	if c == nil {
		return "", store.Errorf(store.CodeUnauthenticated, "sign in first")
	}
	c.once.Do(func() { c.auth, c.err = c.read() })
	if c.err != nil {
		return "", c.err
	}
	return c.auth.PartyID, nil
}
