package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version overrides the version found in the build information. Release
// builds set it at link time:
//
//	go build -ldflags "-X main.version=1.2.3" ./cmd/queen
var version string

// buildVersion is what `queen version` prints; Version is also what /health
// reports.
type buildVersion struct {
	Version  string // linked version, else module version, else VCS revision, else "devel"
	Revision string // VCS revision the binary was built from; "" if unknown
	Modified bool   // the checkout had uncommitted changes
}

// currentVersion reads this binary's version.
func currentVersion() buildVersion {
	info, _ := debug.ReadBuildInfo()
	return resolveVersion(version, info)
}

// resolveVersion picks the version: the linked one if set; else the module
// version, which `go install …@v1.2.3` records (and go build in a checkout,
// as a pseudo-version, since Go 1.24); else the VCS revision, with +dirty
// for a modified checkout; else "devel".
func resolveVersion(linked string, info *debug.BuildInfo) buildVersion {
	var v buildVersion
	if info != nil {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	switch {
	case linked != "":
		v.Version = linked
	case info != nil && info.Main.Version != "" && info.Main.Version != "(devel)":
		v.Version = info.Main.Version
	case v.Revision != "":
		v.Version = v.Revision[:min(12, len(v.Revision))]
		if v.Modified {
			v.Version += "+dirty"
		}
	default:
		v.Version = "devel"
	}
	return v
}

// print writes the version report of `queen version`.
func (v buildVersion) print(w io.Writer) {
	fmt.Fprintf(w, "queen %s\n", v.Version)
	fmt.Fprintf(w, "built with %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	switch {
	case v.Revision == "":
		fmt.Fprintln(w, "revision unknown")
	case v.Modified:
		fmt.Fprintf(w, "revision %s (modified)\n", v.Revision)
	default:
		fmt.Fprintf(w, "revision %s\n", v.Revision)
	}
}
