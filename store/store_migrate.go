package store

import (
	"context"
	"fmt"

	"github.com/uptrace/bun/migrate"

	"marketd/migrations"
)

// migrationLockKey is the PostgreSQL advisory lock that keeps two processes from migrating at once.
const migrationLockKey = 0x6d61726b6574 // "market"

// Progress hears how far a long operation has come: done of total units (migrations applied
// or rolled back, NFTs seeded). It is called from the operation's goroutine.
type Progress func(done, total int)

// migrator is bun's migrator of our migrations. With step, each migration's up or down
// calls step once it has run.
func (s *Store) migrator(step func()) (*migrate.Migrator, error) {
	ms := migrate.NewMigrations()
	if err := ms.Discover(migrations.Files); err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	if step != nil {
		counted := migrate.NewMigrations()
		for _, mg := range ms.Sorted() {
			mg.Up, mg.Down = counting(mg.Up, step), counting(mg.Down, step)
			counted.Add(mg)
		}
		ms = counted
	}
	return migrate.NewMigrator(s.wdb, ms,
		migrate.WithTemplateData(migrations.TypesFor(string(s.dialect))),
		migrate.WithMarkAppliedOnSuccess(true),
	), nil
}

// counting wraps a migration's up or down so that step runs after it succeeds. (bun's own
// migration hooks run around Go migrations only; ours are SQL files.)
func counting[F ~func(context.Context, *migrate.Migrator, *migrate.Migration) error](run F, step func()) F {
	if run == nil {
		return nil
	}
	return func(ctx context.Context, m *migrate.Migrator, mg *migrate.Migration) error {
		if err := run(ctx, m, mg); err != nil {
			return err
		}
		step()
		return nil
	}
}

// withMigrationLock runs fn while holding the migration lock (PostgreSQL; SQLite's writers are
// already serialised). step, when not nil, runs after each migration applied or rolled back.
func (s *Store) withMigrationLock(ctx context.Context, step func(), fn func(m *migrate.Migrator) error) error {
	m, err := s.migrator(step)
	if err != nil {
		return err
	}
	if s.dialect == Postgres {
		conn, err := s.db.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock(?)", migrationLockKey); err != nil {
			return fmt.Errorf("migration lock: %w", err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(?)", migrationLockKey)
	}
	if err := m.Init(ctx); err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	return fn(m)
}

// Migrate applies every pending migration and returns their names.
func (s *Store) Migrate(ctx context.Context) ([]string, error) {
	return s.MigrateWithProgress(ctx, nil)
}

// MigrateWithProgress is Migrate telling progress, when not nil, after each migration.
func (s *Store) MigrateWithProgress(ctx context.Context, progress Progress) ([]string, error) {
	ctx = patient(ctx) // a migration's hold is not the pace of requests (ledger_admission.go)
	return s.runMigrations(ctx, "migrate up", progress,
		func(ms migrate.MigrationSlice) int { return len(ms.Unapplied()) },
		func(m *migrate.Migrator) (*migrate.MigrationGroup, error) {
			g, err := m.Migrate(ctx)
			if err != nil {
				return nil, err
			}
			if err := s.sealKeys(ctx); err != nil {
				return nil, err
			}
			if err := s.ensureKeys(ctx); err != nil {
				return nil, err
			}
			if err := s.fillLog(ctx); err != nil {
				return nil, err
			}
			if err := s.ensureOperator(ctx); err != nil {
				return nil, err
			}
			if err := s.fillPoolFigures(ctx); err != nil {
				return nil, err
			}
			return g, s.fillCollectionDays(ctx)
		})
}

// MigrateDown rolls back the last group of migrations and returns their names.
func (s *Store) MigrateDown(ctx context.Context) ([]string, error) {
	return s.MigrateDownWithProgress(ctx, nil)
}

// MigrateDownWithProgress is MigrateDown telling progress, when not nil, after each migration.
func (s *Store) MigrateDownWithProgress(ctx context.Context, progress Progress) ([]string, error) {
	ctx = patient(ctx)
	if err := s.integrateBeforeRollback(ctx); err != nil {
		return nil, err
	}
	return s.runMigrations(ctx, "migrate down", progress,
		func(ms migrate.MigrationSlice) int {
			if last := ms.LastGroup(); last != nil {
				return len(last.Migrations)
			}
			return 0
		},
		func(m *migrate.Migrator) (*migrate.MigrationGroup, error) {
			if err := s.unsealBeforeRollback(ctx, m); err != nil {
				return nil, err
			}
			return m.Rollback(ctx)
		})
}

// sealedKeysMigration is the migration that seals the service's secrets (auth_seal.go).
const sealedKeysMigration = "sealed_keys"

// unsealBeforeRollback writes the service's secrets back in plain bytes when the group about
// to be rolled back takes away their kek_id but keeps the table: the code before reads plain
// bytes only. A group that drops the table too has nothing to keep.
func (s *Store) unsealBeforeRollback(ctx context.Context, m *migrate.Migrator) error {
	ms, err := m.MigrationsWithStatus(ctx)
	if err != nil {
		return err
	}
	last := ms.LastGroup()
	if last == nil {
		return nil
	}
	sealing, dropping := false, false
	for _, mg := range last.Migrations {
		sealing = sealing || mg.Comment == sealedKeysMigration
		dropping = dropping || mg.Comment == "foundation"
	}
	if !sealing || dropping {
		return nil
	}
	return s.unsealKeys(ctx)
}

// runMigrations runs one direction under the migration lock and names the migrations it ran;
// count says how many it will run, for progress.
func (s *Store) runMigrations(ctx context.Context, verb string, progress Progress, count func(migrate.MigrationSlice) int,
	run func(*migrate.Migrator) (*migrate.MigrationGroup, error)) ([]string, error) {
	var names []string
	var step func()
	total, done := 0, 0
	if progress != nil {
		step = func() { done++; progress(done, total) }
	}
	err := s.withMigrationLock(ctx, step, func(m *migrate.Migrator) error {
		if progress != nil {
			ms, err := m.MigrationsWithStatus(ctx)
			if err != nil {
				return fmt.Errorf("%s: %w", verb, err)
			}
			total = count(ms)
		}
		g, err := run(m)
		if err != nil {
			return fmt.Errorf("%s: %w", verb, err)
		}
		for _, mg := range g.Migrations {
			names = append(names, mg.Name+"_"+mg.Comment)
		}
		return nil
	})
	return names, err
}

// MigrationState is one migration and whether it is applied.
type MigrationState struct {
	Name    string `json:"name"`
	Applied bool   `json:"applied"`
	Group   int64  `json:"group,omitempty"`
}

// MigrationStatus lists every migration the binary knows, applied or not.
func (s *Store) MigrationStatus(ctx context.Context) ([]MigrationState, error) {
	var out []MigrationState
	err := s.withMigrationLock(ctx, nil, func(m *migrate.Migrator) error {
		ms, err := m.MigrationsWithStatus(ctx)
		if err != nil {
			return err
		}
		for _, mg := range ms {
			out = append(out, MigrationState{Name: mg.Name + "_" + mg.Comment, Applied: mg.IsApplied(), Group: mg.GroupID})
		}
		return nil
	})
	return out, err
}

// PendingMigrations names the migrations the binary knows that the store has not applied.
// It takes no lock, so a readiness probe can call it as often as it likes.
func (s *Store) PendingMigrations(ctx context.Context) ([]string, error) {
	all := migrate.NewMigrations()
	if err := all.Discover(migrations.Files); err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	ms, err := migrate.NewMigrator(s.db, all).MigrationsWithStatus(ctx) // the read pool: no writer waits
	if err != nil {
		return nil, &Error{Code: CodeUnavailable, Message: "the store's migrations cannot be read", Err: err}
	}
	var pending []string
	for _, mg := range ms.Unapplied() {
		pending = append(pending, mg.Name+"_"+mg.Comment)
	}
	return pending, nil
}

// integrateBeforeRollback takes every numbered entry of the transparency log into its tree
// (PostgreSQL): the code before the log_format migration builds each entry in its COMMIT and
// would never build those, so that migration's rollback refuses while any waits. A database
// not migrated that far (it has no log_sequence) is left as it is.
func (s *Store) integrateBeforeRollback(ctx context.Context) error {
	if s.dialect != Postgres {
		return nil
	}
	var numbered bool
	err := s.db.NewRaw("SELECT to_regclass('log_sequence') IS NOT NULL").Scan(ctx, &numbered)
	if err != nil || !numbered {
		return err
	}
	return s.integrateLog(ctx)
}
