package loadbalancer

import (
	"net"
	"time"

	"k8s.io/klog/v2"

	"sealion.dev/providers/managed/internal/tcprelay"
)

// forwarder accepts TCP connections on one address and port and relays each to one of the
// Service's ready endpoints, taken round robin.
type forwarder struct {
	server      *tcprelay.Server
	endpoints   *tcprelay.Endpoints
	dialTimeout time.Duration
	logger      klog.Logger
}

func startForwarder(logger klog.Logger, addr string, backends []string, dialTimeout time.Duration) (*forwarder, error) {
	f := &forwarder{
		endpoints:   tcprelay.NewEndpoints(backends),
		dialTimeout: dialTimeout,
		logger:      logger.WithValues("listen", addr),
	}
	server, err := tcprelay.Listen(f.logger, addr, f.relay)
	if err != nil {
		return nil, err
	}
	f.server = server
	return f, nil
}

func (f *forwarder) setBackends(backends []string) {
	f.endpoints.Set(backends)
}

func (f *forwarder) relay(client net.Conn) {
	backend, err := f.endpoints.Dial(f.dialTimeout)
	if err != nil {
		f.logger.V(2).Info("refusing a connection", "client", client.RemoteAddr().String(), "reason", err.Error())
		return
	}
	defer backend.Close()
	tcprelay.Pipe(client, backend)
}

// close stops listening, ends every relayed connection and waits for them to finish.
func (f *forwarder) close() {
	f.server.Close()
}
