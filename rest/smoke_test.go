package rest

import (
	"net/http"
	"testing"

	"marketd/store/storetest"
)

func TestSignIn_EndToEnd(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		a := newTestAPI(t, b)
		alice := a.onboard("alice")
		tok := a.token(alice)
		me := a.do("GET", "/api/auth/me", nil, bearer(tok)).ok(t)
		if got := me.str(t, "partyId"); got != alice.ID {
			t.Fatalf("me = %s, want %s", got, alice.ID)
		}
		a.do("POST", "/api/auth/logout", nil, bearer(tok)).ok(t)
		a.do("GET", "/api/auth/me", nil, bearer(tok)).wantProblem(t, http.StatusUnauthorized, "token_revoked")
	})
}
