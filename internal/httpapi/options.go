package httpapi

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
)

// optionNames are the option keys configure accepts: the JSON names of
// api.QueueOptions, sorted.
var optionNames = func() []string {
	t := reflect.TypeOf(api.QueueOptions{})
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}()

// checkOptionNames refuses a configure body whose options name an option
// that does not exist: a misspelt option would otherwise be ignored, and the
// queue silently configured without it. Names match as the decoder matches
// them (case-insensitively); the body has already decoded.
func checkOptionNames(body []byte) error {
	var b struct {
		Options map[string]json.RawMessage `json:"options"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return nil // options is null or absent: the decoder said so already
	}
	unknown := make([]string, 0)
	for key := range b.Options {
		known := false
		for _, name := range optionNames {
			if strings.EqualFold(key, name) {
				known = true
				break
			}
		}
		if !known {
			unknown = append(unknown, key)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return badBody("options.%s: unknown option (options are %s)", unknown[0], strings.Join(optionNames, ", "))
}

// optionGiven reports whether a configure body's options name the option
// (matched as the decoder matches names, case-insensitively), whatever its
// value.
func optionGiven(body []byte, name string) bool {
	var b struct {
		Options map[string]json.RawMessage `json:"options"`
	}
	if json.Unmarshal(body, &b) != nil {
		return false
	}
	for key := range b.Options {
		if strings.EqualFold(key, name) {
			return true
		}
	}
	return false
}

// wireOptions is a queue's options as the wire carries them, and
// storeOptions the store's form of options read from the wire. The two
// types have the same fields today, so a conversion maps them; when one
// changes, the conversion stops compiling and becomes a mapping here.
func wireOptions(o store.QueueOptions) api.QueueOptions { return api.QueueOptions(o) }

func storeOptions(o api.QueueOptions) store.QueueOptions { return store.QueueOptions(o) }
