package transfer

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store/postgres/pgtest"
)

// TestConnection reaches the test database and reports its version; with
// a wrong password it fails, and the error never holds the password.
func TestTestConnection(t *testing.T) {
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	target := api.MigrationTarget{Host: u.Hostname(), Port: api.Port(u.Port()), Database: strings.TrimPrefix(u.Path, "/"),
		User: u.User.Username(), Password: pw}
	version, err := Service{}.TestConnection(context.Background(), target)
	if err != nil || !strings.HasPrefix(version, "PostgreSQL") {
		t.Fatalf("TestConnection = %q, %v; want PostgreSQL's version", version, err)
	}
	target.Database = "no_such_database_i26"
	target.Password = "s3cret-never-shown"
	if _, err := (Service{}).TestConnection(context.Background(), target); err == nil {
		t.Fatal("a database that does not exist connected")
	} else if strings.Contains(err.Error(), target.Password) {
		t.Fatalf("the error shows the password: %v", err)
	}
	target.Port = "70000"
	if _, err := (Service{}).TestConnection(context.Background(), target); err == nil || !strings.Contains(err.Error(), "not a TCP port") {
		t.Fatalf("port 70000: %v", err)
	}
}
