package impersonator

import (
	"crypto/tls"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

const (
	clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID  = "00f067aa0ba902b7"
	clientParent  = "00-" + clientTraceID + "-" + clientSpanID + "-01"
)

// tracedProxy is the test proxy tracing as a Concierge configured with tracing and no sampling
// rate of its own: only requests whose client traces them are recorded. tcr is what the
// TokenCredentialRequest handler saw of its context's span.
func tracedProxy(t *testing.T, kube *fakeKube) (*http.Client, string, *tracetest.SpanRecorder, *atomic.Pointer[trace.SpanContext]) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())), sdktrace.WithSpanProcessor(rec))
	tcr := &atomic.Pointer[trace.SpanContext]{}
	front := testProxyWith(t, kube, false, func(c *Config) {
		c.TracerProvider = tp
		c.TokenCredentialRequests = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sc := trace.SpanContextFromContext(r.Context())
			tcr.Store(&sc)
			w.WriteHeader(http.StatusCreated)
		})
	})
	client := front.Client()
	client.Transport.(*http.Transport).TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the test's own server
	return client, front.URL, rec, tcr
}

func send(t *testing.T, client *http.Client, method, url string, headers map[string][]string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range headers {
		req.Header[k] = vs
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// A request its client traces is a span of the client's trace, named by verb; the kube-apiserver
// gets the proxy's span as the parent in place of the client's, and no span records the client's
// token or the proxy's own credential.
func TestProxyContinuesTheClientsTrace(t *testing.T) {
	kube := newFakeKube(t)
	client, url, rec, _ := tracedProxy(t, kube)
	if code := send(t, client, http.MethodGet, url+"/apis/apps/v1/namespaces/ns/deployments", map[string][]string{
		"Authorization": {"Bearer user-token"}, "Traceparent": {clientParent},
	}); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	got, _ := kube.last()
	parent := strings.Split(got.Get("Traceparent"), "-")
	if len(parent) != 4 || parent[1] != clientTraceID || parent[2] == clientSpanID || parent[3] != "01" {
		t.Errorf("the kube-apiserver got traceparent %q; want the client's trace with the proxy's span", got.Get("Traceparent"))
	}
	var server, toKube sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.SpanKind() {
		case trace.SpanKindServer:
			server = s
		case trace.SpanKindClient:
			toKube = s
		}
		for _, kv := range s.Attributes() {
			if v := kv.Value.Emit(); strings.Contains(v, "user-token") || strings.Contains(v, "concierge-sa") || strings.Contains(v, "pinny") {
				t.Errorf("span %q records %s=%s", s.Name(), kv.Key, v)
			}
		}
	}
	if server == nil || toKube == nil {
		t.Fatalf("spans %v; want the proxy's server span and its request to the kube-apiserver", rec.Ended())
	}
	if server.Name() != "impersonation proxy list" || server.Parent().SpanID().String() != clientSpanID || server.SpanContext().TraceID().String() != clientTraceID {
		t.Errorf("server span %q, parent %s in trace %s", server.Name(), server.Parent().SpanID(), server.SpanContext().TraceID())
	}
	if toKube.Parent().SpanID() != server.SpanContext().SpanID() || toKube.SpanContext().SpanID().String() != parent[2] {
		t.Error("the request to the kube-apiserver is not the server span's child, or not the parent the kube-apiserver got")
	}
	attrs := map[string]string{}
	for _, kv := range server.Attributes() {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	if attrs["k8s.resource"] != "deployments" || attrs["k8s.api_group"] != "apps" {
		t.Errorf("server span attributes %v", attrs)
	}
}

// A client's exchange through the proxy (the impersonation proxy strategy) is traced as the
// aggregated API's is: the TokenCredentialRequest handler runs within the proxy's span.
func TestProxyTracesExchanges(t *testing.T) {
	client, url, rec, tcr := tracedProxy(t, newFakeKube(t))
	if code := send(t, client, http.MethodPost, url+"/apis/login.concierge.pinniped.dev/v1alpha1/tokencredentialrequests", map[string][]string{
		"Traceparent": {clientParent},
	}); code != http.StatusCreated {
		t.Fatalf("status %d", code)
	}
	if sc := tcr.Load(); sc == nil || sc.TraceID().String() != clientTraceID || !sc.IsSampled() {
		t.Errorf("the exchange ran in %v; want the client's trace, sampled", sc)
	}
	if names := spanNames(rec); len(names) != 1 || names[0] != "impersonation proxy create" {
		t.Errorf("spans %v", names)
	}
}

// What a client forges in place of a traceparent, or smuggles in other forms, is neither
// continued nor passed on to the kube-apiserver, and makes the proxy record nothing.
func TestProxyIgnoresForgedTraceContext(t *testing.T) {
	kube := newFakeKube(t)
	client, url, rec, _ := tracedProxy(t, kube)
	for name, headers := range map[string]map[string][]string{
		"upper-case hex":         {"Traceparent": {"00-" + strings.ToUpper(clientTraceID) + "-" + clientSpanID + "-01"}},
		"version ff":             {"Traceparent": {"ff-" + clientTraceID + "-" + clientSpanID + "-01"}},
		"zero trace ID":          {"Traceparent": {"00-" + strings.Repeat("0", 32) + "-" + clientSpanID + "-01"}},
		"two traceparents":       {"Traceparent": {clientParent, "00-" + strings.Repeat("a", 32) + "-" + clientSpanID + "-01"}},
		"underscore spelling":    {"Trace_parent": {clientParent}},
		"huge tracestate":        {"Traceparent": {"garbage"}, "Tracestate": {strings.Repeat("k=v,", 2000)}},
		"hop-by-hop traceparent": {"Traceparent": {clientParent}, "Connection": {"traceparent"}},
	} {
		headers["Authorization"] = []string{"Bearer user-token"}
		if code := send(t, client, http.MethodGet, url+"/api/v1/pods", headers); code != http.StatusOK {
			t.Errorf("%s: status %d", name, code)
		}
		got, _ := kube.last()
		for _, forged := range headers["Traceparent"] {
			if got.Get("Traceparent") == forged || (name != "two traceparents" && strings.Contains(got.Get("Traceparent"), clientTraceID)) {
				t.Errorf("%s: the kube-apiserver got the client's %q", name, got.Get("Traceparent"))
			}
		}
		if got.Get("Trace_parent") != "" && name != "underscore spelling" {
			t.Errorf("%s: Trace_parent reached the kube-apiserver", name)
		}
	}
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID().String() != clientTraceID {
			t.Errorf("span %q recorded for a forged trace context", s.Name())
		}
	}
}

// Without tracing configured the proxy makes no span and leaves a client's trace context as it
// was sent: the kube-apiserver sees what it would see without the proxy.
func TestProxyWithoutTracingPassesTraceContextOn(t *testing.T) {
	kube := newFakeKube(t)
	front := testProxy(t, kube, false)
	client := front.Client()
	if code := send(t, client, http.MethodGet, front.URL+"/api/v1/pods", map[string][]string{
		"Authorization": {"Bearer user-token"}, "Traceparent": {clientParent}, "Tracestate": {"vendor=x"},
	}); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	got, _ := kube.last()
	if got.Get("Traceparent") != clientParent || got.Get("Tracestate") != "vendor=x" {
		t.Errorf("the kube-apiserver got traceparent %q, tracestate %q", got.Get("Traceparent"), got.Get("Tracestate"))
	}
}

func spanNames(rec *tracetest.SpanRecorder) []string {
	var out []string
	for _, s := range rec.Ended() {
		out = append(out, s.Name())
	}
	return out
}
