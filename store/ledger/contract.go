package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Transaction is what one committed update does to the ledger.
type Transaction struct {
	Consume    []ContractRef // contracts it archives
	Create     []Contract    // contracts it creates; Commit sets their ids
	Mint       bool          // it may create holdings out of nothing (the dev tap)
	MintAssets bool          // it may create non-fungible assets that never existed (an NFT mint)
	BurnAssets bool          // it may retire the non-fungible assets it consumes for good (a burn)
}

// ContractRef names a contract: its template (table) and id.
type ContractRef struct {
	Template string `json:"template"`
	CID      string `json:"cid"`
}

// Contract is a bun model of one contract template. Every template's table has the columns
// of Lifecycle and is described by its TemplateSpec (RegisterTemplate).
type Contract interface {
	Life() *Lifecycle   // its id and the updates that created and consumed it
	Template() string   // its template: the table it lives in
	Controller() string // the party that controls the contract
}

// ValuedContract holds an amount of an instrument: a holding, or what an offer has locked.
type ValuedContract interface {
	Holds() (Instrument, Amount)
}

// AssetContract carries one non-fungible asset (an NFT), identified across its contracts.
type AssetContract interface {
	Asset() string
}

// EscrowContract is an offer that locks another contract while it is active (a listing
// locks the NFT it sells).
type EscrowContract interface {
	Escrowed() string
}

// PayloadContract is a contract whose template gives the ledger's observers a payload
// (TemplateSpec.Payload): what they read of it beyond the ledger's own rules.
type PayloadContract interface {
	Payload() Payload
}

// Payload is what a template's observers read of a contract the ledger creates or archives: a
// key and two figures, whose meaning the template's owner gives (for an LP quote its pool,
// price and remaining size). The ledger only carries it.
type Payload struct {
	Key     string
	Figures [2]Amount
}

// Lifecycle is the part every contract shares: its id, and the updates that created and
// consumed it.
type Lifecycle struct {
	CID            string     `bun:"cid,pk"`
	CreatedUpdate  string     `bun:"created_update"`
	CreatedAt      Timestamp  `bun:"created_at"`
	ConsumedUpdate *string    `bun:"consumed_update"`
	ConsumedAt     *Timestamp `bun:"consumed_at"`
}

func (l *Lifecycle) Life() *Lifecycle { return l }

// Active tells whether no update has consumed the contract.
func (l *Lifecycle) Active() bool { return l.ConsumedUpdate == nil }

// ContractID derives the id of the n-th contract an update creates, so a caller may name the
// contracts a transaction creates before it commits.
func ContractID(updateID string, n int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%d", updateID, n))
	return "00" + hex.EncodeToString(sum[:])
}

// TemplateSpec is what the ledger knows of one contract template, by its table's columns.
type TemplateSpec struct {
	Owner    string // the column naming the party that controls the contract
	Valued   bool   // columns instrument and amount: what the contract holds
	Offer    bool   // a settlement may consume it; its owner thereby consents to what the settlement credits it
	Escrow   string // the column of an offer naming the contract it locks while active
	EscrowOf string // the template of that contract
	Asset    string // the column naming the non-fungible asset the contract carries
	// Payload names the columns of the key and the two figures the ledger's observers read of
	// the contract as it is archived ("" for none: an empty key, a zero figure); the
	// contract's Payload method answers the same of a contract in memory.
	Payload [3]string
	// Folds: a settlement of its owner's offer may consume it if it creates the same template
	// for the same owner with at least as much: an LP's running fee, which each fill of the
	// LP's quote consumes and creates again with the fill's fee added.
	Folds bool
	// Receive says what a credit of c to a party that neither signs nor consents needs: a
	// preapproval of that kind, or nothing (""); nil means such a credit is never made.
	Receive func(c Contract) PreapprovalKind
}

// templates describes every contract template, by table name: the ledger's own here, the
// others as their owner registers them (RegisterTemplate).
var templates = map[string]TemplateSpec{
	TemplateHolding: {Owner: "owner", Valued: true, Receive: func(c Contract) PreapprovalKind {
		if c.(*Holding).Instrument == USDCx {
			return PreapprovalUSDCx
		}
		return ""
	}},
	TemplatePreapproval: {Owner: "party_id"},
}

// RegisterTemplate makes a contract template known to the ledger; the package that defines a
// template's contracts registers it from its init. A name registered twice panics: it is a
// programming error, found at start.
func RegisterTemplate(name string, spec TemplateSpec) {
	if _, ok := templates[name]; ok {
		panic("ledger: template " + name + " registered twice")
	}
	templates[name] = spec
}

// TemplateOf returns what the ledger knows of a template, and whether it knows it.
func TemplateOf(name string) (TemplateSpec, bool) {
	spec, ok := templates[name]
	return spec, ok
}

// Archived is what the ledger reads of a contract as it archives it.
type Archived struct {
	Template   string
	CID        string
	Owner      string
	Instrument Instrument
	Amount     Amount
	Escrow     string
	Asset      string
	Payload    Payload // what its template's observers read of it
	batch      int     // the index of the consuming transaction in its batch
}

// Observer sees, inside the transaction, what a batch of ledger transactions does as the
// embedded ledger commits it: consumed[i] is what ts[i] archives, ts[i].Create what it
// creates. An error fails the whole batch. A part of the service keeps state derived from
// contracts this way (a swap pool's running figures).
type Observer func(ctx context.Context, tx *Tx, consumed [][]Archived, ts []*Transaction) error

// observers are the observers of every commit, in the order they were registered.
var observers []Observer

// Observe registers o to see every commit; a package registers from its init.
func Observe(o Observer) { observers = append(observers, o) }

// noun is a template's name for messages: "holding", "preapproval".
func noun(template string) string { return strings.TrimSuffix(template, "s") }
