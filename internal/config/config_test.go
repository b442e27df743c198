package config

import (
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestDefaultsSelectTheEmbeddedEngine(t *testing.T) {
	c, err := FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Engine() != "sqlite" || c.Addr() != "0.0.0.0:6632" || c.DataDir != "./queen-data" ||
		c.MaxBodyBytes != 64<<20 || c.SpoolDir != "queen-data/spool" {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestQueenPGVariablesBuildAnEscapedURL(t *testing.T) {
	c, err := FromEnv(env(map[string]string{
		"PG_HOST": "db.internal", "PG_PORT": "6543", "PG_USER": "queen", "PG_PASSWORD": "p@ss/word", "PG_DB": "mq",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := "postgres://queen:p%40ss%2Fword@db.internal:6543/mq?sslmode=disable"
	if c.Engine() != "postgres" || c.DatabaseURL != want {
		t.Fatalf("DatabaseURL = %q, want %q", c.DatabaseURL, want)
	}
	c, _ = FromEnv(env(map[string]string{"PG_HOST": "h", "QUEEN_DATABASE_URL": "postgres://x@y/z"}))
	if c.DatabaseURL != "postgres://x@y/z" {
		t.Fatalf("QUEEN_DATABASE_URL must win over PG_*: got %q", c.DatabaseURL)
	}
}

func TestBadValuesNameTheVariable(t *testing.T) {
	_, err := FromEnv(env(map[string]string{"PORT": "http", "QUEEN_MAX_BODY_BYTES": "-1", "LOG_LEVEL": "loud"}))
	if err == nil {
		t.Fatal("no error for bad values")
	}
	for _, name := range []string{"PORT", "QUEEN_MAX_BODY_BYTES", "LOG_LEVEL"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
}
