package rest

import (
	"crypto/sha256"
	"encoding/base64"
	"marketd/store/wallet"
	"net/http"

	"marketd/store"
)

// Kinds of prepared transaction each execute endpoint accepts.
var kindOnboard = []string{store.KindOnboard}

// preparedResponse is every prepare's answer: the canonical transaction bytes, their SHA-256,
// the hashing scheme, the party that must sign, when it expires, and a summary to show.
type preparedResponse struct {
	PreparedTransaction     string `json:"preparedTransaction"`
	PreparedTransactionHash string `json:"preparedTransactionHash"`
	HashingScheme           string `json:"hashingScheme"`
	ActAs                   string `json:"actAs"`
	ExpiresAt               int64  `json:"expiresAt"`
	Summary                 any    `json:"summary"`
	PartyID                 string `json:"partyId,omitempty"`
}

func writePrepared(w http.ResponseWriter, p *store.Prepared) {
	writeJSON(w, http.StatusOK, preparedResponse{
		PreparedTransaction:     base64.StdEncoding.EncodeToString(p.Transaction),
		PreparedTransactionHash: base64.StdEncoding.EncodeToString(p.Hash),
		HashingScheme:           wallet.HashingScheme,
		ActAs:                   p.ActAs,
		ExpiresAt:               p.ExpiresAt.Unix(),
		Summary:                 p.Summary,
		PartyID:                 p.PartyID,
	})
}

// executeRequest is every execute's body.
type executeRequest struct {
	PreparedTransactionHash string `json:"preparedTransactionHash"`
	Signature               string `json:"signature"`
}

// execute returns the handler of an execute endpoint for prepared transactions of kinds. On
// an endpoint that needs a token, the token's party must be the transaction's actAs.
func (srv *Server) execute(kinds []string) func(w http.ResponseWriter, r *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		var req executeRequest
		if err := decode(w, r, &req); err != nil {
			return err
		}
		hash, err := decodeBase64("preparedTransactionHash", req.PreparedTransactionHash, sha256.Size)
		if err != nil {
			return err
		}
		if err := required("signature", req.Signature); err != nil {
			return err
		}
		sig, err := decodeSignature(req.Signature)
		if err != nil {
			return err
		}
		x := store.Execution{Kinds: kinds, Hash: hash, Signature: sig}
		if a := authOf(r.Context()); a != nil {
			x.Caller = a.PartyID
		}
		receipt, err := srv.store.Execute(r.Context(), x)
		if err != nil {
			return err
		}
		writeRaw(w, http.StatusOK, receipt)
		return nil
	}
}

type onboardRequest struct {
	PublicKey string `json:"publicKey"`
	Hint      string `json:"hint"`
}

func (srv *Server) onboardPrepare(w http.ResponseWriter, r *http.Request) error {
	var req onboardRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	pub, err := decodeBase64("publicKey", req.PublicKey, 32)
	if err != nil {
		return err
	}
	if err := required("hint", req.Hint); err != nil {
		return err
	}
	p, err := srv.store.PrepareOnboarding(r.Context(), pub, req.Hint)
	if err != nil {
		return err
	}
	writePrepared(w, p)
	return nil
}
