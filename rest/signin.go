package rest

import (
	"net/http"

	"marketd/store"
)

type nonceRequest struct {
	PartyID string `json:"partyId"`
}

type nonceResponse struct {
	Message string `json:"message"`
	Nonce   string `json:"nonce"`
}

func (srv *Server) nonce(w http.ResponseWriter, r *http.Request) error {
	var req nonceRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if err := required("partyId", req.PartyID); err != nil {
		return err
	}
	c, err := srv.store.IssueChallenge(r.Context(), req.PartyID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, nonceResponse{Message: c.Text(), Nonce: c.Nonce})
	return nil
}

type verifyRequest struct {
	PartyID   string `json:"partyId"`
	Signature string `json:"signature"`
	Nonce     string `json:"nonce"`
}

type tokenResponse struct {
	Token     string `json:"token"`
	ExpiresAt int64  `json:"expiresAt"`
}

func (srv *Server) verify(w http.ResponseWriter, r *http.Request) error {
	var req verifyRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if err := required("nonce", req.Nonce); err != nil {
		return err
	}
	sig, err := decodeSignature(req.Signature)
	if err != nil {
		// The first verify that names a live nonce spends it, whatever else is wrong with it;
		// one this service never issued, or an expired one, is nonce_invalid.
		if err := srv.store.SpendNonce(r.Context(), req.PartyID, req.Nonce); err != nil {
			return err
		}
		return err
	}
	t, err := srv.store.SignIn(r.Context(), store.SignIn{
		PartyID: req.PartyID, Nonce: req.Nonce, Signature: sig,
		UserAgent: r.UserAgent(), ClientAddr: srv.clientAddr(r),
	})
	if err != nil {
		return err
	}
	srv.metrics.SignedIn()
	srv.setSessionCookie(w, t)
	writeJSON(w, http.StatusOK, tokenResponse{Token: t.Token, ExpiresAt: t.ExpiresAt.Unix()})
	return nil
}

type meResponse struct {
	PartyID   string `json:"partyId"`
	ExpiresAt int64  `json:"expiresAt"`
}

func (srv *Server) me(w http.ResponseWriter, r *http.Request) error {
	a := authOf(r.Context())
	writeJSON(w, http.StatusOK, meResponse{PartyID: a.PartyID, ExpiresAt: a.ExpiresAt.Unix()})
	return nil
}

func (srv *Server) logout(w http.ResponseWriter, r *http.Request) error {
	// Logout takes no fields, but its body is read like any other: one naming another party
	// is refused with party_mismatch before the session ends.
	if err := decode(w, r, &struct{}{}); err != nil {
		return err
	}
	if err := srv.store.Logout(r.Context(), authOf(r.Context())); err != nil {
		return err
	}
	srv.metrics.Revoked()
	srv.clearSessionCookie(w)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// sessionView is one of the party's sign-in sessions.
type sessionView struct {
	SessionID      string `json:"sessionId"`
	CreatedAt      int64  `json:"createdAt"`
	UserAgent      string `json:"userAgent"`
	ClientAddr     string `json:"clientAddr"`
	TokenIssuedAt  int64  `json:"tokenIssuedAt"`
	TokenExpiresAt int64  `json:"tokenExpiresAt"`
	Rotations      int    `json:"rotations"`
	Revoked        bool   `json:"revoked"`
	Current        bool   `json:"current"`
}

func (srv *Server) sessions(w http.ResponseWriter, r *http.Request) error {
	pr, err := pageRequest(r)
	if err != nil {
		return err
	}
	a := authOf(r.Context())
	page, err := srv.store.Sessions(r.Context(), a.PartyID, pr)
	if err != nil {
		return err
	}
	writeList(w, page, func(s store.Session) sessionView {
		return sessionView{
			SessionID: s.SID, CreatedAt: s.CreatedAt.Unix(), UserAgent: s.UserAgent, ClientAddr: s.ClientAddr,
			TokenIssuedAt: s.TokenIssuedAt.Unix(), TokenExpiresAt: s.TokenExpiresAt.Unix(),
			Rotations: s.Rotations, Revoked: s.RevokedAt != nil, Current: s.SID == a.SessionID,
		}
	})
	return nil
}
