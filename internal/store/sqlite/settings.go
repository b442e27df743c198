package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/queen-go/queen/internal/store"
)

const (
	sqlSettingGet = `SELECT value FROM settings WHERE key = ?`
	sqlSettingSet = `INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`
)

// SettingGet reads a setting through the read-only connection, so it never
// waits behind the writer.
func (s *Store) SettingGet(ctx context.Context, p *store.SettingGetParams) (string, error) {
	var v string
	err := s.reader.QueryRowContext(ctx, sqlSettingGet, p.Key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read setting %s: %w", p.Key, err)
	}
	return v, nil
}

// SettingSet stores a setting durably.
func (s *Store) SettingSet(ctx context.Context, p *store.SettingSetParams) error {
	return s.run(ctx, durable, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, sqlSettingSet, p.Key, p.Value, p.Now.UnixMilli()); err != nil {
			return fmt.Errorf("write setting %s: %w", p.Key, err)
		}
		return nil
	})
}
