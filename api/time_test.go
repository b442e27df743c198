package api_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/queen-go/queen/api"
)

func TestTimeIsQueensFormat(t *testing.T) {
	at := time.Date(2026, 7, 30, 11, 12, 44, 31_400_000, time.FixedZone("x", 2*3600))
	b, err := json.Marshal(struct {
		At    api.Time  `json:"at"`
		Maybe *api.Time `json:"maybe"`
	}{At: api.TimeOf(at), Maybe: api.TimeOrNil(time.Time{})})
	if err != nil || string(b) != `{"at":"2026-07-30T09:12:44.031Z","maybe":null}` {
		t.Fatalf("got %s, %v", b, err)
	}
	var back struct {
		At api.Time `json:"at"`
	}
	if err := json.Unmarshal(b, &back); err != nil || !back.At.Equal(at.Truncate(time.Millisecond)) {
		t.Fatalf("read back %v, %v", back.At, err)
	}
	if err := json.Unmarshal([]byte(`{"at":1}`), &back); err == nil {
		t.Error("a number read as a time")
	}
}
