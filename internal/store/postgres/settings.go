package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store"
)

const (
	sqlSettingGet = `SELECT value FROM settings WHERE key = $1`
	sqlSettingSet = `INSERT INTO settings (key, value, updated_at) VALUES ($1, $2, $3)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`
)

// SettingGet reads a broker-wide setting.
func (s *Store) SettingGet(ctx context.Context, p *store.SettingGetParams) (string, error) {
	if s.closed() {
		return "", store.ErrClosed
	}
	if err := s.ready(ctx); err != nil {
		return "", err
	}
	var v string
	err := s.pool.QueryRow(ctx, sqlSettingGet, p.Key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", wrapErr("postgres: read setting "+p.Key, err)
	}
	return v, nil
}

// SettingSet stores a broker-wide setting.
func (s *Store) SettingSet(ctx context.Context, p *store.SettingSetParams) error {
	if s.closed() {
		return store.ErrClosed
	}
	if err := s.ready(ctx); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, sqlSettingSet, p.Key, p.Value, p.Now.UnixMilli()); err != nil {
		return wrapErr("postgres: write setting "+p.Key, err)
	}
	return nil
}
