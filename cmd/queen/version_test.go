package main

import (
	"runtime/debug"
	"testing"
)

func TestResolveVersion(t *testing.T) {
	vcs := func(rev, modified string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified},
		}}
	}
	const rev = "c459d16f0a1b2c3d4e5f60718293a4b5c6d7e8f9"
	for _, tc := range []struct {
		name   string
		linked string
		info   *debug.BuildInfo
		want   buildVersion
	}{
		{"no build information", "", nil, buildVersion{Version: "devel"}},
		{"devel", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, buildVersion{Version: "devel"}},
		{"module version", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, buildVersion{Version: "v1.4.0"}},
		{"checkout", "", vcs(rev, "false"), buildVersion{Version: "c459d16f0a1b", Revision: rev}},
		{"modified checkout", "", vcs(rev, "true"), buildVersion{Version: "c459d16f0a1b+dirty", Revision: rev, Modified: true}},
		{"linked wins", "1.2.3", vcs(rev, "true"), buildVersion{Version: "1.2.3", Revision: rev, Modified: true}},
	} {
		if got := resolveVersion(tc.linked, tc.info); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
