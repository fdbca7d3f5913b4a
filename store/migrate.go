package store

import (
	"context"
	"fmt"

	"github.com/uptrace/bun/migrate"

	"marketd/migrations"
)

// migrationLockKey is the PostgreSQL advisory lock that keeps two processes from migrating at once.
const migrationLockKey = 0x6d61726b6574 // "market"

func (s *Store) migrator() (*migrate.Migrator, error) {
	ms := migrate.NewMigrations()
	if err := ms.Discover(migrations.Files); err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return migrate.NewMigrator(s.wdb, ms,
		migrate.WithTemplateData(migrations.TypesFor(string(s.dialect))),
		migrate.WithMarkAppliedOnSuccess(true),
	), nil
}

// withMigrationLock runs fn while holding the migration lock (PostgreSQL; SQLite's writers are
// already serialised).
func (s *Store) withMigrationLock(ctx context.Context, fn func(m *migrate.Migrator) error) error {
	m, err := s.migrator()
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
	var applied []string
	err := s.withMigrationLock(ctx, func(m *migrate.Migrator) error {
		g, err := m.Migrate(ctx)
		if err != nil {
			return fmt.Errorf("migrate up: %w", err)
		}
		for _, mg := range g.Migrations {
			applied = append(applied, mg.Name+"_"+mg.Comment)
		}
		if err := s.ensureOperator(ctx); err != nil {
			return err
		}
		return s.fillPoolFigures(ctx)
	})
	return applied, err
}

// MigrateDown rolls back the last group of migrations and returns their names.
func (s *Store) MigrateDown(ctx context.Context) ([]string, error) {
	var rolled []string
	err := s.withMigrationLock(ctx, func(m *migrate.Migrator) error {
		g, err := m.Rollback(ctx)
		if err != nil {
			return fmt.Errorf("migrate down: %w", err)
		}
		for _, mg := range g.Migrations {
			rolled = append(rolled, mg.Name+"_"+mg.Comment)
		}
		return nil
	})
	return rolled, err
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
	err := s.withMigrationLock(ctx, func(m *migrate.Migrator) error {
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
