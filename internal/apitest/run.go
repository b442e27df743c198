package apitest

import (
	"testing"

	"github.com/queen-go/queen/internal/store"
)

// Run runs the whole black-box suite against servers built on stores from
// newStore (a fresh, empty store per call).
//
// Topics run one after the other; the tests of one topic run in parallel,
// each on its own server. Long polling (latency-sensitive) and the
// concurrency test therefore never share the machine with other topics.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	s := &suite{newStore: newStore}
	topics := []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"Conventions", s.testConventions},
		{"Push", s.testPush},
		{"Pop", s.testPop},
		{"ConsumerGroups", s.testGroups},
		{"Ack", s.testAck},
		{"Lease", s.testLease},
		{"Transaction", s.testTransaction},
		{"Configure", s.testConfigure},
		{"Maintenance", s.testMaintenance},
		{"SharedState", s.testSharedState}, // sharedstate.go
		{"Migration", s.testMigration},     // migration.go
		{"Resources", s.testResources},
		{"GroupAdmin", s.testGroupAdmin},
		{"Messages", s.testMessages},
		{"DLQ", s.testDLQ},
		{"Traces", s.testTraces},
		{"Status", s.testStatus},
		{"Analytics", s.testAnalytics},
		{"Metrics", s.testMetrics},
		{"Streams", s.testStreams},
		{"StreamPipelines", s.testStreamPipelines}, // streamspipe.go
		{"BadInput", s.testBadInput},
		{"Options", s.testOptions}, // options.go
		{"Sealing", s.testSealing}, // sealing.go
		{"Auth", s.testAuth},
		{"Security", s.testSecurity},         // security.go
		{"KV", s.testKV},                     // kv.go
		{"Timers", s.testTimers},             // timers.go
		{"Ephemeral", s.testEphemeral},       // ephemeral.go
		{"Ingress", s.testIngress},           // ingress.go
		{"FeatureGates", s.testFeatureGates}, // ratelimit.go
		{"LongPoll", s.testLongPoll},
		{"SeekWake", s.testSeekWake},
		{"Concurrency", s.testConcurrency},
	}
	for _, topic := range topics {
		t.Run(topic.name, topic.fn)
	}
}
