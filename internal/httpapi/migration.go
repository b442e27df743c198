package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/transfer"
)

// Migration is what the migration routes need: the transfer service
// (internal/transfer) that copies this broker's data to a target
// PostgreSQL.
type Migration interface {
	// TestConnection connects to the target and returns its version; the
	// error never holds the password.
	TestConnection(ctx context.Context, t api.MigrationTarget) (string, error)
	// Start starts a copy in the background: transfer.ErrRunning while
	// one runs, an error wrapping transfer.ErrTargetNotEmpty for a target
	// holding queues.
	Start(ctx context.Context, t api.MigrationStart) error
	// Status reports the copy.
	Status() api.MigrationStatus
	// Validate counts what a copy copies at both ends.
	Validate(ctx context.Context, t api.MigrationStart) (api.MigrationValidation, error)
	// Reset forgets a finished copy: transfer.ErrResetRunning while one
	// runs.
	Reset() error
}

// migrationRoutes are Queen's five migration routes.
type migrationRoutes struct {
	migration Migration
}

func (g *migrationRoutes) Routes() []Route {
	return []Route{
		row(AccessAdmin, "POST", "/api/v1/migration/test-connection", "migration_test_connection", g.testConnection).Operator(),
		row(AccessAdmin, "POST", "/api/v1/migration/start", "migration_start", g.start).Operator(),
		row(AccessAdmin, "GET", "/api/v1/migration/status", "migration_status", g.status).Operator(),
		row(AccessAdmin, "POST", "/api/v1/migration/validate", "migration_validate", g.validate).Operator(),
		row(AccessAdmin, "POST", "/api/v1/migration/reset", "migration_reset", g.reset).Operator(),
	}
}

// decodeMigrationTarget reads a target and checks Queen's required fields.
func decodeMigrationTarget(r *http.Request) (api.MigrationStart, error) {
	var t api.MigrationStart
	body, err := readBody(r)
	if err != nil {
		return t, err
	}
	if err := unmarshal(body, &t); err != nil {
		return t, err
	}
	if t.Host == "" || t.Database == "" || t.User == "" {
		return t, badRequest("host, database, and user are required")
	}
	return t, nil
}

func (g *migrationRoutes) available() error {
	if g.migration == nil {
		return api.ErrFeatureUnavailable.With("migration is not available on this broker")
	}
	return nil
}

func (g *migrationRoutes) testConnection(w http.ResponseWriter, r *http.Request) error {
	t, err := decodeMigrationTarget(r)
	if err != nil {
		return err
	}
	if err := g.available(); err != nil {
		return err
	}
	version, err := g.migration.TestConnection(r.Context(), t.MigrationTarget)
	if err != nil {
		writeJSON(w, http.StatusOK, api.MigrationConnection{Message: "Connection failed", Error: err.Error()})
		return nil
	}
	writeJSON(w, http.StatusOK, api.MigrationConnection{Success: true, Message: "Connection successful", Version: version})
	return nil
}

func (g *migrationRoutes) start(w http.ResponseWriter, r *http.Request) error {
	t, err := decodeMigrationTarget(r)
	if err != nil {
		return err
	}
	if err := g.available(); err != nil {
		return err
	}
	err = g.migration.Start(r.Context(), t)
	switch {
	case errors.Is(err, transfer.ErrRunning), errors.Is(err, transfer.ErrTargetNotEmpty):
		return api.ErrConflict.With(err.Error())
	case err != nil:
		var ae *api.Error
		if errors.As(err, &ae) {
			return err
		}
		writeJSON(w, http.StatusInternalServerError, api.MigrationValidation{Error: err.Error()})
		return nil
	}
	writeJSON(w, http.StatusAccepted, api.MigrationStarted{Status: "started",
		Message: "Migration started: this broker's data is being copied to the target; push maintenance is on meanwhile"})
	return nil
}

func (g *migrationRoutes) status(w http.ResponseWriter, r *http.Request) error {
	if err := g.available(); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, g.migration.Status())
	return nil
}

func (g *migrationRoutes) validate(w http.ResponseWriter, r *http.Request) error {
	t, err := decodeMigrationTarget(r)
	if err != nil {
		return err
	}
	if err := g.available(); err != nil {
		return err
	}
	v, err := g.migration.Validate(r.Context(), t)
	if err != nil {
		var ae *api.Error
		if errors.As(err, &ae) {
			return err
		}
		writeJSON(w, http.StatusInternalServerError, api.MigrationValidation{Error: err.Error()})
		return nil
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (g *migrationRoutes) reset(w http.ResponseWriter, r *http.Request) error {
	if err := g.available(); err != nil {
		return err
	}
	if err := g.migration.Reset(); err != nil {
		return api.ErrConflict.With(err.Error())
	}
	writeJSON(w, http.StatusOK, api.MigrationReset{Status: "idle", Message: "Migration state reset"})
	return nil
}
