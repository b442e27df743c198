package service

// Source brings services: a feature's sweeper, the broker's maintenance
// loops. The server gathers its sources in one list instead of
// concatenating their services by hand.
type Source interface {
	Services() []Service
}

// List is a Source of the services it holds.
type List []Service

// Services returns the list.
func (l List) Services() []Service { return l }

// Collect returns the services of every source, in order.
func Collect(sources ...Source) []Service {
	var out []Service
	for _, s := range sources {
		out = append(out, s.Services()...)
	}
	return out
}
