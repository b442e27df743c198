package metrics

// Values gathers the registry (not the per-queue families) and returns
// each counter and gauge family's value, summed over its series: the JSON
// snapshot reads the same figures as /metrics/prometheus.
func (m *Metrics) Values() (map[string]float64, error) {
	mfs, err := m.Registry.Gather()
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(mfs))
	for _, mf := range mfs {
		var sum float64
		for _, s := range mf.Metric {
			switch {
			case s.Counter != nil:
				sum += s.Counter.GetValue()
			case s.Gauge != nil:
				sum += s.Gauge.GetValue()
			case s.Untyped != nil:
				sum += s.Untyped.GetValue()
			}
		}
		out[mf.GetName()] = sum
	}
	return out, nil
}
