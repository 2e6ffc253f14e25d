package impersonator

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
)

// The proxy's metrics count each request by verb, group and code, time the short ones, hold the
// in-flight gauges while a request runs, and see an upgraded stream as 101.
func TestMetricsFilter(t *testing.T) {
	RegisterMetrics() // component-base metrics count nothing until registered
	gauge := func(kind string) float64 {
		v, err := testutil.GetGaugeMetricValue(inFlight.WithLabelValues(kind))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	var seen map[string]float64
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = map[string]float64{"short": gauge("short"), "long-running": gauge("long-running")}
		switch r.URL.Path {
		case "/api/v1/namespaces/ns/pods/p/exec":
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = conn.Write([]byte("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n"))
			_ = conn.Close()
		case "/apis/apps/v1/namespaces/ns/deployments":
			w.WriteHeader(http.StatusForbidden)
		default:
			_, _ = w.Write([]byte("{}"))
		}
	})
	resolver := &genericapirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
	server := httptest.NewServer(genericapifilters.WithRequestInfo(withMetrics(inner), resolver))
	defer server.Close()

	count := func(verb, group, code string) float64 {
		v, err := testutil.GetCounterMetricValue(requests.WithLabelValues(verb, group, code))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	timed := func(verb, group string) uint64 {
		n, err := testutil.GetHistogramMetricCount(requestDuration.WithLabelValues(verb, group))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, c := range []struct {
		method, path, verb, group, code, kind string
		timed                                 bool
	}{
		{http.MethodGet, "/apis/apps/v1/namespaces/ns/deployments", "list", "unknown", "403", "short", true},
		{http.MethodGet, "/apis/apps/v1/namespaces/ns/deployments/d", "get", "apps", "200", "short", true},
		{http.MethodGet, "/api/v1/namespaces/ns/pods?watch=true", "watch", "", "200", "long-running", false},
		{http.MethodPost, "/api/v1/namespaces/ns/pods/p/exec", "create", "", "101", "long-running", false},
		{http.MethodGet, "/healthz", "get", "", "200", "short", true},
	} {
		countBefore, timedBefore := count(c.verb, c.group, c.code), timed(c.verb, c.group)
		req, err := http.NewRequest(c.method, server.URL+c.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", c.method, c.path, err)
		}
		_ = resp.Body.Close()
		// A hijacked connection's client reads the 101 before the handler returns and the request
		// is counted: wait for it, a little.
		for deadline := time.Now().Add(5 * time.Second); count(c.verb, c.group, c.code) == countBefore && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		if got := count(c.verb, c.group, c.code) - countBefore; got != 1 {
			t.Errorf("%s %s: requests{verb=%s,group=%q,code=%s} grew by %v, want 1", c.method, c.path, c.verb, c.group, c.code, got)
		}
		if got := timed(c.verb, c.group) - timedBefore; (got == 1) != c.timed {
			t.Errorf("%s %s: %d durations observed, want timed=%v", c.method, c.path, got, c.timed)
		}
		if seen[c.kind] != 1 {
			t.Errorf("%s %s: in flight while it ran: %v, want 1 %s", c.method, c.path, seen, c.kind)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); gauge("long-running") != 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if gauge("short") != 0 || gauge("long-running") != 0 {
		t.Errorf("in flight after every request ended: short %v, long-running %v", gauge("short"), gauge("long-running"))
	}
}

// A client that sends made-up methods and API groups, authenticated or not, adds no series:
// the verb and group labels stay within what the cluster bounds.
func TestMetricsLabelsBoundedAgainstMadeUpRequests(t *testing.T) {
	RegisterMetrics()
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/apis/made-up") {
			w.WriteHeader(http.StatusNotFound) // as the kube-apiserver answers a group it does not serve
			return
		}
		w.WriteHeader(http.StatusForbidden)
	})
	resolver := &genericapirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
	server := httptest.NewServer(genericapifilters.WithRequestInfo(withMetrics(inner), resolver))
	defer server.Close()
	series := func() int {
		families, err := legacyregistry.DefaultGatherer.Gather()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, f := range families {
			if strings.HasPrefix(f.GetName(), "pinniped_concierge_impersonation_proxy_request") {
				n += len(f.Metric)
			}
		}
		return n
	}
	send := func(i int) {
		for _, req := range []struct{ method, path string }{
			{"GET", fmt.Sprintf("/apis/made-up-%d.example.com/v1/things", i)},
			{fmt.Sprintf("VERB%d", i), "/api/v1/pods"},
			{fmt.Sprintf("VERB%d", i), fmt.Sprintf("/not-a-resource-%d", i)},
			{"PATCH", fmt.Sprintf("/apis/forbidden-%d.example.com/v1/namespaces/ns/things/x", i)},
		} {
			r, err := http.NewRequest(req.method, server.URL+req.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
		}
	}
	send(0) // the bounded series these requests make
	before := series()
	for i := 1; i <= 100; i++ {
		send(i)
	}
	if after := series(); after != before {
		t.Errorf("100 rounds of made-up methods and groups made %d new series", after-before)
	}
}
