package metricstest

import (
	"maps"
	"testing"
)

// TestSum: series are added up by the key their labels make, the left-out ones are not, and a
// histogram counts its sum of observations.
func TestSum(t *testing.T) {
	families, err := Parse([]byte(`# TYPE requests_total counter
requests_total{verb="GET",resource="secrets"} 3
requests_total{verb="GET",resource="configmaps"} 4
requests_total{verb="PUT",resource="secrets"} 2
requests_total{verb="PUT",resource="leases"} 9
# TYPE request_seconds histogram
request_seconds_bucket{verb="GET",le="1"} 2
request_seconds_bucket{verb="GET",le="+Inf"} 2
request_seconds_sum{verb="GET"} 0.25
request_seconds_count{verb="GET"} 2
`))
	if err != nil {
		t.Fatal(err)
	}
	byVerb := func(l map[string]string) (string, bool) { return l["verb"], l["resource"] != "leases" }
	if got, want := Sum(families, "requests_total", byVerb), map[string]float64{"GET": 7, "PUT": 2}; !maps.Equal(got, want) {
		t.Errorf("requests by verb: %v, want %v", got, want)
	}
	if got, want := Sum(families, "request_seconds", byVerb), map[string]float64{"GET": 0.25}; !maps.Equal(got, want) {
		t.Errorf("seconds by verb: %v, want %v", got, want)
	}
	if got := Sum(families, "absent", byVerb); len(got) != 0 {
		t.Errorf("a family not served sums to %v, want nothing", got)
	}
	if _, err := Parse([]byte("requests_total{verb=\"GET\" 3\n")); err == nil {
		t.Error("malformed text parsed")
	}
}
