package api_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/queen-go/queen/api"
)

func TestErrorsMatchByCode(t *testing.T) {
	err := fmt.Errorf("kv: %w", api.ErrNotFound.With("key not found"))
	if !errors.Is(err, api.ErrNotFound) {
		t.Error("a not_found with another text is not errors.Is ErrNotFound")
	}
	if errors.Is(err, api.ErrMessageNotFound) {
		t.Error("not_found matches message_not_found")
	}
	cause := errors.New("driver said no")
	e := api.ErrUnavailable.WithCause(cause)
	if !errors.Is(e, cause) || e.Message != api.ErrUnavailable.Message {
		t.Errorf("WithCause: %v, %q", errors.Is(e, cause), e.Message)
	}
	if api.ErrRateLimited.WithRetryAfter(3).RetryAfter != 3 || api.ErrRateLimited.RetryAfter != 0 {
		t.Error("WithRetryAfter changed the catalogue's row")
	}
}

// TestCatalogue: codes are unique, statuses are errors, and an answer of
// any row read back by a client (status, text, body code) is that row.
func TestCatalogue(t *testing.T) {
	seen := map[api.Code]bool{}
	for _, row := range api.Catalogue() {
		if seen[row.Code] || row.Code == "" {
			t.Errorf("code %q is empty or listed twice", row.Code)
		}
		seen[row.Code] = true
		if row.Status < 400 || row.Status > 599 || row.Message == "" {
			t.Errorf("%s: status %d, text %q", row.Code, row.Status, row.Message)
		}
		code := ""
		if row.Code == api.CodeNoSuchRoute {
			code = string(row.Code)
		}
		if got := api.ErrorFor(row.Status, row.Message, code); got.Code != row.Code && !sharedText(row) {
			t.Errorf("ErrorFor(%d, %q) is %s, want %s", row.Status, row.Message, got.Code, row.Code)
		}
	}
}

// sharedText reports rows whose usual text another row of the same status
// also answers with, which only the route tells apart.
func sharedText(row api.Error) bool {
	return row.Code == api.CodeKVConflict && row.Message == api.KVReasonExpectation
}

func TestErrorForVaryingTexts(t *testing.T) {
	for _, tc := range []struct {
		status int
		msg    string
		want   api.Code
	}{
		{400, "bad body: items[0].queue is missing", api.CodeBadRequest},
		{401, "Token has expired", api.CodeUnauthorized},
		{403, "timers disabled", api.CodeFeatureDisabled},
		{403, "kv disabled for tenant", api.CodeFeatureDisabled},
		{404, "Queue not found", api.CodeNotFound},
		{404, "Message not found", api.CodeMessageNotFound},
		{413, "request body too large: the limit is 10 bytes (QUEEN_MAX_BODY_BYTES)", api.CodeBodyTooLarge},
		{413, "too many operations: 101, the limit is 100 (QUEEN_KV_MAX_OPS)", api.CodeLimitExceeded},
		{503, "kv unavailable: database unavailable", api.CodeFeatureUnavailable},
		{503, "database unavailable; try again shortly", api.CodeUnavailable},
		{418, "teapot", "http_418"},
	} {
		if got := api.ErrorFor(tc.status, tc.msg, ""); got.Code != tc.want || got.Status != tc.status || got.Message != tc.msg {
			t.Errorf("ErrorFor(%d, %q) = %s %d %q, want %s", tc.status, tc.msg, got.Code, got.Status, got.Message, tc.want)
		}
	}
}
