package authnmetrics

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/component-base/metrics/testutil"
)

// A 2xx answer counts as a success; another status, or a service that cannot be reached, as an error.
func TestTransportCounts(t *testing.T) {
	RegisterMetrics() // component-base metrics count nothing until registered
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }))
	client := &http.Client{Transport: Transport(KindWebhook, nil)}
	count := func(result string) float64 {
		v, err := testutil.GetCounterMetricValue(requests.WithLabelValues(KindWebhook, result))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	get := func() {
		if resp, err := client.Get(srv.URL); err == nil {
			resp.Body.Close()
		}
	}

	get()
	status = http.StatusInternalServerError
	get()
	srv.Close()
	get()
	if s, e := count("success"), count("error"); s != 1 || e != 2 {
		t.Errorf("success %v, error %v; want 1 and 2", s, e)
	}
	if v, _ := testutil.GetCounterMetricValue(requests.WithLabelValues(KindJWT, "error")); v != 0 {
		t.Errorf("JWTAuthenticator errors %v, want 0: another kind's requests were counted as its", v)
	}
}
