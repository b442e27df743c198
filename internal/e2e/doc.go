// Package e2e holds end-to-end tests of the broker on its PostgreSQL engine:
// several in-process brokers sharing one database over real sockets, and a
// database outage staged with a TCP proxy that can cut the broker off, under
// load and at start-up. The start-up test runs the real binary, which the
// package builds once per run (with -race when the tests have it).
//
// The tests need a PostgreSQL server; they skip without one:
//
//	export QUEEN_TEST_DATABASE_URL=$(bash .ci/pg.sh | tail -1)
//	go test -race -count=1 ./internal/e2e/
//
// With QUEEN_REQUIRE_POSTGRES set (as in CI) a missing database fails them
// instead. Each test works in its own throw-away schema.
package e2e
