package httpapi

import (
	"context"
	"net/http"

	"github.com/queen-go/queen/api"
)

// Migration is what the migration routes need: the transfer service
// (internal/transfer) that reaches a target PostgreSQL.
type Migration interface {
	// TestConnection connects to the target and returns its version; the
	// error never holds the password.
	TestConnection(ctx context.Context, t api.MigrationTarget) (string, error)
}

// migrationRoutes are Queen's migration routes that exist so far:
// test-connection (the wizard's first step).
type migrationRoutes struct {
	migration Migration
}

func (g *migrationRoutes) Routes() []Route {
	return []Route{
		row(AccessAdmin, "POST", "/api/v1/migration/test-connection", "migration_test_connection", g.testConnection).Operator(),
	}
}

// decodeMigrationTarget reads a target and checks Queen's required fields.
func decodeMigrationTarget(r *http.Request) (api.MigrationTarget, error) {
	var t api.MigrationTarget
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

func (g *migrationRoutes) testConnection(w http.ResponseWriter, r *http.Request) error {
	t, err := decodeMigrationTarget(r)
	if err != nil {
		return err
	}
	if g.migration == nil {
		return api.ErrFeatureUnavailable.With("migration is not available on this broker")
	}
	version, err := g.migration.TestConnection(r.Context(), t)
	if err != nil {
		writeJSON(w, http.StatusOK, api.MigrationConnection{Message: "Connection failed", Error: err.Error()})
		return nil
	}
	writeJSON(w, http.StatusOK, api.MigrationConnection{Success: true, Message: "Connection successful", Version: version})
	return nil
}
