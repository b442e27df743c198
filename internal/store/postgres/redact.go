package postgres

import "strings"

// maxActivityQuery is how much of a session's redacted SQL text the engine
// statistics answer.
const maxActivityQuery = 200

// redactSQL returns sql with every literal replaced by "?": quoted strings
// ('…' with ” inside, E'…' with backslash escapes, $tag$…$tag$), bit and
// hex strings (B'…', X'…') and numbers; comments are dropped. Identifiers,
// keywords, operators and parameter references ($1) stay, so the text
// still says what a session runs without saying with which values (a
// password in ALTER ROLE, a token in a WHERE clause). A literal cut short
// by PostgreSQL's track_activity_query_size is redacted to the end.
func redactSQL(sql string) string {
	var b strings.Builder
	b.Grow(len(sql))
	n := len(sql)
	for i := 0; i < n; {
		c := sql[i]
		switch {
		case c == '-' && i+1 < n && sql[i+1] == '-': // a line comment
			for i < n && sql[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < n && sql[i+1] == '*': // a block comment, nested as PostgreSQL nests them
			depth := 0
			for i < n {
				if i+1 < n && sql[i] == '/' && sql[i+1] == '*' {
					depth, i = depth+1, i+2
				} else if i+1 < n && sql[i] == '*' && sql[i+1] == '/' {
					depth, i = depth-1, i+2
					if depth == 0 {
						break
					}
				} else {
					i++
				}
			}
			b.WriteByte(' ')
		case c == '\'' || (i+1 < n && sql[i+1] == '\'' && strings.IndexByte("eEbBxXnN", c) >= 0 &&
			(i == 0 || !identByte(sql[i-1]))):
			backslash := c == 'e' || c == 'E'
			if c != '\'' {
				i++
			}
			i++ // the opening quote
			for i < n {
				if backslash && sql[i] == '\\' {
					i += 2
					continue
				}
				if sql[i] == '\'' {
					if i+1 < n && sql[i+1] == '\'' {
						i += 2
						continue
					}
					i++
					break
				}
				i++
			}
			b.WriteByte('?')
		case c == '$' && (i == 0 || !identByte(sql[i-1])):
			if end := dollarTag(sql[i:]); end > 0 { // $tag$ … $tag$
				tag := sql[i : i+end]
				rest := sql[i+end:]
				if j := strings.Index(rest, tag); j >= 0 {
					i += end + j + len(tag)
				} else {
					i = n
				}
				b.WriteByte('?')
				continue
			}
			b.WriteByte(c) // a parameter reference, $1
			i++
			for i < n && sql[i] >= '0' && sql[i] <= '9' {
				b.WriteByte(sql[i])
				i++
			}
		case c == '"': // a quoted identifier stays
			j := i + 1
			for j < n && !(sql[j] == '"' && (j+1 >= n || sql[j+1] != '"')) {
				if sql[j] == '"' {
					j++
				}
				j++
			}
			if j < n {
				j++
			}
			b.WriteString(sql[i:j])
			i = j
		case (c >= '0' && c <= '9' || c == '.' && i+1 < n && sql[i+1] >= '0' && sql[i+1] <= '9') &&
			(i == 0 || !identByte(sql[i-1])):
			for i < n && (identByte(sql[i]) || sql[i] == '.' ||
				(sql[i] == '+' || sql[i] == '-') && (sql[i-1] == 'e' || sql[i-1] == 'E')) {
				i++
			}
			b.WriteByte('?')
		default:
			b.WriteByte(c)
			i++
		}
	}
	out := b.String()
	if len(out) > maxActivityQuery {
		cut := maxActivityQuery
		for cut > 0 && out[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
			cut--
		}
		out = out[:cut]
	}
	return out
}

// identByte reports whether c may be part of an identifier or keyword.
func identByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80 || c == '$'
}

// dollarTag returns the length of the $tag$ (or $$) that opens s, 0 when s
// opens none.
func dollarTag(s string) int {
	for j := 1; j < len(s); j++ {
		switch c := s[j]; {
		case c == '$':
			return j + 1
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80 || j > 1 && c >= '0' && c <= '9':
		default:
			return 0
		}
	}
	return 0
}
