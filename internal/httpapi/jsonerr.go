package httpapi

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// Type errors in JSON terms. encoding/json describes a value of the wrong
// type with Go's names ("cannot unmarshal string into Go struct field
// pushBody.items of type []httpapi.pushItemJSON") and without array indices.
// A client only knows its JSON, so on that error path (never on a good
// request) typeMismatch walks the body again against the Go type it was
// decoded into and names the first value of the wrong type by its path:
// "items[0].queue: expected a string, got a number".

// typeMismatch returns the path and the description of the first value of
// body that does not fit t, in document order; ok is false if every value
// fits (then the caller falls back to encoding/json's field path).
func typeMismatch(body []byte, t reflect.Type) (path, what string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	w := &walker{dec: dec}
	w.value(t, "")
	if w.path == "" && w.what == "" {
		return "", "", false
	}
	return w.path, w.what, true
}

// walker reads one JSON document token by token against a Go type and stops
// at the first mismatch.
type walker struct {
	dec  *json.Decoder
	done bool // a mismatch was found, or the input ended
	path string
	what string
}

// unmarshalerType is implemented by types that decode themselves, such as
// json.RawMessage payloads: any JSON value fits them.
var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

func (w *walker) token() json.Token {
	tok, err := w.dec.Token()
	if err != nil {
		w.done = true
		return nil
	}
	return tok
}

// value checks the next value of the document against t.
func (w *walker) value(t reflect.Type, path string) {
	if w.done {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshalerType) {
		w.skip(w.token())
		return
	}
	tok := w.token()
	if w.done || tok == nil { // null fits every type
		return
	}
	got := jsonKind(tok)
	switch t.Kind() {
	case reflect.String:
		if _, ok := tok.(string); ok {
			return
		}
	case reflect.Bool:
		if _, ok := tok.(bool); ok {
			return
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n, ok := tok.(json.Number); ok {
			if _, err := strconv.ParseInt(string(n), 10, t.Bits()); err == nil {
				return
			}
			got = string(n)
		}
	case reflect.Slice, reflect.Array:
		if tok == json.Delim('[') {
			for i := 0; !w.done && w.dec.More(); i++ {
				w.value(t.Elem(), path+"["+strconv.Itoa(i)+"]")
			}
			w.token() // ]
			return
		}
	case reflect.Struct:
		if tok == json.Delim('{') {
			for !w.done && w.dec.More() {
				key, _ := w.token().(string)
				if f, ok := fieldByJSONName(t, key); ok {
					w.value(f, join(path, key))
				} else {
					w.skip(w.token())
				}
			}
			w.token() // }
			return
		}
	case reflect.Map:
		if tok == json.Delim('{') {
			w.skip(tok)
			return
		}
	}
	w.path, w.what, w.done = path, "expected "+goKind(t)+", got "+got, true
}

// skip consumes the rest of the value that starts with tok.
func (w *walker) skip(tok json.Token) {
	if tok != json.Delim('[') && tok != json.Delim('{') {
		return
	}
	for depth := 1; depth > 0 && !w.done; {
		switch w.token() {
		case json.Delim('['), json.Delim('{'):
			depth++
		case json.Delim(']'), json.Delim('}'):
			depth--
		}
	}
}

// fieldByJSONName finds the field encoding/json decodes key into: an exact
// match of the JSON name first, else a case-insensitive one. Embedded
// structs contribute their fields.
func fieldByJSONName(t reflect.Type, key string) (reflect.Type, bool) {
	var fold reflect.Type
	var visit func(t reflect.Type) (reflect.Type, bool)
	visit = func(t reflect.Type) (reflect.Type, bool) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				if ft, ok := visit(f.Type); ok {
					return ft, true
				}
				continue
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if name == key {
				return f.Type, true
			}
			if fold == nil && strings.EqualFold(name, key) {
				fold = f.Type
			}
		}
		return nil, false
	}
	if ft, ok := visit(t); ok {
		return ft, true
	}
	return fold, fold != nil
}

// jsonKind names the JSON value that starts with tok.
func jsonKind(tok json.Token) string {
	switch tok := tok.(type) {
	case json.Delim:
		if tok == '[' {
			return "an array"
		}
		return "an object"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "null"
}

// goKind names, in JSON terms, what a value of type t must be.
func goKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a JSON value"
}

// join appends a key to a path: "items[0]" + "queue" is "items[0].queue".
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// describeTypeError turns encoding/json's type error into a "bad body: …"
// text in JSON terms.
func describeTypeError(body []byte, v any, typ *json.UnmarshalTypeError) error {
	path, what, ok := typeMismatch(body, reflect.TypeOf(v))
	if !ok {
		// Not expected: the walk and encoding/json disagree. Say what
		// encoding/json saw, still in JSON terms.
		path = typ.Field
		what = "expected " + goKind(typ.Type) + ", got " + valueKind(typ.Value)
	}
	if path == "" {
		return badBody("%s", what)
	}
	return badBody("%s: %s", path, what)
}

// valueKind names the JSON value of encoding/json's UnmarshalTypeError.Value
// ("string", "number 1.5", "array", …).
func valueKind(v string) string {
	kind, _, _ := strings.Cut(v, " ")
	switch kind {
	case "array", "object":
		return "an " + kind
	case "string", "number":
		return "a " + kind
	case "bool":
		return "a boolean"
	}
	return "a JSON value"
}

// valueAt returns the JSON value at path of body: keys joined by dots and
// array indices in brackets ("items[3].queue"; "" is the body itself), keys
// matched as encoding/json matches field names (the last key that equals
// it ignoring case wins). ok is false when there is no such value.
func valueAt(body []byte, path string) (raw json.RawMessage, ok bool) {
	raw = body
	for path != "" {
		var step string
		step, path = cutStep(path)
		if strings.HasPrefix(step, "[") {
			i, err := strconv.Atoi(step[1 : len(step)-1])
			var elems []json.RawMessage
			if err != nil || json.Unmarshal(raw, &elems) != nil || i >= len(elems) {
				return nil, false
			}
			raw = elems[i]
			continue
		}
		if raw, ok = member(raw, step); !ok {
			return nil, false
		}
	}
	return raw, true
}

// cutStep splits the first step off a path: a key, or an index in
// brackets.
func cutStep(path string) (step, rest string) {
	path = strings.TrimPrefix(path, ".")
	if strings.HasPrefix(path, "[") {
		end := strings.IndexByte(path, ']') + 1
		return path[:end], path[end:]
	}
	if end := strings.IndexAny(path, ".["); end >= 0 {
		return path[:end], path[end:]
	}
	return path, ""
}

// member returns the value of key in the JSON object raw, matched as
// encoding/json matches a field name; ok is false when raw is not an
// object or has no such key.
func member(raw json.RawMessage, key string) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var found json.RawMessage
	ok := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		if k, _ := tok.(string); strings.EqualFold(k, key) {
			found, ok = v, true
		}
	}
	return found, ok
}
