package service

import "testing"

type source []Service

func (s source) Services() []Service { return s }

func TestCollectKeepsTheOrderOfSources(t *testing.T) {
	a, b, c := &recorder{name: "a"}, &recorder{name: "b"}, &recorder{name: "c"}
	got := Collect(source{a}, List{b}, source(nil), List{c})
	if len(got) != 3 || got[0] != a || got[1] != b || got[2] != c {
		t.Fatalf("Collect: %v", got)
	}
}
