package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoServerInside keeps the client light: importing it compiles in the
// standard library and package api, nothing of the server, the engines or
// their drivers.
func TestNoServerInside(t *testing.T) {
	const pkg = "github.com/queen-go/queen/client"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep != pkg && dep != "github.com/queen-go/queen/api" {
			t.Errorf("%s imports %s", pkg, dep)
		}
	}
}
