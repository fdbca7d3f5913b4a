package ledger

import "github.com/uptrace/bun"

// TemplateHolding is the table of holdings.
const TemplateHolding = "holdings"

// Holding is a UTXO-style contract: an exact amount of one instrument owned by one party.
type Holding struct {
	bun.BaseModel `bun:"table:holdings"`
	Lifecycle

	Owner      string     `bun:"owner"`
	Instrument Instrument `bun:"instrument"`
	Amount     Amount     `bun:"amount"`
}

func (*Holding) Template() string              { return TemplateHolding }
func (h *Holding) Controller() string          { return h.Owner }
func (h *Holding) Holds() (Instrument, Amount) { return h.Instrument, h.Amount }
