package api_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStandardLibraryOnly keeps the wire package importable by any client:
// everything it imports, directly or not, is the standard library's.
func TestStandardLibraryOnly(t *testing.T) {
	const pkg = "github.com/queen-go/queen/api"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep != pkg {
			t.Errorf("%s imports %s, which is not the standard library", pkg, dep)
		}
	}
}
