package migrate

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// files builds a migrations folder of the given file names.
func files(names ...string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for _, n := range names {
		fsys[n] = &fstest.MapFile{Data: []byte("-- " + n)}
	}
	return fsys
}

var three = files("001_init.up.sql", "002_settings.up.sql", "003_ready_lanes.up.sql")

func TestList(t *testing.T) {
	ms, err := List(files("002_settings.up.sql", "001_init.up.sql", "001_init.down.sql", "003_ready_lanes.up.sql"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, m := range ms {
		if m.Version != i+1 || m.SQL != "-- "+m.Name {
			t.Errorf("migration %d: %+v", i, m)
		}
		got = append(got, m.Name)
	}
	want := []string{"001_init.up.sql", "002_settings.up.sql", "003_ready_lanes.up.sql"}
	if !slices.Equal(got, want) {
		t.Fatalf("List = %v, want %v", got, want)
	}
}

func TestListNumbering(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fsys  fstest.MapFS
		inErr string
	}{
		{"gap", files("001_a.up.sql", "003_c.up.sql"), "version 2 is missing before 003_c.up.sql"},
		{"not from one", files("002_b.up.sql"), "version 1 is missing before 002_b.up.sql"},
		{"duplicate", files("001_a.up.sql", "002_b.up.sql", "002_c.up.sql"),
			"002_b.up.sql and 002_c.up.sql have the same version"},
		{"two digits", files("01_a.up.sql"), `"01_a.up.sql" is not named NNN_name.up.sql`},
		{"no name", files("001.up.sql"), `"001.up.sql" is not named`},
		{"upper case", files("001_Init.up.sql"), `"001_Init.up.sql" is not named`},
		{"stray file", files("001_a.up.sql", "README.md"), `"README.md" is not named`},
		{"empty", files(), "no migrations"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := List(tc.fsys)
			if !errors.Is(err, ErrNumbering) || !strings.Contains(err.Error(), tc.inErr) {
				t.Fatalf("List: %v, want ErrNumbering saying %q", err, tc.inErr)
			}
		})
	}
}

// fakeDB is a database in memory: its tables and schema_migrations rows.
type fakeDB struct {
	tables     []string
	applied    []Applied
	alienTable bool // schema_migrations has other columns
	failOn     int  // Apply fails on this version
	locked     bool
	unlocks    int
	ran        []string
}

func (f *fakeDB) Lock(ctx context.Context) (Conn, error) {
	if f.locked {
		return nil, errors.New("locked twice")
	}
	f.locked = true
	return f, nil
}

func (f *fakeDB) Tables(ctx context.Context) ([]string, error) { return slices.Clone(f.tables), nil }

func (f *fakeDB) EnsureVersionTable(ctx context.Context) error {
	if !slices.Contains(f.tables, VersionTable) {
		f.tables = append(f.tables, VersionTable)
	}
	return nil
}

func (f *fakeDB) Applied(ctx context.Context) ([]Applied, error) {
	if f.alienTable {
		return nil, ErrVersionTable
	}
	return slices.Clone(f.applied), nil
}

func (f *fakeDB) Apply(ctx context.Context, m Migration, at time.Time) error {
	if !f.locked {
		return errors.New("apply without the lock")
	}
	if m.Version == f.failOn {
		return errors.New("boom")
	}
	f.ran = append(f.ran, m.Name)
	f.applied = append(f.applied, Applied{m.Version, m.Name})
	return nil
}

func (f *fakeDB) Unlock(ctx context.Context) {
	f.locked = false
	f.unlocks++
}

var pgOpts = Options{Target: `schema "queen"`, Guess: `real Queen uses "queen"`,
	Advice: "point QUEEN_PG_SCHEMA at another schema"}

func names(ms []Migration) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

func TestRunFreshThenNoOp(t *testing.T) {
	ctx := context.Background()
	db := &fakeDB{}
	ran, err := Run(ctx, db, three, pgOpts)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"001_init.up.sql", "002_settings.up.sql", "003_ready_lanes.up.sql"}
	if !slices.Equal(names(ran), want) || !slices.Equal(db.ran, want) {
		t.Fatalf("ran %v (driver saw %v), want %v", names(ran), db.ran, want)
	}
	ran, err = Run(ctx, db, three, pgOpts)
	if err != nil || len(ran) != 0 || len(db.ran) != 3 {
		t.Fatalf("second run: %v, applied %v; want nothing", err, names(ran))
	}
	if db.locked || db.unlocks != 2 {
		t.Fatalf("locked %v after %d unlocks", db.locked, db.unlocks)
	}
}

func TestRunLast(t *testing.T) {
	ctx := context.Background()
	db := &fakeDB{}
	if ran, err := Run(ctx, db, three, Options{Last: 2}); err != nil || len(ran) != 2 {
		t.Fatalf("Last 2: %v %v", err, names(ran))
	}
	if ran, err := Run(ctx, db, three, Options{}); err != nil || !slices.Equal(names(ran), []string{"003_ready_lanes.up.sql"}) {
		t.Fatalf("then all: %v %v", err, names(ran))
	}
}

// A missing version below recorded ones (a database written by a build
// that had them in another order) is applied too, in order.
func TestRunFillsHoles(t *testing.T) {
	db := &fakeDB{tables: []string{VersionTable, "queues"},
		applied: []Applied{{1, "001_init.up.sql"}, {3, "003_ready_lanes.up.sql"}}}
	ran, err := Run(context.Background(), db, three, Options{})
	if err != nil || !slices.Equal(names(ran), []string{"002_settings.up.sql"}) {
		t.Fatalf("%v %v", err, names(ran))
	}
}

func TestRunFailureUnlocks(t *testing.T) {
	db := &fakeDB{failOn: 2}
	ran, err := Run(context.Background(), db, three, Options{})
	if err == nil || err.Error() != "boom" || !slices.Equal(names(ran), []string{"001_init.up.sql"}) {
		t.Fatalf("%v %v", err, names(ran))
	}
	if db.locked {
		t.Fatal("lock kept after a failure")
	}
}

func TestRunRefusesForeignTables(t *testing.T) {
	db := &fakeDB{tables: []string{"queues", "partitions", "messages", "partition_consumers", "consumer_groups_metadata",
		"dead_letter_queue", "retention_history"}}
	_, err := Run(context.Background(), db, three, pgOpts)
	var fe *ForeignError
	if !errors.As(err, &fe) || !errors.Is(err, ErrForeign) {
		t.Fatalf("err = %v, want a *ForeignError", err)
	}
	const want = `schema "queen" holds tables queen-go did not create (consumer_groups_metadata, dead_letter_queue, ` +
		`messages, partition_consumers, partitions, …): it looks like another application's (real Queen uses "queen"); ` +
		`point QUEEN_PG_SCHEMA at another schema`
	if err.Error() != want {
		t.Fatalf("err = %s\nwant  %s", err, want)
	}
	if len(db.ran) != 0 || slices.Contains(db.tables, VersionTable) || db.locked {
		t.Fatalf("a refused database was touched: ran %v, tables %v, locked %v", db.ran, db.tables, db.locked)
	}
}

func TestRunRefusesAlienVersionTable(t *testing.T) {
	db := &fakeDB{tables: []string{VersionTable, "users"}, alienTable: true}
	_, err := Run(context.Background(), db, three, Options{Target: `schema "app"`})
	const want = `schema "app" holds tables queen-go did not create (schema_migrations, users): ` +
		`it looks like another application's`
	if !errors.Is(err, ErrForeign) || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
}

func TestRunRefusesOtherNames(t *testing.T) {
	db := &fakeDB{tables: []string{VersionTable, "accounts"}, applied: []Applied{{1, "001_accounts.up.sql"}}}
	_, err := Run(context.Background(), db, three, pgOpts)
	const want = `schema "queen" records migration 1 as "001_accounts.up.sql" where queen-go has "001_init.up.sql": ` +
		`it looks like another application's (real Queen uses "queen"); point QUEEN_PG_SCHEMA at another schema`
	if !errors.Is(err, ErrForeign) || err.Error() != want {
		t.Fatalf("err = %v\nwant  %s", err, want)
	}
	if len(db.ran) != 0 {
		t.Fatalf("ran %v on a foreign database", db.ran)
	}
}

func TestRunRefusesNewer(t *testing.T) {
	db := &fakeDB{tables: []string{VersionTable, "queues"}, applied: []Applied{{1, "001_init.up.sql"},
		{2, "002_settings.up.sql"}, {3, "003_ready_lanes.up.sql"}, {5, "005_later.up.sql"}, {4, "004_tenancy.up.sql"}}}
	_, err := Run(context.Background(), db, three, pgOpts)
	var ne *NewerError
	if !errors.As(err, &ne) || !errors.Is(err, ErrNewer) {
		t.Fatalf("err = %v, want a *NewerError", err)
	}
	const want = `schema "queen" was migrated by a newer version of queen-go (it records migration 5 "005_later.up.sql"; ` +
		`this binary knows migrations up to 3): run that version or a newer one`
	if err.Error() != want {
		t.Fatalf("err = %s\nwant  %s", err, want)
	}
	if len(db.ran) != 0 {
		t.Fatalf("ran %v on a newer database", db.ran)
	}
}

func TestRunStampsNow(t *testing.T) {
	at := time.Unix(1_700_000_000, 0)
	var got []time.Time
	d := &stampDB{fakeDB: &fakeDB{}, got: &got}
	if _, err := Run(context.Background(), d, three, Options{Now: func() time.Time { return at }}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !got[0].Equal(at) {
		t.Fatalf("applied_at %v, want %v each", got, at)
	}
}

type stampDB struct {
	*fakeDB
	got *[]time.Time
}

func (s *stampDB) Lock(ctx context.Context) (Conn, error) {
	if _, err := s.fakeDB.Lock(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *stampDB) Apply(ctx context.Context, m Migration, at time.Time) error {
	*s.got = append(*s.got, at)
	return s.fakeDB.Apply(ctx, m, at)
}

// An upgrade says what it applies (it may rebuild an index of a big table
// while the broker is not serving yet); a new database is created silently.
func TestRunLogsUpgrades(t *testing.T) {
	var buf bytes.Buffer
	opts := Options{Target: "test db", Logger: slog.New(slog.NewTextHandler(&buf, nil))}
	db := &fakeDB{}
	if _, err := Run(context.Background(), db, files("001_init.up.sql"), opts); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Fatalf("creating a database logged:\n%s", buf.String())
	}
	if _, err := Run(context.Background(), db, three, opts); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`msg="applying schema migration" target="test db" migration=002_settings.up.sql`,
		`msg="schema migration applied" target="test db" migration=002_settings.up.sql took=`,
		`msg="applying schema migration" target="test db" migration=003_ready_lanes.up.sql`,
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("upgrade log lacks %q:\n%s", want, buf.String())
		}
	}
}
