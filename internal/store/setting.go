package store

import (
	"context"
	"time"
)

// SettingStore keeps broker-wide settings (maintenance modes) shared by every
// broker on the store and kept across restarts. Settings belong to the
// broker, not to a tenant.
type SettingStore interface {
	// SettingGet returns a setting's value, "" when it was never set.
	SettingGet(ctx context.Context, p *SettingGetParams) (string, error)
	// SettingSet durably stores a setting.
	SettingSet(ctx context.Context, p *SettingSetParams) error
}

// SettingGetParams name the setting to read.
type SettingGetParams struct {
	Key string
}

// SettingSetParams store Value under Key at Now.
type SettingSetParams struct {
	Key   string
	Now   time.Time
	Value string
}
