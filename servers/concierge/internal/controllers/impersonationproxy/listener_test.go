package impersonationproxy

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"
)

// The proxy's server cuts off slow and idle clients but never a stream.
func TestListenerServerLimits(t *testing.T) {
	l := &listener{address: "127.0.0.1:0", handler: http.NotFoundHandler(), cert: &servingCert{}, listen: net.Listen}
	ctx := context.Background()
	if err := l.start(ctx); err != nil {
		t.Fatal(err)
	}
	defer l.stop(ctx)
	s := l.server
	if s.ReadHeaderTimeout != 30*time.Second || s.IdleTimeout != 90*time.Second || s.MaxHeaderBytes != 1<<20 {
		t.Errorf("read header timeout %v, idle timeout %v, max header bytes %d; want 30s, 90s and 1 MiB",
			s.ReadHeaderTimeout, s.IdleTimeout, s.MaxHeaderBytes)
	}
	if s.ReadTimeout != 0 || s.WriteTimeout != 0 {
		t.Errorf("read timeout %v, write timeout %v: watches, exec and logs -f would be cut", s.ReadTimeout, s.WriteTimeout)
	}
}
