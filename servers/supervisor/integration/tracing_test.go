package integration

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
)

// collector is an OTLP/gRPC trace receiver that keeps what it is sent, by service.
type collector struct {
	collectortrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans map[string][]*tracepb.Span
}

func (c *collector) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			c.spans[service] = append(c.spans[service], ss.GetSpans()...)
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func (c *collector) received(service string) []*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*tracepb.Span(nil), c.spans[service]...)
}

// A Supervisor configured to trace sends its spans to the collector its tracing key names: a
// request its client traces (a sampled traceparent) is a span of that trace, named by the route
// and its FederationDomain; with no sampling rate of its own, a request nobody traces is not
// exported. The real binary, its configuration file and its exporter, as a cluster runs them.
func TestTracesReachTheCollector(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &collector{spans: map[string][]*tracepb.Span{}}
	server := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(server, c)
	go func() { _ = server.Serve(ln) }()
	t.Cleanup(server.Stop)

	issuer := createLDAPIssuer(t, "traced", "traced.example.test", "traced")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	traced, err := env.startSupervisor(ctx, "traced-replica", fmt.Sprintf("tracing: {endpoint: %q}\n", ln.Addr().String()))
	if traced != nil {
		t.Cleanup(traced.stop)
	}
	if err != nil {
		t.Fatalf("starting a replica that traces: %v%s", err, traced.serverLog())
	}
	roots := x509.NewCertPool()
	roots.AddCert(env.ca.Certificate())
	client := traced.httpClient(roots)
	get := func(traceparent string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, issuer+"/.well-known/openid-configuration", nil)
		if traceparent != "" {
			req.Header.Set("Traceparent", traceparent)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	eventually(t, "the replica serves the issuer", func() error {
		if code := get(""); code != http.StatusOK {
			return fmt.Errorf("discovery: %d", code)
		}
		return nil
	})
	const traceID = "0af7651916cd43dd8448eb211c80319c"
	if code := get("00-" + traceID + "-b7ad6b7169203331-01"); code != http.StatusOK {
		t.Fatalf("traced discovery: %d", code)
	}
	// Stopping flushes the spans, as a replica does when its pod is deleted.
	traced.stop()

	var names []string
	found := false
	for _, s := range c.received("pinniped-supervisor") {
		names = append(names, s.GetName())
		if fmt.Sprintf("%x", s.GetTraceId()) != traceID {
			t.Errorf("span %s of trace %x exported, but only the client's trace was sampled", s.GetName(), s.GetTraceId())
			continue
		}
		if s.GetName() != "GET /.well-known/openid-configuration" || fmt.Sprintf("%x", s.GetParentSpanId()) != "b7ad6b7169203331" {
			continue
		}
		for _, kv := range s.GetAttributes() {
			if kv.GetKey() == "pinniped.federation_domain" && kv.GetValue().GetStringValue() == "traced" {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("the collector got spans %v of pinniped-supervisor; want GET /.well-known/openid-configuration in trace %s, child of the client's span, of FederationDomain traced%s", names, traceID, traced.serverLog())
	}
}
