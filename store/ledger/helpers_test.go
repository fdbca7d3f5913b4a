package ledger_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the PostgreSQL driver, "pgx"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/migrate"
	_ "modernc.org/sqlite" // the SQLite driver, "sqlite"

	"marketd/migrations"
	"marketd/store/internal/testdb"
	"marketd/store/ledger"
)

const alice, bob, carol = "alice::1220aa", "bob::1220bb", "carol::1220cc"

// The test's own templates: a token (a non-fungible asset, credited to anyone) and an offer
// that locks a token while it is active. Their tables are made by the test (tokenTables).
const (
	templateToken = "test_tokens"
	templateOffer = "test_offers"
)

func init() {
	ledger.RegisterTemplate(templateToken, ledger.TemplateSpec{Owner: "owner", Asset: "token_id",
		Receive: func(ledger.Contract) ledger.PreapprovalKind { return "" }})
	ledger.RegisterTemplate(templateOffer, ledger.TemplateSpec{Owner: "seller", Offer: true, Escrow: "token_cid", EscrowOf: templateToken})
}

// token is a contract of the test's token template.
type token struct {
	bun.BaseModel `bun:"table:test_tokens"`
	ledger.Lifecycle

	Owner   string `bun:"owner"`
	TokenID string `bun:"token_id"`
}

func (*token) Template() string     { return templateToken }
func (t *token) Controller() string { return t.Owner }
func (t *token) Asset() string      { return t.TokenID }

// offer is a contract of the test's offer template: its seller's token, locked until the
// offer is settled or withdrawn.
type offer struct {
	bun.BaseModel `bun:"table:test_offers"`
	ledger.Lifecycle

	Seller   string `bun:"seller"`
	TokenCID string `bun:"token_cid"`
}

func (*offer) Template() string     { return templateOffer }
func (o *offer) Controller() string { return o.Seller }
func (o *offer) Escrowed() string   { return o.TokenCID }

const tokenTables = `
CREATE TABLE test_tokens (
    cid TEXT PRIMARY KEY, owner TEXT NOT NULL, token_id TEXT NOT NULL,
    created_update TEXT NOT NULL, created_at BIGINT NOT NULL, consumed_update TEXT, consumed_at BIGINT);
CREATE TABLE test_offers (
    cid TEXT PRIMARY KEY, seller TEXT NOT NULL, token_cid TEXT NOT NULL,
    created_update TEXT NOT NULL, created_at BIGINT NOT NULL, consumed_update TEXT, consumed_at BIGINT);
CREATE UNIQUE INDEX test_offers_active ON test_offers (token_cid) WHERE consumed_update IS NULL`

// env is a database with the store's schema, the test's tables and three parties, and the
// embedded ledger committing into it.
type env struct {
	t      *testing.T
	db     *bun.DB
	ledger ledger.Ledger
	clock  *testdb.Clock
	seq    atomic.Int64 // for update ids
}

// newEnv opens a fresh database on b and migrates it.
func newEnv(t *testing.T, b testdb.Backend) *env {
	t.Helper()
	ctx := context.Background()
	dsn := b.DSN(t)
	var db *bun.DB
	if b.Postgres {
		sqldb, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		sqldb.SetMaxOpenConns(8)
		db = bun.NewDB(sqldb, pgdialect.New())
	} else {
		path := strings.TrimPrefix(dsn, "sqlite://")
		sqldb, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate")
		if err != nil {
			t.Fatal(err)
		}
		sqldb.SetMaxOpenConns(1) // one writer, as the store runs SQLite
		db = bun.NewDB(sqldb, sqlitedialect.New())
	}
	t.Cleanup(func() { db.Close() })
	ms := migrate.NewMigrations()
	if err := ms.Discover(migrations.Files); err != nil {
		t.Fatal(err)
	}
	dialect := "sqlite"
	if b.Postgres {
		dialect = "postgres"
	}
	m := migrate.NewMigrator(db, ms, migrate.WithTemplateData(migrations.TypesFor(dialect)), migrate.WithMarkAppliedOnSuccess(true))
	if err := m.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	for _, stmt := range strings.Split(tokenTables, ";") {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	for i, p := range []string{alice, bob, carol} {
		if _, err := db.ExecContext(ctx, "INSERT INTO parties (party_id, hint, public_key, onboarded_at, update_id) VALUES (?, ?, ?, 0, ?)",
			p, p[:strings.IndexByte(p, ':')], []byte{byte(i + 1)}, "onboard-"+p); err != nil {
			t.Fatal(err)
		}
	}
	return &env{t: t, db: db, ledger: ledger.Embedded{}, clock: testdb.NewClock(testdb.Epoch)}
}

// inTx runs fn in one ledger transaction and commits, as the store does: the work, the
// updates appended, the deferred writes sent, COMMIT. An error rolls everything back.
func (e *env) inTx(fn func(ctx context.Context, tx *ledger.Tx) ([]*ledger.Update, error)) error {
	ctx := context.Background()
	return e.db.RunInTx(ctx, nil, func(ctx context.Context, btx bun.Tx) error {
		tx := ledger.Begin(btx, e.db, e.clock.Now())
		us, err := fn(ctx, tx)
		if err != nil {
			return err
		}
		if err := tx.AppendUpdates(ctx, us); err != nil {
			return err
		}
		return tx.Flush(ctx)
	})
}

// update is a new update of kind "test" signed by actAs.
func (e *env) update(actAs string) *ledger.Update {
	return &ledger.Update{UpdateID: fmt.Sprintf("u-%d", e.seq.Add(1)), Kind: "test", ActAs: actAs}
}

// commit commits t signed by actAs in a transaction of its own and returns its update.
func (e *env) commit(actAs string, t *ledger.Transaction) (*ledger.Update, error) {
	u := e.update(actAs)
	err := e.inTx(func(ctx context.Context, tx *ledger.Tx) ([]*ledger.Update, error) {
		return []*ledger.Update{u}, e.ledger.Commit(ctx, tx, u, t)
	})
	return u, err
}

// mustCommit is commit, failing the test on an error.
func (e *env) mustCommit(actAs string, t *ledger.Transaction) *ledger.Update {
	e.t.Helper()
	u, err := e.commit(actAs, t)
	if err != nil {
		e.t.Fatalf("commit by %s: %v", actAs, err)
	}
	return u
}

// tap mints a holding of amount of inst for owner.
func (e *env) tap(owner string, inst ledger.Instrument, amount string) *ledger.Holding {
	e.t.Helper()
	h := holding(owner, inst, amount)
	e.mustCommit(owner, &ledger.Transaction{Create: []ledger.Contract{h}, Mint: true})
	return h
}

func holding(owner string, inst ledger.Instrument, amount string) *ledger.Holding {
	return &ledger.Holding{Owner: owner, Instrument: inst, Amount: ledger.MustAmount(amount)}
}

func ref(c ledger.Contract) ledger.ContractRef {
	return ledger.ContractRef{Template: c.Template(), CID: c.Life().CID}
}

// active tells whether the contract c names is unconsumed in the database.
func (e *env) active(c ledger.Contract) bool {
	e.t.Helper()
	var n int
	err := e.db.NewSelect().Table(c.Template()).ColumnExpr("COUNT(*)").Where("cid = ?", c.Life().CID).Where("consumed_update IS NULL").Scan(context.Background(), &n)
	if err != nil {
		e.t.Fatal(err)
	}
	return n == 1
}

// supply sums every active holding, per instrument.
func (e *env) supply() map[ledger.Instrument]ledger.Amount {
	e.t.Helper()
	var hs []ledger.Holding
	if err := e.db.NewSelect().Model(&hs).Where("consumed_update IS NULL").Scan(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	out := map[ledger.Instrument]ledger.Amount{}
	for _, h := range hs {
		out[h.Instrument] = out[h.Instrument].Add(h.Amount)
	}
	return out
}

// balance sums party's active holdings of inst.
func (e *env) balance(party string, inst ledger.Instrument) ledger.Amount {
	e.t.Helper()
	var hs []ledger.Holding
	if err := e.db.NewSelect().Model(&hs).Where("owner = ?", party).Where("instrument = ?", inst).Where("consumed_update IS NULL").Scan(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	var sum ledger.Amount
	for _, h := range hs {
		sum = sum.Add(h.Amount)
	}
	return sum
}

// codeOf is err's ledger code, or "" when err is not a ledger Error.
func codeOf(err error) ledger.Code {
	var le *ledger.Error
	if errors.As(err, &le) {
		return le.Code
	}
	return ""
}

// wantCode fails the test unless err carries code.
func wantCode(t *testing.T, what string, err error, code ledger.Code) {
	t.Helper()
	if codeOf(err) != code {
		t.Errorf("%s: %v, want %s", what, err, code)
	}
}

// wantRefused fails the test unless err is an error that is not a coded ledger Error: a
// transaction no honest caller builds (the ledger's rules, not a user's mistake).
func wantRefused(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil || codeOf(err) != "" {
		t.Errorf("%s: %v, want a refusal without a code", what, err)
	}
}
