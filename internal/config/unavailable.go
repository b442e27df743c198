package config

import (
	"fmt"
	"strconv"
	"strings"
)

// unavailable lists Queen settings whose feature this version does not have
// yet. Start-up refuses them: a broker asked for encryption must not quietly
// run without it. Remove a row when its feature
// lands (and add its setting to the table in config.go).
var unavailable = []struct {
	env     string
	feature string // what the setting asks for, as the subject of "is not available"
	hint    string // what to do instead, besides unsetting it
	onlyOn  bool   // refused only when switched on (a boolean), else whenever set
	secret  bool   // never echo the value
}{
	// Empty: every Queen setting this version reads is implemented.
}

// Unavailable lists, for help, the settings start-up refuses because this
// version does not implement them yet: "JWT_ENABLED=true" for switches,
// the bare name for settings refused whenever set.
func Unavailable() []string {
	var names []string
	for _, u := range unavailable {
		if u.onlyOn {
			names = append(names, u.env+"=true")
		} else {
			names = append(names, u.env)
		}
	}
	return names
}

// refuseUnavailable returns one error per unavailable setting getenv has.
func refuseUnavailable(getenv func(string) string) []error {
	var errs []error
	for _, u := range unavailable {
		v := strings.TrimSpace(getenv(u.env))
		if v == "" {
			continue
		}
		// A switch is on unless it reads as false, so that JWT_ENABLED=yes
		// is refused rather than taken for "no".
		if on, err := strconv.ParseBool(v); u.onlyOn && err == nil && !on {
			continue
		}
		what := fmt.Sprintf("%s=%s", u.env, v)
		if u.secret {
			what = u.env + " is set"
		}
		todo := "unset " + u.env
		if u.hint != "" {
			todo = u.hint + ", and " + todo
		}
		errs = append(errs, fmt.Errorf("%s: %s is not available in this version yet; %s", what, u.feature, todo))
	}
	return errs
}
