package apitest

import (
	"strconv"
	"testing"

	"github.com/queen-go/queen/internal/store/enginetest"
)

// The benchmarks and measurements of the HTTP API (docs/benchmarks.md)
// run on every engine of the table. They are test code of this package, not
// part of the black-box suite that the engines' tests import:
//
//	go test -run '^$' -bench 'HTTPPush/postgres' ./internal/apitest/
//
// The measurements are in measure_test.go.

func TestMain(m *testing.M) { enginetest.Main(m) }

// BenchmarkHTTPPush pushes over HTTP in batches of 1, 10 and 100.
func BenchmarkHTTPPush(b *testing.B) {
	enginetest.RunB(b, func(b *testing.B, e enginetest.Engine) {
		for _, batch := range []int{1, 10, 100} {
			b.Run("batch="+strconv.Itoa(batch), func(b *testing.B) { benchPush(b, e.Store, batch) })
		}
	})
}

// BenchmarkHTTPPopAck pops and acks over HTTP.
func BenchmarkHTTPPopAck(b *testing.B) {
	enginetest.RunB(b, func(b *testing.B, e enginetest.Engine) { benchPopAck(b, e.Store) })
}
