package store

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"marketd/store/wallet"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/attribute"
)

// Kinds of ledger update. Each prepared kind is an entry of actions (registerKind).
const (
	KindOnboard          = wallet.KindOnboard
	KindTap              = wallet.KindTap
	KindCCTransfer       = wallet.KindCCTransfer
	KindNFTPreapproval   = wallet.KindNFTPreapproval
	KindUSDCxPreapproval = wallet.KindUSDCxPreapproval
	KindPreapprovalRenew = wallet.KindPreapprovalRenew // prepared, or committed by the deprecated unsigned route
)

// actions maps every prepared kind to how its execute applies it. Each kind of write is one
// entry, which its part registers (registerKind): the ledger's own kinds here, the NFT
// market's in nft_trade.go, swaps' in swap.go.
var actions = map[string]action{}

// The ledger's own kinds: onboarding, the dev tap, CC transfers and preapprovals.
func init() {
	registerKind(KindOnboard, applyOnboard)
	registerKind(KindTap, applyTap)
	registerKind(KindCCTransfer, applyTransfer)
	registerKind(KindNFTPreapproval, applyPreapproval)
	registerKind(KindUSDCxPreapproval, applyPreapproval)
	registerKind(KindPreapprovalRenew, applyRenewal)
}

// registerKind makes kind a prepared kind whose execute decodes its effects as E and applies
// them with apply. DecodePrepared reads the kind's effects as wallet lists them
// (wallet.NewEffects): a kind wallet does not know, or whose effects there are not an E,
// panics here, at init, so what a wallet reads and what execute applies cannot drift.
func registerKind[E any](kind string, apply func(ctx context.Context, tx *Tx, u *Update, e *E) (any, error)) {
	registerAction(kind, apply, nil)
}

// registerBatchedKind is registerKind for a kind whose executes are batched per row: key
// names the row an execute of e locks, every other transaction on it waiting for it (a
// collection, a pool), and the way its batch is applied (ledger_execute_batch.go).
func registerBatchedKind[E any](kind string, apply func(ctx context.Context, tx *Tx, u *Update, e *E) (any, error), key func(e *E) batchKey) {
	registerAction(kind, apply, key)
}

func registerAction[E any](kind string, apply func(ctx context.Context, tx *Tx, u *Update, e *E) (any, error), key func(e *E) batchKey) {
	if _, ok := actions[kind]; ok {
		panic("prepared kind " + kind + " registered twice")
	}
	if err := walletDecodes[E](kind); err != nil {
		panic(err)
	}
	actions[kind] = applyAs(apply, key)
}

// walletDecodes refuses a kind wallet does not decode, or decodes into another type than E.
func walletDecodes[E any](kind string) error {
	switch e, ok := wallet.NewEffects(kind); {
	case !ok:
		return fmt.Errorf("prepared kind %s is not one wallet decodes (wallet.NewEffects)", kind)
	case reflect.TypeOf(e) != reflect.TypeFor[*E]():
		return fmt.Errorf("prepared kind %s: execute applies %v, wallet decodes %T", kind, reflect.TypeFor[*E](), e)
	}
	return nil
}

// action is how an execute applies a prepared kind.
type action struct {
	// apply applies the transaction's effects inside the execute transaction and returns
	// what the receipt adds to updateId and status.
	apply func(ctx context.Context, tx *Tx, u *Update, effects json.RawMessage) (any, error)
	// key names the row the ledger serializes the transaction on, if any (ledger_execute_batch.go).
	key func(effects json.RawMessage) (batchKey, error)
	// batched says the kind's effects may name one (registerBatchedKind).
	batched bool
}

// applyAs turns a typed apply function into an action; a kind with a key (one that locks one
// row every other transaction on it waits for: a collection, a pool) has its executes applied
// in batches per row.
func applyAs[E any](apply func(ctx context.Context, tx *Tx, u *Update, e *E) (any, error), batchKeyOf func(e *E) batchKey) action {
	decode := decodeEffects[E]
	return action{
		batched: batchKeyOf != nil,
		apply: func(ctx context.Context, tx *Tx, u *Update, raw json.RawMessage) (any, error) {
			e, err := decode(raw)
			if err != nil {
				return nil, err
			}
			return apply(ctx, tx, u, e)
		},
		key: func(raw json.RawMessage) (batchKey, error) {
			e, err := decode(raw)
			if err != nil {
				return batchKey{}, err
			}
			if batchKeyOf != nil {
				return batchKeyOf(e), nil
			}
			return batchKey{}, nil
		},
	}
}

// decodeEffects reads a prepared transaction's effects as E.
func decodeEffects[E any](raw json.RawMessage) (*E, error) {
	e := new(E)
	if err := json.Unmarshal(raw, e); err != nil {
		return nil, fmt.Errorf("prepared effects: %w", err)
	}
	return e, nil
}

// PreparedTx is a write shown to a party to sign: the canonical bytes of its exact effects,
// their hash, the key that must sign them and, once executed, the receipt.
type PreparedTx struct {
	bun.BaseModel `bun:"table:prepared_txs"`

	Hash       []byte     `bun:"hash,pk"`
	Kind       string     `bun:"kind"`
	ActAs      string     `bun:"act_as"`
	SignerKey  []byte     `bun:"signer_key"`
	Body       []byte     `bun:"body"`
	PreparedAt Timestamp  `bun:"prepared_at"`
	ExpiresAt  Timestamp  `bun:"expires_at"`
	UpdateID   *string    `bun:"update_id"`
	Result     []byte     `bun:"result"`
	ExecutedAt *Timestamp `bun:"executed_at"`
	Signature  []byte     `bun:"signature"` // the party's, once executed (the transparency log's entry is made of it)
}

// envelope is the canonical encoding of a prepared transaction (wallet.Envelope): compact
// JSON with the fields in its order.
type envelope = wallet.Envelope

// Prepared is what a prepare answers: the bytes to sign, their hash, and a summary of the
// same effects for the wallet prompt.
type Prepared struct {
	Transaction []byte
	Hash        []byte
	ActAs       string
	ExpiresAt   time.Time
	Summary     any
	PartyID     string // set by onboarding: the party the key becomes
}

// preparedInput records a contract a prepared transaction would consume.
type preparedInput struct {
	bun.BaseModel `bun:"table:prepared_inputs"`

	Hash      []byte    `bun:"hash,pk"`
	CID       string    `bun:"cid,pk"`
	ExpiresAt Timestamp `bun:"expires_at"` // the prepared transaction's
}

// prepare records a transaction of kind that actAs must sign with signerKey; claims are the
// contracts it would consume. It reserves nothing: two prepares may name the same inputs, and
// the later execute finds them consumed.
func (s *Store) prepare(ctx context.Context, kind, actAs string, signerKey []byte, effects, summary any, claims []string) (_ *Prepared, err error) {
	ctx, span := startSpan(ctx, "store.prepare", attribute.String("marketd.kind", kind), attribute.Int("marketd.claims", len(claims)))
	defer func() { endSpan(span, err) }()
	raw, err := json.Marshal(effects)
	if err != nil {
		return nil, err
	}
	var nonce [16]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, err
	}
	// Instants on the wire are whole seconds; the lifetime runs from the one the body states.
	preparedAt := s.now().Truncate(time.Second)
	expiresAt := preparedAt.Add(s.cfg.PreparedTTL)
	body, err := json.Marshal(envelope{
		Scheme:     wallet.HashingScheme,
		Network:    s.cfg.Network,
		Kind:       kind,
		ActAs:      actAs,
		Nonce:      hex.EncodeToString(nonce[:]),
		PreparedAt: preparedAt.Unix(),
		ExpiresAt:  expiresAt.Unix(),
		Effects:    raw,
	})
	if err != nil {
		return nil, err
	}
	hash := wallet.PreparedHash(body)
	p := &PreparedTx{
		Hash: hash, Kind: kind, ActAs: actAs, SignerKey: signerKey, Body: body,
		PreparedAt: At(preparedAt), ExpiresAt: At(expiresAt),
	}
	writes := []writeQuery{s.wdb.NewInsert().Model(p)}
	if len(claims) > 0 {
		inputs := make([]preparedInput, len(claims))
		for i, cid := range claims {
			inputs[i] = preparedInput{Hash: hash, CID: cid, ExpiresAt: At(expiresAt)}
		}
		writes = append(writes, s.wdb.NewInsert().Model(&inputs))
	}
	if err := s.writeAll(ctx, writes...); err != nil {
		return nil, err
	}
	if actions[kind].batched {
		s.recent.remember(p)
	}
	return &Prepared{Transaction: body, Hash: hash, ActAs: actAs, ExpiresAt: expiresAt, Summary: summary}, nil
}

// prepareAs prepares a transaction that the onboarded party actAs signs with its own key.
func (s *Store) prepareAs(ctx context.Context, kind, actAs string, effects, summary any, claims []string) (*Prepared, error) {
	p, err := s.Party(ctx, actAs)
	if err != nil {
		return nil, err
	}
	return s.prepare(ctx, kind, actAs, p.PublicKey, effects, summary, claims)
}

// Execution asks to apply a prepared transaction.
type Execution struct {
	Kinds     []string // the kinds the endpoint executes; any other is prepared_not_found
	Hash      []byte
	Signature []byte
	Caller    string // the token's party; empty on an endpoint that needs no token
}

// Receipt is the JSON object an execute answers: updateId, status and what the transaction
// created. Every replay of the execute answers the same bytes.
type Receipt = json.RawMessage

// Execute verifies the signature over the prepared hash and applies the transaction's
// effects in one database transaction, with the executes that wait for the same row
// (ledger_execute_batch.go). Executing an executed transaction again returns its first receipt and
// applies nothing.
func (s *Store) Execute(ctx context.Context, x Execution) (_ Receipt, err error) {
	ctx, span := startSpan(ctx, "store.execute")
	defer func() { endSpan(span, err) }()
	if len(x.Hash) != sha256.Size {
		return nil, Errorf(CodeInvalidRequest, "preparedTransactionHash must be %d bytes, got %d", sha256.Size, len(x.Hash))
	}
	if s.dialect == Postgres && !slices.ContainsFunc(x.Kinds, func(k string) bool { return actions[k].batched }) {
		// Nothing to batch: the row is read and checked under its lock, in the one transaction.
		return s.executeAlone(ctx, x, true)
	}
	// Checked outside the write transaction, so the signature check holds up no writer (on
	// SQLite, one at a time) and the execute finds its batch; the write reads the row again
	// under its lock (a concurrent execute of it may have won).
	p, err := s.preparedRow(ctx, x)
	if err != nil {
		return nil, err
	}
	if err := x.check(p); err != nil {
		return nil, err
	}
	span.SetAttributes(attribute.String("marketd.kind", p.Kind))
	if p.Result != nil {
		return p.Result, nil
	}
	key, err := p.batchKey()
	if err != nil {
		return nil, err
	}
	if key.row != "" {
		receipt, err := s.executeInBatch(ctx, key, x, p)
		if err == nil {
			s.recent.forget(x.Hash) // executed: a replay reads its receipt
		}
		return receipt, err
	}
	return s.executeAlone(ctx, x, false)
}

// preparedRow reads the prepared transaction x names: from memory when this store prepared
// it lately, for the parts that never change (its receipt is read under its lock).
func (s *Store) preparedRow(ctx context.Context, x Execution) (*PreparedTx, error) {
	if p := s.recent.find(x.Hash); p != nil {
		return p, nil
	}
	p := new(PreparedTx)
	err := s.db.NewSelect().Model(p).Where("hash = ?", x.Hash).Scan(ctx)
	if isNoRows(err) {
		return nil, x.notFound()
	}
	if err != nil {
		return nil, err
	}
	return p, storedReceipts(ctx, s.db, p)
}

// recentPrepares remembers the last recentPrepared batched transactions the store prepared,
// as prepared (no receipt), so that their executes find their batch without a read of their
// own while the crowd that prepared them waits for connections.
type recentPrepares struct {
	mu     sync.Mutex
	byHash map[string]*PreparedTx
	ring   [][]byte // their hashes, the oldest at next once full
	next   int
}

const recentPrepared = 4096

func (r *recentPrepares) remember(p *PreparedTx) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byHash == nil {
		r.byHash = make(map[string]*PreparedTx, recentPrepared)
	}
	if len(r.ring) < recentPrepared {
		r.ring = append(r.ring, p.Hash)
	} else {
		delete(r.byHash, string(r.ring[r.next]))
		r.ring[r.next] = p.Hash
		r.next = (r.next + 1) % recentPrepared
	}
	r.byHash[string(p.Hash)] = p
}

// forget forgets the transaction hash names; its place in the ring goes with the next.
func (r *recentPrepares) forget(hash []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byHash, string(hash))
}

// find returns a copy of the remembered transaction hash names, or nil.
func (r *recentPrepares) find(hash []byte) *PreparedTx {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.byHash[string(hash)]
	if !ok {
		return nil
	}
	cp := *p
	return &cp
}

// executeAlone applies x in a database transaction of its own; check says x is not checked yet.
func (s *Store) executeAlone(ctx context.Context, x Execution, check bool) (Receipt, error) {
	var receipt Receipt
	err := s.inTx(ctx, func(tx *Tx) error {
		var err error
		receipt, err = tx.execute(ctx, x, check, &receipt)
		return err
	})
	return receipt, staleOnCollision(err)
}

// staleOnCollision maps a unique constraint refusing a contract the transaction creates: it
// collides with one a concurrent transaction created since the prepare (a party's one
// preapproval of a kind), so the prepared view is out of date.
func staleOnCollision(err error) error {
	if isUniqueViolation(err) {
		return &Error{Code: CodeStale, Message: "the ledger changed since this transaction was prepared; prepare it again", Err: err}
	}
	return err
}

func (x Execution) notFound() error {
	return Errorf(CodePreparedNotFound, "no prepared transaction %s for this endpoint", base64.StdEncoding.EncodeToString(x.Hash))
}

// check refuses an execute of p that the caller may not make.
func (x Execution) check(p *PreparedTx) error {
	if !slices.Contains(x.Kinds, p.Kind) {
		return x.notFound()
	}
	if x.Caller != "" && x.Caller != p.ActAs {
		return Errorf(CodePartyMismatch, "the transaction acts as %s, the token is for %s", p.ActAs, x.Caller)
	}
	if !ed25519.Verify(p.SignerKey, p.Hash, x.Signature) {
		return Errorf(CodeInvalidSignature, "the signature does not verify against the key of %s over the 32 hash bytes", p.ActAs)
	}
	return nil
}

// effects returns the prepared transaction's effects as its body states them.
func (p *PreparedTx) effects() (json.RawMessage, error) {
	var env envelope
	if err := json.Unmarshal(p.Body, &env); err != nil {
		return nil, fmt.Errorf("prepared body: %w", err)
	}
	return env.Effects, nil
}

// batchKey names the row the ledger serializes p on; the zero key when none.
func (p *PreparedTx) batchKey() (batchKey, error) {
	effects, err := p.effects()
	if err != nil {
		return batchKey{}, err
	}
	return actions[p.Kind].key(effects)
}

// execute applies the prepared transaction x names inside tx, reading its row under the lock;
// check says x is not checked (Execution.check) yet. The commit completes the receipt in
// *receipt with the update's log index.
func (tx *Tx) execute(ctx context.Context, x Execution, check bool, receipt *Receipt) (Receipt, error) {
	p := new(PreparedTx)
	err := tx.ForUpdate(tx.NewSelect().Model(p).Where("hash = ?", x.Hash)).Scan(ctx)
	if isNoRows(err) {
		return nil, x.notFound()
	}
	if err == nil {
		err = storedReceipts(ctx, tx, p)
	}
	if err != nil {
		return nil, err
	}
	if check {
		if err := x.check(p); err != nil {
			return nil, err
		}
	}
	return tx.executeLocked(ctx, p, x.Signature, receipt)
}

// due answers an execute of p, read under its row lock, that applies nothing: p's receipt
// when it was executed before, an error when it expired. Otherwise done is false.
func (tx *Tx) due(p *PreparedTx) (receipt Receipt, done bool, err error) {
	if p.Result != nil {
		return p.Result, true, nil
	}
	if !tx.Now().Before(p.ExpiresAt.Time) {
		return nil, true, Errorf(CodePreparedExpired, "the prepared transaction expired at %s; prepare it again", p.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return nil, false, nil
}

// executeLocked applies p, read under its row lock and checked against signature. The
// receipt it returns lacks the log index, which the commit writes into *final.
func (tx *Tx) executeLocked(ctx context.Context, p *PreparedTx, signature []byte, final *Receipt) (Receipt, error) {
	if receipt, done, err := tx.due(p); done {
		return receipt, err
	}
	effects, err := p.effects()
	if err != nil {
		return nil, err
	}
	var receipt Receipt
	err = tx.record(ctx, p.Kind, p.ActAs, func(u *Update) error {
		result, err := actions[p.Kind].apply(ctx, tx, u, effects)
		if err != nil {
			return err
		}
		receipt, err = tx.executed(p, u, result, signature, final)
		return err
	})
	return receipt, err
}

// executed marks p executed as u, signed with signature, and returns its receipt without the
// log index. The commit writes the receipt with it into *final and, where the index is known
// before the COMMIT (SQLite), on p (receiptLogged); every replay answers with p's receipt,
// completed by storedReceipts where it lacks the index.
func (tx *Tx) executed(p *PreparedTx, u *Update, result any, signature []byte, final *Receipt) (Receipt, error) {
	receipt, err := committedReceipt(u.UpdateID, result)
	if err != nil {
		return nil, err
	}
	p.UpdateID, p.Result, p.ExecutedAt, p.Signature = &u.UpdateID, receipt, AtPtr(tx.Now()), signature
	u.Annex = updateAnnex{signed: &partySigned{p: p, receipt: final}}
	u.Prepared = p.Hash // the update's log entry is made of p, with the signature (logEntry)
	return receipt, nil
}

// commit runs fn as one ledger update of kind acting as actAs, in its own transaction: the
// path of writes that need no prepared transaction (the unsigned preapproval renewal).
func (s *Store) commit(ctx context.Context, kind, actAs string, fn func(tx *Tx, u *Update) error) error {
	return s.inTx(ctx, func(tx *Tx) error {
		return tx.record(ctx, kind, actAs, func(u *Update) error { return fn(tx, u) })
	})
}

// record runs fn as a new update and appends the update to the log last, so the log's order
// is the commit order.
func (tx *Tx) record(ctx context.Context, kind, actAs string, fn func(u *Update) error) error {
	u := &Update{UpdateID: newUpdateID(), Kind: kind, ActAs: actAs}
	if err := fn(u); err != nil {
		return err
	}
	tx.recorded = kind
	return tx.appendUpdate(ctx, u)
}

// committedReceipt is {"updateId", "status": "committed"} followed by the fields of result;
// the log index, once the append knows it, goes right after the status (receiptWithIndex).
func committedReceipt(updateID string, result any) (Receipt, error) {
	head, err := json.Marshal(struct {
		UpdateID string `json:"updateId"`
		Status   string `json:"status"`
	}{updateID, "committed"})
	if err != nil {
		return nil, err
	}
	if result == nil {
		return head, nil
	}
	tail, err := json.Marshal(result)
	if err != nil {
		return nil, err
	}
	tail = bytes.TrimSpace(tail)
	if len(tail) < 2 || tail[0] != '{' {
		return nil, fmt.Errorf("receipt fields must be a JSON object, got %s", tail)
	}
	if len(tail) == 2 {
		return head, nil
	}
	return append(append(head[:len(head)-1], ','), tail[1:]...), nil
}

// newUpdateID returns a fresh update id: 32 lowercase hex digits.
func newUpdateID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b[:])
}

// State is where a prepared transaction stands.
func (p *PreparedTx) State(now time.Time) string {
	switch {
	case p.UpdateID != nil:
		return "executed"
	case !now.Before(p.ExpiresAt.Time):
		return "expired"
	}
	return "pending"
}
