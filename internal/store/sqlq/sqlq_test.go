package sqlq

import "testing"

func TestSQLite(t *testing.T) {
	for in, want := range map[string]string{
		`SELECT $1, $12`:               `SELECT ?1, ?12`,
		`json_extract(v, '$[0]') = $2`: `json_extract(v, '$[0]') = ?2`,
		`SELECT ? FROM t WHERE a = ?2`: `SELECT ? FROM t WHERE a = ?2`,
		`SELECT 1`:                     `SELECT 1`,
		`x = $`:                        `x = $`,
	} {
		if got := SQLite(in); got != want {
			t.Errorf("SQLite(%q) = %q, want %q", in, got, want)
		}
	}
}
