package migrate_test

import (
	"io/fs"
	"slices"
	"testing"

	"github.com/queen-go/queen/internal/store/migrate"
	"github.com/queen-go/queen/internal/store/postgres"
	"github.com/queen-go/queen/internal/store/sqlite"
)

// Version N is the same change on every engine: both folders are well
// numbered and hold the same file names (an engine that already has a
// change carries a documented no-op under its number).
func TestEnginesShareNumbering(t *testing.T) {
	list := func(engine string, fsys fs.FS) []string {
		t.Helper()
		ms, err := migrate.List(fsys)
		if err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		var names []string
		for _, m := range ms {
			names = append(names, m.Name)
		}
		return names
	}
	lite, pg := list("sqlite", sqlite.Migrations()), list("postgres", postgres.Migrations())
	if !slices.Equal(lite, pg) {
		t.Fatalf("the engines' migrations differ:\nsqlite   %v\npostgres %v", lite, pg)
	}
}
