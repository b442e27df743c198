package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
)

// The migration routes (/api/v1/migration/*), with Queen's bodies.

// MigrationTarget names the PostgreSQL database a migration writes to: the
// body of test-connection, start and validate. Host, Database and User are
// required; Port defaults to 5432. The password is used to connect and never
// written back in an answer or a log.
type MigrationTarget struct {
	Host     string `json:"host"`
	Port     Port   `json:"port"`
	Database string `json:"database"`
	User     string `json:"user"`
	Password string `json:"password"`
	SSL      bool   `json:"ssl"`
}

// Port is a TCP port sent as a string (Queen's dashboard sends "5432") or a
// number; "" means the default.
type Port string

// UnmarshalJSON accepts a string, a whole number or null.
func (p *Port) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*p = ""
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*p = Port(s)
		return nil
	}
	n, err := strconv.ParseUint(string(b), 10, 16)
	if err != nil {
		return &json.UnmarshalTypeError{Value: "port " + string(b), Type: reflect.TypeFor[uint16](), Field: "port"}
	}
	*p = Port(strconv.FormatUint(n, 10))
	return nil
}

// MigrationConnection answers POST /api/v1/migration/test-connection, at 200
// whether or not the database answered.
type MigrationConnection struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
	// Version is the target's select version(), on success.
	Version string `json:"version,omitempty"`
	// Error says why the connection failed, without the password.
	Error string `json:"error,omitempty"`
}

// MigrationStart is the body of POST /api/v1/migration/start and
// /validate: the target, and its schema ("" means "queen").
// ExcludeTableData is Queen's list of tables whose rows its pg_dump leaves
// out; this broker copies what a move needs and accepts the field unread.
type MigrationStart struct {
	MigrationTarget
	Schema           string   `json:"schema"`
	ExcludeTableData []string `json:"excludeTableData"`
}

// MigrationStarted answers a start, at 202.
type MigrationStarted struct {
	Status  string `json:"status"` // "started"
	Message string `json:"message"`
}

// MigrationStatus answers GET /api/v1/migration/status.
type MigrationStatus struct {
	// Status is "idle", then Queen's phases of a running copy, "dumping"
	// (preparing: the target checked, the source counted) and "restoring"
	// (writing), then "complete" or "error".
	Status      string `json:"status"`
	CurrentStep string `json:"currentStep,omitempty"`
	// ElapsedSeconds is the time since the start (to the end once ended),
	// to a tenth of a second.
	ElapsedSeconds float64 `json:"elapsedSeconds"`
	Error          string  `json:"error,omitempty"`
	// Messages and TotalMessages say how far the copy of messages is.
	Messages      int64 `json:"messages"`
	TotalMessages int64 `json:"totalMessages"`
}

// MigrationTable is one table's rows at the source and at the target.
type MigrationTable struct {
	Table       string `json:"table"`
	SourceCount int64  `json:"sourceCount"`
	TargetCount int64  `json:"targetCount"`
	Match       bool   `json:"match"`
}

// MigrationValidation answers POST /api/v1/migration/validate.
type MigrationValidation struct {
	Success  bool             `json:"success"`
	AllMatch bool             `json:"allMatch"`
	Tables   []MigrationTable `json:"tables"`
	Error    string           `json:"error,omitempty"`
}

// MigrationReset answers POST /api/v1/migration/reset.
type MigrationReset struct {
	Status  string `json:"status"` // "idle"
	Message string `json:"message"`
}
