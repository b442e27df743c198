package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/httpapi"
)

// TestOpenAPIDescribesAnswers drives every route through the success and
// error answers it documents, on a real broker over the embedded engine, and
// validates each exchange against openapi.json: the answer's status, headers
// and body always; the request too when it succeeded (the document must
// accept what real clients send). A hand-maintained document drifts; this
// keeps it honest.
func TestOpenAPIDescribesAnswers(t *testing.T) {
	c := newOpenAPIFixture(t, broker.Config{}).serve(httpapi.Config{MaxBodyBytes: 4096})

	q := "orders.invoices"
	qp := "/api/v1/pop/queue/" + url.PathEscape(q)

	c.want(201, "POST", "/api/v1/push", `{"items":[{"queue":"`+q+`","partition":"p1","transactionId":"t1","payload":{"n":1}},`+
		`{"queue":"`+q+`","partition":"p1","transactionId":"t1","payload":{"n":1}},{"queue":"`+q+`","payload":null,"traceId":"x"}]}`)
	c.want(201, "POST", "/api/v1/push", `{"items":[]}`)
	c.want(400, "POST", "/api/v1/push", `{"items":"x"}`)
	c.want(400, "POST", "/api/v1/push", `{`)
	c.want(413, "POST", "/api/v1/push", `{"items":[{"queue":"q","payload":"`+strings.Repeat("x", 5000)+`"}]}`)

	var pop struct {
		LeaseID  string
		Messages []struct{ TransactionID, PartitionID string }
	}
	c.decode(c.want(200, "GET", qp+"/partition/p1?batch=10&wait=false", ""), &pop)
	c.want(204, "GET", qp+"/partition/p1", "")
	c.want(400, "GET", qp+"?batch=abc", "")
	c.want(200, "GET", "/api/v1/pop?namespace=orders&task=invoices&autoAck=true&partitions=2", "")
	c.want(204, "GET", "/api/v1/pop?namespace=orders", "")
	c.want(400, "GET", "/api/v1/pop", "")
	c.want(204, "GET", qp+"?consumerGroup=g&subscriptionMode=new&wait=true&timeout=10", "")
	c.want(204, "GET", qp+"?consumerGroup=h&subscriptionFrom=now", "")

	lease := "/api/v1/lease/" + pop.LeaseID + "/extend"
	c.want(200, "POST", lease, `{"seconds":30}`)
	c.want(200, "POST", lease, ``)
	c.want(200, "POST", "/api/v1/lease/nope/extend", `{}`)
	c.want(400, "POST", lease, `{"seconds":"x"}`)

	m := pop.Messages[0]
	ack := `{"transactionId":"` + m.TransactionID + `","partitionId":"` + m.PartitionID + `","leaseId":"` + pop.LeaseID + `"`
	c.want(200, "POST", "/api/v1/ack", ack+`,"status":"retry"}`)
	c.want(200, "POST", "/api/v1/ack", ack+`,"status":"completed","consumerGroup":"__QUEUE_MODE__","error":null}`)
	c.want(200, "POST", "/api/v1/ack/batch", `{"consumerGroup":"g","acknowledgments":[`+ack+`},{"transactionId":"nope","partitionId":"`+m.PartitionID+`","status":"failed"}]}`)
	c.want(400, "POST", "/api/v1/ack", `{"transactionId":"t"}`)
	c.want(400, "POST", "/api/v1/ack/batch", `{}`)

	c.want(201, "POST", "/api/v1/push", `{"items":[{"queue":"tx-src","payload":1}]}`)
	c.decode(c.want(200, "GET", "/api/v1/pop/queue/tx-src", ""), &pop)
	m = pop.Messages[0]
	c.want(200, "POST", "/api/v1/transaction", `{"operations":[{"type":"push","items":[{"queue":"tx-dst","payload":{"v":2}}]},`+
		`{"type":"ack","transactionId":"`+m.TransactionID+`","partitionId":"`+m.PartitionID+`","leaseId":"`+pop.LeaseID+`"}],`+
		`"requiredLeases":["`+pop.LeaseID+`"]}`)
	c.want(200, "POST", "/api/v1/transaction", `{"operations":[{"type":"push","items":[{"queue":"tx-dst","payload":1}]}],"requiredLeases":["gone"]}`)
	c.want(400, "POST", "/api/v1/transaction", `{"operations":[]}`)
	c.want(400, "POST", "/api/v1/transaction", `{"operations":[{"type":"pop"}]}`)

	c.want(200, "POST", "/api/v1/configure", `{"queue":"cfg","namespace":"ns","task":"t","options":{"leaseTime":10,"priority":2}}`)
	c.want(200, "POST", "/api/v1/configure", `{"queue":"cfg2","options":null}`)
	c.want(400, "POST", "/api/v1/configure", `{"queue":"cfg","options":{"leaseTime":"x"}}`)
	c.want(200, "DELETE", "/api/v1/resources/queues/cfg", "")
	c.want(200, "DELETE", "/api/v1/resources/queues/cfg", "")

	c.want(200, "GET", "/api/v1/system/maintenance", "")
	c.want(400, "POST", "/api/v1/system/maintenance", `{}`)
	c.want(200, "GET", "/api/v1/system/maintenance/pop", "")
	c.want(200, "POST", "/api/v1/system/maintenance/pop", `{"enabled":true}`)
	c.want(204, "GET", qp, "")
	c.want(200, "POST", "/api/v1/system/maintenance/pop", `{"enabled":false}`)

	c.want(200, "GET", "/api/v1/system/shared-state", "")
	c.want(200, "GET", "/internal/api/shared-state/stats", "")
	c.want(200, "GET", "/internal/api/inter-instance/stats", "")
	c.want(200, "POST", "/internal/api/notify", `{"queue":"`+q+`","partition":"p1"}`)
	c.want(400, "POST", "/internal/api/notify", `{}`)
	c.want(400, "POST", "/internal/api/notify", `{`)
	c.want(400, "POST", "/api/v1/migration/test-connection", `{"host":"127.0.0.1"}`)
	c.want(400, "POST", "/api/v1/migration/test-connection", `{"host":"h","database":"d","user":"u","port":true}`)

	c.want(200, "GET", "/health", "")
	c.want(200, "GET", "/metrics", "")
	c.want(200, "GET", "/metrics/prometheus", "")
	c.want(200, "GET", "/api/v1/openapi.json", "")
	c.want(200, "POST", "/api/v1/system/maintenance", `{"enabled":false}`)

	// Not in the document, answered by the fallback in its documented shape.
	c.want(404, "GET", "/api/v1/push", "")
	c.want(404, "POST", "/api/v1/nope", `{}`)
}

// fetchOpenAPI loads the document the package embeds.
func fetchOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	rec := httptest.NewRecorder()
	httpapi.New(httpapi.Config{}).ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/openapi.json", nil))
	doc, err := openapi3.NewLoader().LoadFromData(rec.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// validating serves h and validates every exchange against the document.
func validating(t *testing.T, doc *openapi3.T, router routers.Router, h http.Handler) http.Handler {
	noSuchRoute := doc.Components.Schemas["NoSuchRoute"].Value
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqBody, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(reqBody))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())

		what := r.Method + " " + r.URL.String()
		check := r.Clone(context.Background())
		check.Body = io.NopCloser(bytes.NewReader(reqBody))
		route, params, err := router.FindRoute(check)
		if err != nil {
			// The fallback: its answer is the NoSuchRoute schema.
			var v any
			_ = json.Unmarshal(rec.Body.Bytes(), &v)
			if rec.Code != http.StatusNotFound || noSuchRoute.VisitJSON(v) != nil {
				t.Errorf("%s: not in openapi.json (%v), answered %d %s", what, err, rec.Code, rec.Body)
			}
			return
		}
		opts := &openapi3filter.Options{IncludeResponseStatus: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}
		in := &openapi3filter.RequestValidationInput{Request: check, PathParams: params, Route: route, Options: opts}
		if rec.Code < 300 {
			if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
				t.Errorf("%s: the document refuses a request the broker served: %v\nbody %s", what, err, reqBody)
			}
		}
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: rec.Code,
			Header: rec.Header(), Options: opts}
		out.SetBodyBytes(rec.Body.Bytes())
		if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
			t.Errorf("%s: answer %d does not match the document: %v\nbody %s", what, rec.Code, err, rec.Body)
		}
	})
}

type caller struct {
	t    *testing.T
	base string
}

// want sends a request and requires the status; it returns the body.
func (c *caller) want(status int, method, path, body string) []byte {
	c.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		c.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, resp.StatusCode, status, data)
	}
	return data
}

func (c *caller) decode(data []byte, v any) {
	c.t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		c.t.Fatalf("decode %s: %v", data, err)
	}
}
