package tracing

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

const (
	clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID  = "00f067aa0ba902b7"
)

// recorder is a provider that keeps every span it ends, sampling as NewProvider does with
// samplingRatePerMillion unset: only what a client sampled.
func recorder(sampler sdktrace.Sampler) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	return sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler), sdktrace.WithSpanProcessor(rec)), rec
}

// TestHandlerContinuesTheClientsTrace follows one request: the client's sampled trace goes on in
// the server's span, named by the route that served it, and on to the upstream the handler calls,
// as a child of the server's span; the client's baggage does not travel on.
func TestHandlerContinuesTheClientsTrace(t *testing.T) {
	tp, rec := recorder(sdktrace.ParentBased(sdktrace.NeverSample()))
	var upstreamHeaders http.Header
	upstream := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { upstreamHeaders = r.Header.Clone() }))
	defer upstream.Close()
	client := &http.Client{Transport: Transport(nil)}
	h := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		trace.SpanFromContext(r.Context()).SetName("POST /oauth2/token")
		ctx, span := Start(r.Context(), "upstream password")
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, upstream.URL+"/keys", nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		_ = resp.Body.Close()
		span.End()
		_, _ = w.Write([]byte("ok"))
	}), tp, "supervisor")

	r := httptest.NewRequest(http.MethodPost, "/issuer/oauth2/token?code=secret", nil)
	r.Header.Set("Traceparent", "00-"+clientTraceID+"-"+clientSpanID+"-01")
	r.Header.Set("Baggage", "user=mallory")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("status %d", w.Code)
	}

	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		spans[s.Name()] = s
	}
	server, internal, client2 := spans["POST /oauth2/token"], spans["upstream password"], spans["HTTP GET"]
	if server == nil || internal == nil || client2 == nil {
		t.Fatalf("spans %v; want the server's, the upstream call's and the HTTP client's", names(rec.Ended()))
	}
	if got := server.SpanContext().TraceID().String(); got != clientTraceID {
		t.Errorf("server span in trace %s, want the client's %s", got, clientTraceID)
	}
	if got := server.Parent().SpanID().String(); got != clientSpanID || !server.Parent().IsRemote() {
		t.Errorf("server span's parent %s (remote %v), want the client's span %s", got, server.Parent().IsRemote(), clientSpanID)
	}
	if internal.Parent().SpanID() != server.SpanContext().SpanID() || client2.Parent().SpanID() != internal.SpanContext().SpanID() {
		t.Error("the upstream call's span is not the server span's child, or the HTTP span not the call's")
	}
	want := "00-" + clientTraceID + "-" + client2.SpanContext().SpanID().String() + "-01"
	if got := upstreamHeaders.Get("Traceparent"); got != want {
		t.Errorf("upstream got traceparent %q, want %q", got, want)
	}
	if got := upstreamHeaders.Get("Baggage"); got != "" {
		t.Errorf("the client's baggage reached the upstream: %q", got)
	}
	for _, kv := range server.Attributes() {
		if strings.Contains(kv.Value.Emit(), "secret") {
			t.Errorf("the server span records the query: %s=%s", kv.Key, kv.Value.Emit())
		}
	}
}

// TestHandlerIgnoresForgedTraceContext sends what a client might forge in place of a traceparent:
// none of it is continued, none fails or changes the response, and with no sampling rate of the
// server's own none of it makes the server record anything.
func TestHandlerIgnoresForgedTraceContext(t *testing.T) {
	for name, headers := range map[string]map[string][]string{
		"upper-case hex":       {"Traceparent": {"00-" + strings.ToUpper(clientTraceID) + "-" + clientSpanID + "-01"}},
		"version ff":           {"Traceparent": {"ff-" + clientTraceID + "-" + clientSpanID + "-01"}},
		"zero trace ID":        {"Traceparent": {"00-" + strings.Repeat("0", 32) + "-" + clientSpanID + "-01"}},
		"zero span ID":         {"Traceparent": {"00-" + clientTraceID + "-" + strings.Repeat("0", 16) + "-01"}},
		"version 00 with more": {"Traceparent": {"00-" + clientTraceID + "-" + clientSpanID + "-01-extra"}},
		"short trace ID":       {"Traceparent": {"00-" + clientTraceID[:30] + "-" + clientSpanID + "-01"}},
		"percent-encoded":      {"Traceparent": {"00%2D" + clientTraceID + "%2D" + clientSpanID + "%2D01"}},
		"huge tracestate":      {"Traceparent": {"garbage"}, "Tracestate": {strings.Repeat("k=v,", 20000)}},
		"newline in header":    {"Traceparent": {"00-" + clientTraceID + "-\n" + clientSpanID + "-01"}},
	} {
		t.Run(name, func(t *testing.T) {
			tp, rec := recorder(sdktrace.ParentBased(sdktrace.NeverSample()))
			var continued trace.SpanContext
			h := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				continued = trace.SpanContextFromContext(r.Context())
				_, _ = w.Write([]byte("ok"))
			}), tp, "supervisor")
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			for k, vs := range headers {
				r.Header[k] = vs
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusOK || w.Body.String() != "ok" {
				t.Errorf("response %d %q, want 200 ok", w.Code, w.Body.String())
			}
			if continued.TraceID().String() == clientTraceID {
				t.Errorf("the forged trace %s was continued", clientTraceID)
			}
			if n := len(rec.Ended()); n != 0 {
				t.Errorf("%d spans recorded for a forged trace context", n)
			}
		})
	}
}

// TestWithoutProviderNothingChanges: tracing not configured, a request's trace context is
// neither read nor passed on, and the handler is the one given.
func TestWithoutProviderNothingChanges(t *testing.T) {
	var upstreamHeaders http.Header
	upstream := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { upstreamHeaders = r.Header.Clone() }))
	defer upstream.Close()
	client := &http.Client{Transport: Transport(nil)}
	h := Handler(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, upstream.URL, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		_ = resp.Body.Close()
	}), nil, "supervisor")
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Traceparent", "00-"+clientTraceID+"-"+clientSpanID+"-01")
	h.ServeHTTP(httptest.NewRecorder(), r)
	if got := upstreamHeaders.Get("Traceparent"); got != "" {
		t.Errorf("upstream got traceparent %q from a server that does not trace", got)
	}
}

// TestStartOutsideATraceCostsNothing: the exchange and login paths call Start on every request;
// outside a recorded trace that must not allocate.
func TestStartOutsideATraceCostsNothing(t *testing.T) {
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		c, span := Start(ctx, "exchange")
		span.End()
		if c != ctx {
			t.Fatal("Start outside a trace returned a new context")
		}
	})
	if allocs != 0 {
		t.Errorf("Start outside a trace allocates %v times", allocs)
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}
