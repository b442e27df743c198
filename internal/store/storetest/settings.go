package storetest

import (
	"context"
	"testing"

	"github.com/queen-go/queen/internal/store"
)

func runSettings(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Run("UnsetIsEmpty", func(t *testing.T) {
		s := setup(t, newStore)
		v, err := s.SettingGet(context.Background(), &store.SettingGetParams{Key: "maintenance_mode"})
		if err != nil || v != "" {
			t.Fatalf("SettingGet of an unset key = %q, %v; want \"\", nil", v, err)
		}
	})
	t.Run("SetThenGetAndOverwrite", func(t *testing.T) {
		s := setup(t, newStore)
		ctx := context.Background()
		for _, want := range []string{"true", "false"} {
			if err := s.SettingSet(ctx, &store.SettingSetParams{Key: "maintenance_mode", Value: want, Now: T0}); err != nil {
				t.Fatalf("SettingSet(%q): %v", want, err)
			}
			got, err := s.SettingGet(ctx, &store.SettingGetParams{Key: "maintenance_mode"})
			if err != nil || got != want {
				t.Fatalf("SettingGet after SettingSet(%q) = %q, %v", want, got, err)
			}
		}
		if v, _ := s.SettingGet(ctx, &store.SettingGetParams{Key: "pop_maintenance_mode"}); v != "" {
			t.Fatalf("another key reads %q; settings leak between keys", v)
		}
	})
}
