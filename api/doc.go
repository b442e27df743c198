// Package api is Queen's HTTP/JSON wire format as queen-go speaks it: the
// request and response bodies of every route, the texts clients read, the
// catalogue of error codes, and the verdicts of pushes and acks. The broker
// encodes from these types and decodes into them; a Go client can do the
// same. The package imports the standard library only, so that a client
// importing it takes no server dependency (a test keeps it so).
//
// The JSON keys are Queen's, casing quirks included (a push verdict's
// message_id beside queueName). Field types follow a few rules:
//   - A required string or slice is a plain value; the broker tells a field
//     that is absent from one that is empty only in its error text.
//   - A field is a pointer when the contract gives its absence a meaning of
//     its own: a default other than the zero value (ReleaseLease), or no
//     condition at all (KVExpect.Version).
//   - In answers, a value Queen sends as null when unknown is a pointer
//     (nil is null), and times are Time, which encodes as Queen does:
//     RFC 3339 in UTC with milliseconds.
//   - Payloads, values and other client JSON are json.RawMessage: the broker
//     stores them as sent, compacted.
//
// Errors are answered {"error": "<text>"}, except where a route's contract
// has a body of its own (a transaction's 400, a key/value conflict). The
// body carries no code; Error and ErrorFor recover one from the status and
// the text (see Catalogue).
package api
