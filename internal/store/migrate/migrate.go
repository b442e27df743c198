// Package migrate is the one migration runner of both storage engines, on
// the model of River's rivermigrate: each engine embeds its migrations as
// files NNN_name.up.sql and supplies a small Driver (its lock and four
// statements); the runner does everything else. It lists and orders the
// migrations and checks their numbering, takes the engine's lock, refuses a
// database that another application (or a newer queen-go) owns, and applies
// the missing migrations in version order, each in its own transaction
// together with its row in schema_migrations.
//
// Version N means the same change on every engine, so the engines' folders
// hold the same file names (a change one engine already has is a documented
// no-op there).
package migrate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// VersionTable is the table recording applied migrations, in every engine:
// (version, name, applied_at), one row per migration.
const VersionTable = "schema_migrations"

// Migration is one embedded migration.
type Migration struct {
	// Version is the number the file name starts with: 1, 2, 3…
	Version int
	// Name is the file name, as recorded in schema_migrations:
	// "003_ready_lanes.up.sql".
	Name string
	// SQL is the file's body, run as one script.
	SQL string
}

// Applied is one row of schema_migrations.
type Applied struct {
	Version int
	Name    string
}

// Driver is what an engine supplies to the runner.
type Driver interface {
	// Lock takes the engine's migration lock and returns the connection that
	// holds it. Every other step runs on that connection, and Unlock ends
	// them all. Runners on the same database wait for each other here.
	Lock(ctx context.Context) (Conn, error)
}

// Conn is a connection holding the migration lock.
type Conn interface {
	// Tables lists the tables (and views) of the target schema or file,
	// schema_migrations included; none when the schema does not exist.
	Tables(ctx context.Context) ([]string, error)
	// EnsureVersionTable creates the schema and schema_migrations if missing.
	EnsureVersionTable(ctx context.Context) error
	// Applied reads schema_migrations. A table that exists but is not ours
	// (other columns) is reported by an error wrapping ErrVersionTable.
	Applied(ctx context.Context) ([]Applied, error)
	// Apply runs m and records it with appliedAt in one transaction.
	Apply(ctx context.Context, m Migration, appliedAt time.Time) error
	// Unlock releases the lock and the connection. It is called once, also
	// after a failure, with a context that may have ended.
	Unlock(ctx context.Context)
}

// Options tune a run and word its errors.
type Options struct {
	// Last stops after that version (0: apply all). Tests build databases
	// of older schema versions with it.
	Last int
	// Target names the database in errors: `schema "queen"`,
	// `SQLite database "/data/queen.db"`.
	Target string
	// Guess, if set, says whose the database may be when it is foreign:
	// `real Queen uses "queen"`.
	Guess string
	// Advice tells the operator how to start on another database when it is
	// foreign: "point QUEEN_PG_SCHEMA at another schema".
	Advice string
	// Now stamps applied_at; nil means time.Now.
	Now func() time.Time
	// Logger, if set, hears of each migration applied to a database that
	// had some already (an upgrade, which may rebuild an index of a big
	// table): before it starts and once it is done. A new database is
	// created silently.
	Logger *slog.Logger
}

var (
	// ErrForeign: the database holds tables that queen-go did not create.
	// Errors wrapping it are *ForeignError.
	ErrForeign = errors.New("database holds tables queen-go did not create")
	// ErrNewer: the database records migrations this binary does not know.
	// Errors wrapping it are *NewerError.
	ErrNewer = errors.New("database was migrated by a newer version of queen-go")
	// ErrVersionTable is returned by Conn.Applied when schema_migrations
	// exists but has not the columns queen-go gives it.
	ErrVersionTable = errors.New("schema_migrations is not queen-go's")
	// ErrNumbering: the embedded migrations are misnamed or misnumbered (a
	// bug in the build, caught by each engine's tests).
	ErrNumbering = errors.New("bad migration numbering")
)

// ForeignError refuses a database that another application owns: it holds
// tables but no schema_migrations of ours, or its schema_migrations records
// a version under another name.
type ForeignError struct {
	Target string
	Guess  string
	Advice string
	// Tables found, sorted, when schema_migrations is missing or not ours.
	Tables []string
	// Recorded is the row whose name differs from Want's for its version
	// (Want.Name is empty when the tables are the reason).
	Recorded Applied
	Want     Migration
}

func (e *ForeignError) Error() string {
	var b strings.Builder
	if e.Want.Name != "" {
		fmt.Fprintf(&b, "%s records migration %d as %q where queen-go has %q", e.Target,
			e.Recorded.Version, e.Recorded.Name, e.Want.Name)
	} else {
		fmt.Fprintf(&b, "%s holds tables queen-go did not create (%s)", e.Target, listTables(e.Tables, 5))
	}
	b.WriteString(": it looks like another application's")
	if e.Guess != "" {
		fmt.Fprintf(&b, " (%s)", e.Guess)
	}
	if e.Advice != "" {
		b.WriteString("; " + e.Advice)
	}
	return b.String()
}

func (e *ForeignError) Unwrap() error { return ErrForeign }

// NewerError refuses a database that a newer queen-go has migrated: its
// schema may have changed in ways this binary would misread.
type NewerError struct {
	Target string
	// Recorded is the newest migration recorded; Known the newest this
	// binary has.
	Recorded Applied
	Known    int
}

func (e *NewerError) Error() string {
	return fmt.Sprintf("%s was migrated by a newer version of queen-go (it records migration %d %q; this binary knows "+
		"migrations up to %d): run that version or a newer one", e.Target, e.Recorded.Version, e.Recorded.Name, e.Known)
}

func (e *NewerError) Unwrap() error { return ErrNewer }

// listTables joins up to max names, then "…".
func listTables(tables []string, max int) string {
	if len(tables) <= max {
		return strings.Join(tables, ", ")
	}
	return strings.Join(tables[:max], ", ") + ", …"
}

// fileName is a migration's file name: three digits, an underscore, a
// lower-case snake_case name.
var fileName = regexp.MustCompile(`^([0-9]{3})_([a-z0-9]+(?:_[a-z0-9]+)*)\.up\.sql$`)

// List reads the migrations at the root of fsys, in version order, and
// checks their numbering: every file is NNN_name.up.sql (NNN_name.down.sql
// files are skipped: the runner only goes up), versions start at 1 and have
// neither gaps nor duplicates. A fault is an error wrapping ErrNumbering.
func List(fsys fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("migrate: list migrations: %w", err)
	}
	var ms []Migration
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, ".down.sql") && !e.IsDir() {
			continue
		}
		m := fileName.FindStringSubmatch(name)
		if m == nil || e.IsDir() {
			return nil, fmt.Errorf("migrate: %w: %q is not named NNN_name.up.sql", ErrNumbering, name)
		}
		version, _ := strconv.Atoi(m[1])
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("migrate: read %s: %w", name, err)
		}
		ms = append(ms, Migration{Version: version, Name: name, SQL: string(body)})
	}
	slices.SortFunc(ms, func(a, b Migration) int { return a.Version - b.Version })
	for i, m := range ms {
		switch {
		case i > 0 && m.Version == ms[i-1].Version:
			return nil, fmt.Errorf("migrate: %w: %s and %s have the same version", ErrNumbering, ms[i-1].Name, m.Name)
		case m.Version != i+1:
			return nil, fmt.Errorf("migrate: %w: version %d is missing before %s", ErrNumbering, i+1, m.Name)
		}
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("migrate: %w: no migrations", ErrNumbering)
	}
	return ms, nil
}

// Run brings the database up to date with the migrations in fsys (see
// List) and returns those it applied, none when it was already current.
//
// Under the driver's lock it looks at the target first: empty or absent, it
// is created; with our schema_migrations, the missing versions are applied;
// tables without schema_migrations, a recorded version under another name,
// or a schema_migrations of other columns are refused (*ForeignError);
// a recorded version above the newest known is refused (*NewerError).
func Run(ctx context.Context, d Driver, fsys fs.FS, opts Options) ([]Migration, error) {
	ms, err := List(fsys)
	if err != nil {
		return nil, err
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	conn, err := d.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Unlock(context.WithoutCancel(ctx))

	tables, err := conn.Tables(ctx)
	if err != nil {
		return nil, err
	}
	slices.Sort(tables)
	foreign := func() error {
		return &ForeignError{Target: opts.Target, Guess: opts.Guess, Advice: opts.Advice, Tables: tables}
	}
	if len(tables) > 0 && !slices.Contains(tables, VersionTable) {
		return nil, foreign()
	}
	if err := conn.EnsureVersionTable(ctx); err != nil {
		return nil, err
	}
	applied, err := conn.Applied(ctx)
	if errors.Is(err, ErrVersionTable) {
		return nil, foreign()
	}
	if err != nil {
		return nil, err
	}
	done := make(map[int]bool, len(applied))
	for _, a := range applied {
		if a.Version > len(ms) {
			newest := slices.MaxFunc(applied, func(a, b Applied) int { return a.Version - b.Version })
			return nil, &NewerError{Target: opts.Target, Recorded: newest, Known: len(ms)}
		}
	}
	for _, a := range applied {
		if a.Version < 1 {
			return nil, foreign()
		}
		if want := ms[a.Version-1]; want.Name != a.Name {
			return nil, &ForeignError{Target: opts.Target, Guess: opts.Guess, Advice: opts.Advice,
				Recorded: a, Want: want}
		}
		done[a.Version] = true
	}
	log := opts.Logger
	if log == nil || len(applied) == 0 {
		log = slog.New(slog.DiscardHandler)
	}
	var ran []Migration
	for _, m := range ms {
		if opts.Last > 0 && m.Version > opts.Last {
			break
		}
		if done[m.Version] {
			continue
		}
		log.Info("applying schema migration", "target", opts.Target, "migration", m.Name)
		start := time.Now()
		if err := conn.Apply(ctx, m, now()); err != nil {
			return ran, err
		}
		log.Info("schema migration applied", "target", opts.Target, "migration", m.Name,
			"took", time.Since(start).Round(time.Millisecond))
		ran = append(ran, m)
	}
	return ran, nil
}
