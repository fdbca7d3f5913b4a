// Package store is the domain layer of marketd: every operation the REST API, the GraphQL API
// and the admin console offer is one method here, over bun models on PostgreSQL or the
// embedded SQLite. Nothing here knows about HTTP, GraphQL or HTML; the front doors parse,
// authorize, call one method and render what it returns.
//
// The rules it keeps, whichever front door calls it:
//
//   - Every write is prepare, then execute. Prepare reserves nothing and returns the canonical
//     bytes of the exact effects (inputs consumed, outputs created, amounts, fees), which the
//     signer's Ed25519 key signs by their SHA-256. Execute checks that signature, applies every
//     effect in one database transaction or none, and is idempotent: the same prepared
//     transaction executed again answers its first receipt and applies nothing twice. An input
//     consumed since the prepare makes it stale, changing nothing.
//   - The embedded ledger (its core is the package marketd/store/ledger, named here in
//     ledger.go) holds value as UTXO-style holdings of exact decimals, CC with 10 decimals and
//     USDCx with 6, never floats; it conserves every instrument (only the dev tap mints), lets
//     only a contract's owner spend it, and credits USDCx or an NFT to a party other than the
//     signer only under that party's active receive-preapproval. A party's own signed offer (a
//     listing, an LP quote) is its consent to receive what the offer pays it. Every committed
//     transaction appends an update to the log, in commit order.
//   - Errors carry a Code (errors.go), each with one meaning, which the front doors map to a
//     status in one place each.
//   - Lists are keyset pages (page.go): opaque signed cursors, 1 to 100 items, 20 by default,
//     a deep page costing what the first costs, stable while rows are inserted.
//   - Time comes from the store's Clock; instants are kept as Unix microseconds and shown as Unix
//     seconds.
//   - Sign-in (auth_signin.go, auth_session.go, auth_token.go) issues single-use challenges and
//     EdDSA tokens whose sessions rotate and end on every instance sharing the store.
//
// Read models (the NFT index, the page caches, kept GraphQL answers) are derived state, rebuilt
// from the tables and kept current from the update log, with the SQL path as the reference they
// must equal. An instance drops them, and everything else it keeps of the store, when the
// store's history moves under it (a PostgreSQL failover: ledger_failover.go).
//
// A file's name says which part it belongs to: ledger_ (holdings, contracts, the update log,
// prepare and execute), auth_ (sign-in, sessions, tokens, keys), nft_ (collections and the NFT
// market), swap_ (pools, quotes, intents), admin_ (the console's data); store_ is the store's
// own machinery, page_ the pages and their caches (README.md in this directory has the map).
package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite" // the embedded store's driver, pure Go

	"marketd/store/internal/pagecache"
	"marketd/store/ledger"
)

// Config is everything the domain needs to know about its deployment.
type Config struct {
	DB             string        // postgres://... or sqlite://PATH or sqlite://:memory:
	PublicURL      string        // the challenge's URI line; its authority is the domain
	Network        string        // the challenge's Network line
	Statement      string        // the challenge's optional statement
	ChallengeTTL   time.Duration // how long a sign-in challenge can be answered
	TokenTTL       time.Duration // a token's lifetime from its own issue
	RotateAfter    time.Duration // token age after which a cookie-borne token is replaced
	RotateGrace    time.Duration // how long a superseded token is still accepted
	SessionMax     time.Duration // a session's absolute lifetime from its sign-in, rotations included; 0 = the default, at most MaxSessionMax
	PreparedTTL    time.Duration // how long a prepared transaction can be executed
	PreapprovalTTL time.Duration // how long a receive-preapproval lasts, from creation or renewal
	MarketFeeBps   int           // the marketplace fee on NFT sales, basis points of the price
	Clock          Clock         // nil means the system clock
	Logger         *slog.Logger  // nil means slog.Default()
	MaxConns       int           // PostgreSQL pool size, or SQLite reader pool size; 0 picks a default
	// AdmissionWait is the admission bound (ledger_admission.go): a request queues for a connection
	// of a busy pool while the pool, at its measured pace, serves the queue ahead of it within
	// the bound and the queue moves; otherwise it is refused 503 unavailable. 0 means
	// DefaultAdmissionWait, below 0 no bound.
	AdmissionWait time.Duration

	// PageCacheTTL bounds how long a page of collections or of a collection's NFTs is served
	// from memory. A write through this store, or through another instance on the same
	// PostgreSQL (its notification arrives within milliseconds), clears the pages it changes
	// at once, and a page ends when a listing on it expires; the bound covers a notification
	// that never came. 0 means a second; below 0 turns the page caches off.
	PageCacheTTL time.Duration

	// KEK is the key-encryption key (KEKSize bytes) the service's secrets are sealed under in
	// the store (auth_seal.go); it is never written to the database. nil means a random key
	// for this process alone, fit only for a store that ends with it (tests, sqlite://:memory:):
	// marketd reads it from MARKETD_KEK_FILE.
	KEK []byte

	// NFTIndexOff serves every page of NFTs by SQL instead of from the in-memory NFT index
	// (nft_index.go): the reference path, for comparisons. The index is on by default once
	// StartNFTIndex is called.
	NFTIndexOff bool
}

// MaxSessionMax bounds SessionMax: no sign-in lasts longer than a day, however it rotates.
const MaxSessionMax = 24 * time.Hour

// DefaultConfig returns the documented defaults: the embedded store in ./data, challenges of
// ten minutes, tokens of four hours rotated after thirty minutes with five of grace within
// sessions of at most a day, prepared
// transactions of ten minutes, preapprovals of thirty days, a marketplace fee of 250 bps.
func DefaultConfig() Config {
	return Config{
		DB:             "sqlite://./data/marketd.db",
		PublicURL:      "http://localhost:8080",
		Network:        "devnet",
		ChallengeTTL:   10 * time.Minute,
		TokenTTL:       4 * time.Hour,
		RotateAfter:    30 * time.Minute,
		RotateGrace:    5 * time.Minute,
		SessionMax:     MaxSessionMax,
		PreparedTTL:    10 * time.Minute,
		PreapprovalTTL: 30 * 24 * time.Hour,
		MarketFeeBps:   250,
	}
}

// Store is the domain layer. All methods are safe for concurrent use.
type Store struct {
	cfg      Config
	dialect  Dialect
	db       *bun.DB // reads
	wdb      *bun.DB // writes; on SQLite a single connection so writers queue in Go, not in SQLite's busy loop
	pool     *pgxpool.Pool
	clock    Clock
	log      *slog.Logger
	domain   string // the authority of PublicURL
	audience string // the origin of PublicURL: the aud of every token (auth_token.go)

	keys   keyring                   // loaded on first use, after migrations
	kek    atomic.Pointer[kekCipher] // seals and opens them at rest (auth_seal.go)
	ledger Ledger

	parties    sync.Map       // party id -> *Party: parties are immutable once onboarded
	recent     recentPrepares // the batched transactions prepared lately (ledger_prepared.go)
	partyCount atomic.Int64
	operator   atomic.Pointer[string] // the operator party's id, once known

	stopListener context.CancelFunc // the PostgreSQL listener (store_notify.go)
	listenerDone chan struct{}
	origin       string // this instance's name in its notifications (store_notify.go)
	schema       string // the PostgreSQL schema the store lives in, also named in them

	sessions *sessionCache
	tokens   *tokenCache

	collectionPages *pagecache.Cache[collectionPageKey, Page[Collection]]
	nftPages        *pagecache.Cache[nftPageKey, Page[NFTView]]
	collectionIDs   sync.Map // id or slug -> collectionIdentity
	reads           sync.Map // *preparedRead -> *readStatement (store_select.go)
	readsMu         sync.Mutex
	nftIndex        *nftIndex
	offerBook       *offerBook // each NFT's best offer, kept by the NFT index's build and follower

	commitObserver atomic.Pointer[CommitObserver]  // store_observe.go
	hooks          atomic.Pointer[[]bun.QueryHook] // AddQueryHook
	batches        sync.Map                        // batchKey -> *executeQueue (ledger_execute_batch.go)
	sheds          atomic.Int64                    // requests refused for a busy pool (ledger_admission.go)
	poolQueue      *poolQueue                      // PostgreSQL's queue for the pool's connections
	writer         *writerSlot                     // SQLite's single writer and its queue

	refusals refusalTally // rate-limit refusals not yet written (admin_refusal.go)

	history historySeen // where this instance last found the store's history (ledger_failover.go)

	integration logIntegration // the transparency log's integration, on PostgreSQL (ledger_log_integrate.go)
	fullTiles   tileCache      // the transparency log's full tiles, which never change (ledger_log_serve.go)
	logEdge     logEdge        // the log's head as this process's last append committed it (ledger_log.go)
	logWrites   logStatements  // the log's writes, prepared once (SQLite)
	commitLog   updateLog      // where commits log their updates: the transparency log (ledger_log.go)
	writeGroups writeGroups    // writeAll's writes waiting for the writer (SQLite)
}

// Open connects to the store named by cfg.DB. It does not migrate; call Migrate.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	def := DefaultConfig()
	if cfg.DB == "" {
		cfg.DB = def.DB
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.PageCacheTTL == 0 {
		cfg.PageCacheTTL = time.Second
	}
	if cfg.SessionMax == 0 {
		cfg.SessionMax = def.SessionMax
	}
	if cfg.SessionMax < 0 || cfg.SessionMax > MaxSessionMax {
		return nil, fmt.Errorf("session lifetime %s: want a positive duration of at most %s", cfg.SessionMax, MaxSessionMax)
	}
	u, err := url.Parse(cfg.PublicURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("public URL %q: want http(s)://host[:port]", cfg.PublicURL)
	}
	if cfg.KEK == nil {
		cfg.KEK = make([]byte, KEKSize)
		if _, err := rand.Read(cfg.KEK); err != nil {
			return nil, err
		}
	}
	k, err := newKEK(cfg.KEK)
	if err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, clock: cfg.Clock, log: cfg.Logger, commitLog: transparencyLog{}, domain: u.Host, audience: strings.ToLower(u.Scheme + "://" + u.Host), origin: newOrigin()}
	s.kek.Store(k)
	s.keys.loading = make(chan struct{}, 1)
	s.sessions = newSessionCache()
	s.tokens = newTokenCache()
	s.collectionPages = pagecache.New[collectionPageKey, Page[Collection]](maxCachedCollections, cfg.PageCacheTTL)
	s.nftPages = pagecache.New[nftPageKey, Page[NFTView]](maxCachedNFTs, cfg.PageCacheTTL)
	s.ledger = ledger.Embedded{}
	s.nftIndex = newNFTIndex(s)
	s.offerBook = newOfferBook()
	switch {
	case strings.HasPrefix(cfg.DB, "postgres://"), strings.HasPrefix(cfg.DB, "postgresql://"):
		err = s.openPostgres(ctx, cfg.DB)
	case strings.HasPrefix(cfg.DB, "sqlite://"):
		err = s.openSQLite(strings.TrimPrefix(cfg.DB, "sqlite://"))
	default:
		err = fmt.Errorf("store %q: want postgres://... or sqlite://PATH", cfg.DB)
	}
	if err != nil {
		return nil, err
	}
	s.db.AddQueryHook(queryHooks{s}) // the one hook bun holds; AddQueryHook adds to it
	if s.wdb != s.db {
		s.wdb.AddQueryHook(queryHooks{s})
	}
	s.AddQueryHook(spoilOnQuery{})                         // page_reads.go
	s.AddQueryHook(sqlSpans{system: sqlSystem(s.dialect)}) // store_trace.go
	if err := s.checkKEK(patient(ctx)); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) openPostgres(ctx context.Context, dsn string) error {
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		pc.MaxConns = 8 // enough to keep a few cores busy; more connections only contend
		if s.cfg.MaxConns > 0 {
			pc.MaxConns = int32(s.cfg.MaxConns)
		}
	}
	// bun renders arguments into the SQL text itself, so every statement is new to the server:
	// the simple protocol sends it in one round trip instead of preparing it first.
	pc.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	pc.AfterConnect = s.checkHistory // a failover may have moved the history: ledger_failover.go
	s.poolQueue = newPoolQueue(pc.MaxConns, func() bool {
		st := s.pool.Stat()
		return st.AcquiredConns() >= st.MaxConns()
	})
	pc.PrepareConn, pc.AfterRelease = s.poolQueue.taken, s.poolQueue.released
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	s.pool = pool
	if err := pool.QueryRow(ctx, "SELECT COALESCE(current_schema(), '')").Scan(&s.schema); err != nil {
		pool.Close()
		return fmt.Errorf("postgres: %w", err)
	}
	lctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stopListener, s.listenerDone = stop, make(chan struct{})
	ready := make(chan struct{})
	go s.listen(lctx, pc.ConnConfig.Copy(), ready)
	select { // serve only once other instances' changes can reach this one
	case <-ready:
	case <-time.After(10 * time.Second):
		stop()
		pool.Close()
		return fmt.Errorf("postgres: cannot listen for session changes")
	}
	s.dialect = Postgres
	sqldb := sql.OpenDB(admittedConnector{stdlib.GetPoolConnector(pool), s})
	sqldb.SetMaxIdleConns(0) // the pool keeps the idle connections: each use asks it again
	s.db = bun.NewDB(sqldb, pgdialect.New())
	s.wdb = s.db
	return nil
}

func (s *Store) openSQLite(path string) error {
	s.dialect = SQLite
	s.writer = newWriterSlot()
	const pragmas = "_pragma=foreign_keys(1)&_pragma=busy_timeout(10000)"
	if path == ":memory:" || path == "" {
		// One connection: every connection to :memory: would be a database of its own.
		sqldb, err := sql.Open("sqlite", "file::memory:?"+pragmas)
		if err != nil {
			return err
		}
		sqldb.SetMaxOpenConns(1)
		sqldb.SetConnMaxLifetime(0)
		sqldb.SetConnMaxIdleTime(0)
		s.db = bun.NewDB(sqldb, sqlitedialect.New())
		s.wdb = s.db
		return nil
	}
	if err := s.privateFiles(path); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	// WAL with synchronous=NORMAL: a commit survives a crash of the process; a power failure
	// or OS crash may lose the last commits, never consistency. PostgreSQL is the store for
	// deployments that need every commit on disk before it is answered.
	base := "file:" + path + "?" + pragmas + "&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	// The writer checkpoints the WAL into the database once it holds 8,000 pages (32 MiB at
	// SQLite's 4 KiB pages), not SQLite's default of 1,000: a page that many commits in a row
	// change (an index's busiest, the updates table's last) is copied back once per
	// checkpoint, so fewer checkpoints copy less. Under a crowd of accepts and transfers the
	// checkpoints took a tenth to an eighth of the server's time at 1,000 pages.
	w, err := sql.Open("sqlite", base+"&_txlock=immediate&_pragma=wal_autocheckpoint(8000)")
	if err != nil {
		return err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxIdleTime(0)
	w.SetConnMaxLifetime(0)
	r, err := sql.Open("sqlite", base+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return err
	}
	n := s.cfg.MaxConns
	if n <= 0 {
		n = 8
	}
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	s.wdb = bun.NewDB(w, sqlitedialect.New())
	s.db = bun.NewDB(r, sqlitedialect.New())
	return nil
}

// Close releases the store's connections.
func (s *Store) Close() error {
	s.nftIndex.close()
	fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	refusalsErr := s.closeRefusals(fctx)
	cancel()
	if s.stopListener != nil {
		s.stopListener()
		<-s.listenerDone
	}
	s.stopIntegration()
	errs := []error{refusalsErr, s.logWrites.close(), s.closeReads()}
	if s.wdb != s.db {
		errs = append(errs, s.wdb.Close())
	}
	errs = append(errs, s.db.Close())
	if s.pool != nil {
		s.pool.Close()
	}
	return errors.Join(errs...)
}

// Dialect tells which database is behind the store.
func (s *Store) Dialect() Dialect { return s.dialect }

// Config returns the configuration the store runs with.
func (s *Store) Config() Config { return s.cfg }

// Ping answers nil while the store answers.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.db.NewSelect().ColumnExpr("1").Scan(patient(ctx), &one); err != nil {
		return &Error{Code: CodeUnavailable, Message: "the store does not answer", Err: err}
	}
	return nil
}

// Tx is one database transaction of the domain. Its ledger part (ledger.Tx) is the database
// transaction itself: the instant it runs at, so every row it writes agrees on the time, its
// locks and its deferred writes. The rest is what only the store needs.
type Tx struct {
	*ledger.Tx
	s        *Store
	after    []func()
	recorded string   // the kind of the ledger update this transaction appended, if any
	parts    []txPart // what the store's parts gather while it runs, its log among them (store_txpart.go)
	ended    func()   // run once it has committed, before the work that follows a commit
}

// afterCommit runs fn once the transaction has committed (not if it rolls back).
func (tx *Tx) afterCommit(fn func()) { tx.after = append(tx.after, fn) }

// inTx runs fn in one write transaction and commits once; any error rolls everything back.
func (s *Store) inTx(ctx context.Context, fn func(tx *Tx) error) error {
	start := time.Now()
	var after []func()
	var recorded string
	var report string
	parts := newTxParts() // their work after the end runs even if the transaction never began
	log := logOf(parts)   // a standing part: the transaction keeps this one to its end
	var ended func()
	committing := false // fn succeeded: an error from here on comes from COMMIT
	release, err := s.enterWriter(ctx)
	if err != nil {
		return err
	}
	s.commitLog.beginWrite(ctx, s) // while the writer's connection is free
	// What the log owes once the transaction has committed, before the next writer's turn.
	committed := func() { log.committed(s) }
	err = s.runWriteTx(ctx, release, committed, &report, func(ctx context.Context, btx bun.Tx) error {
		tx := &Tx{Tx: ledger.Begin(btx, s.wdb, s.now()), s: s, parts: parts}
		defer func() { parts, ended = tx.parts, tx.ended }()
		if err := fn(tx); err != nil {
			return err
		}
		after, recorded = tx.after, tx.recorded
		if err := tx.beforeCommit(ctx); err != nil {
			return err
		}
		if err := tx.appendLog(ctx); err != nil {
			return err
		}
		if err := tx.Flush(ctx); err != nil {
			return err
		}
		committing = true
		return nil
	})
	if committing {
		err = commitFault(ctx, err)
	}
	if err == nil {
		err = log.ended(patient(context.WithoutCancel(ctx)), s, report)
	}
	if err == nil && ended != nil {
		ended()
	}
	outcome := txCommitted
	switch {
	case err != nil && committing:
		outcome = txUnknown
	case err != nil:
		outcome = txRolledBack
	}
	// The parts' work after the end (the read models brought up to date) runs before the write
	// answers, whatever the outcome.
	s.partsEnded(patient(context.WithoutCancel(ctx)), parts, outcome)
	if err == nil && recorded != "" {
		s.observeCommit(recorded, time.Since(start))
	}
	if err == nil {
		for _, f := range after {
			f()
		}
	}
	return err
}

// runWriteTx runs fn in a write transaction, runs committed if it committed, and gives the
// writer back (release) as soon as it ends, even if fn panics. On PostgreSQL it keeps in
// *report what the COMMIT reported of the log (the session's application_name: logReport).
func (s *Store) runWriteTx(ctx context.Context, release, committed func(), report *string, fn func(ctx context.Context, btx bun.Tx) error) error {
	defer release()
	if s.dialect != Postgres {
		err := s.wdb.RunInTx(ctx, nil, fn)
		if err == nil {
			committed()
		}
		return err
	}
	conn, err := s.wdb.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err = conn.RunInTx(ctx, nil, fn); err != nil {
		return err
	}
	committed()
	// It committed: a report not read is read back instead (completeReceipts), not an error.
	_ = conn.Raw(func(dc any) error {
		if c, ok := dc.(*stdlib.Conn); ok {
			*report = c.Conn().PgConn().ParameterStatus("application_name")
		}
		return nil
	})
	return nil
}

// writeQuery is a bun write that can render itself as SQL.
type writeQuery = ledger.WriteQuery

// writeAll applies the writes atomically: on PostgreSQL as one multi-statement query, which
// the server runs as one implicit transaction, in one round trip; on SQLite in a group of the
// writes that wait meanwhile (writeGroups).
func (s *Store) writeAll(ctx context.Context, qs ...writeQuery) error {
	stmts := make([]string, len(qs))
	for i, q := range qs {
		b, err := q.AppendQuery(s.wdb.QueryGen(), nil)
		if err != nil {
			return err
		}
		stmts[i] = string(b)
	}
	if s.dialect == Postgres {
		_, err := s.wdb.DB.ExecContext(ctx, strings.Join(stmts, ";\n"))
		return err
	}
	return s.writeGroups.write(ctx, s, stmts)
}

// isUniqueViolation tells whether err is a unique constraint refusing a row, on either dialect.
func isUniqueViolation(err error) bool {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code == "23505"
	}
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}

// isNoRows tells whether err says a single-row query found nothing.
func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

// privateFiles keeps the SQLite store readable by its own user only: the database holds the
// service's keys (the operator party's among them) and every party's history. The data folder
// is made 0700 and the database 0600 before SQLite opens it (SQLite gives its -wal and -shm
// files the database's mode); a folder or file an earlier version left looser is tightened,
// with a log line. A folder others share is never changed: the current directory (a database
// named without a folder), a sticky folder such as /tmp (shared by design: making it 0700 would
// lock every other user out of it), and a folder the process may not change (another user's).
// There the database files are still 0600, and a log line says the folder is shared.
func (s *Store) privateFiles(path string) error {
	tighten := func(name string, mode os.FileMode) error {
		fi, err := os.Stat(name)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&^mode == 0 {
			return nil
		}
		shared := func() error {
			s.log.Warn("the SQLite store's folder is shared with other users; its files are 0600, but a folder of its own is safer", "path", name, "mode", fi.Mode().String())
			return nil
		}
		if fi.IsDir() && fi.Mode()&os.ModeSticky != 0 {
			return shared()
		}
		if err := os.Chmod(name, mode); err != nil {
			if fi.IsDir() && errors.Is(err, os.ErrPermission) {
				return shared()
			}
			return err
		}
		s.log.Info("tightened the permissions of the SQLite store", "path", name, "was", fi.Mode().Perm().String(), "now", mode.String())
		return nil
	}
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		if err := tighten(dir, 0o700); err != nil {
			return err
		}
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := tighten(path+suffix, 0o600); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}
