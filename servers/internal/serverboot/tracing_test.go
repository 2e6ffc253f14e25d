package serverboot

import (
	"context"
	"net"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"k8s.io/utils/ptr"
)

// collector is an OTLP/gRPC trace receiver.
type collector struct {
	collectortrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	got   []*collectortrace.ExportTraceServiceRequest
	calls chan struct{}
}

func (c *collector) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	c.got = append(c.got, req)
	c.mu.Unlock()
	c.calls <- struct{}{}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// TestTracerExportsToTheCollector: the tracing key's endpoint receives the spans over OTLP/gRPC,
// with the service's name, when the server flushes them on its way out at the latest.
func TestTracerExportsToTheCollector(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &collector{calls: make(chan struct{}, 10)}
	s := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(s, c)
	go func() { _ = s.Serve(ln) }()
	defer s.Stop()

	ctx := context.Background()
	tracer, err := NewTracer(ctx, &Tracing{Endpoint: ptr.To(ln.Addr().String()), SamplingRatePerMillion: ptr.To[int32](1000000)}, "pinniped-supervisor")
	if err != nil {
		t.Fatal(err)
	}
	_, span := tracer.Provider().Tracer("test").Start(ctx, "POST /oauth2/token")
	span.End()
	tracer.Flush(ctx)
	<-c.calls
	c.mu.Lock()
	defer c.mu.Unlock()
	rs := c.got[0].GetResourceSpans()[0]
	var service string
	for _, kv := range rs.GetResource().GetAttributes() {
		if kv.GetKey() == "service.name" {
			service = kv.GetValue().GetStringValue()
		}
	}
	if service != "pinniped-supervisor" {
		t.Errorf("service.name %q", service)
	}
	if got := rs.GetScopeSpans()[0].GetSpans()[0].GetName(); got != "POST /oauth2/token" {
		t.Errorf("exported span %q", got)
	}
}

// TestNoConfigurationTracesNothing: no tracing key, no provider, so that the handlers are left
// as they are (core/tracing.Handler); a nil Tracer is the same.
func TestNoConfigurationTracesNothing(t *testing.T) {
	tracer, err := NewTracer(context.Background(), nil, "pinniped-concierge")
	if err != nil {
		t.Fatal(err)
	}
	var none *Tracer
	if tracer.Provider() != nil || none.Provider() != nil {
		t.Error("a Tracer without configuration has a provider")
	}
	tracer.Flush(context.Background())
	none.Flush(context.Background())
}
