package httpapi

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"

	"github.com/queen-go/queen/internal/store"
)

// optionNames are the option keys configure accepts: the JSON names of
// store.QueueOptions, sorted.
var optionNames = func() []string {
	t := reflect.TypeOf(store.QueueOptions{})
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
