// Package sqlq is what the two engines' SQL has in common, so that the
// reads and writes an entity does alike on both are written once over Q
// (timersql, tracesql, …) and each engine supplies only what is its own:
// the statements that differ in dialect, its locks, its connections and how
// it classifies an error. Statements are in PostgreSQL's numbered form
// ($1); SQLite reads the same numbers as ?1.
package sqlq

import "strings"

// Row is a row to scan.
type Row interface{ Scan(dest ...any) error }

// Q runs statements on one engine, in a transaction or on its read
// connections.
type Q interface {
	// Row runs a statement that returns at most one row. Its Scan returns
	// store.ErrNotFound when there is none.
	Row(query string, args ...any) Row
	// Each runs a statement and calls fn for each of its rows, in order,
	// stopping at the first error.
	Each(query string, args []any, fn func(Row) error) error
	// Exec runs a statement and returns how many rows it changed.
	Exec(query string, args ...any) (int64, error)
}

// SQLite returns q with SQLite's numbered parameters (?1 for $1). A $ not
// followed by a digit (a JSON path, '$[0]') stays, as does a statement
// already in SQLite's form.
func SQLite(q string) string {
	if !strings.Contains(q, "$") {
		return q
	}
	b := []byte(q)
	for i := 0; i+1 < len(b); i++ {
		if b[i] == '$' && b[i+1] >= '0' && b[i+1] <= '9' {
			b[i] = '?'
		}
	}
	return string(b)
}

// Collect runs a statement on q and returns its rows as scan reads them, in
// order: the read of a bounded page, whole before the caller acts on it.
func Collect[T any](q Q, query string, args []any, scan func(Row) (T, error)) ([]T, error) {
	var out []T
	err := q.Each(query, args, func(r Row) error {
		v, err := scan(r)
		if err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	return out, err
}
