package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/klog/v2"

	"sealion.dev/core/tracing"
	"sealion.dev/servers/internal/fairqueue"
	"sealion.dev/servers/supervisor/config"
	"sealion.dev/servers/supervisor/internal/sni"
)

// listener is one configured endpoint, where the FederationDomains' endpoints are served, and
// the HTTP server that serves them there.
type listener struct {
	// name (https or http) and network are for messages.
	name, network                  string
	ln                             net.Listener
	server                         *http.Server
	shutdownDelay, shutdownTimeout time.Duration
	// ready is the readiness the listeners share; the first to stop starts the drain.
	ready *readiness
}

// maxHeaderBytes bounds a request's line and headers. Ours are small: the longest is an authorize
// URL of a few kilobytes, with the Supervisor's cookies. 64 KiB is more than the reverse proxies
// usually put in front of it let through (nginx 32 KiB, Envoy 60 KiB), where net/http's default
// would take 1 MiB.
const maxHeaderBytes = 64 << 10

// listen opens the configured listeners for handler, HTTPS with the certificate getCertificate
// chooses. Listening here, before Run, reports a port in use when the server is constructed. The
// listeners share one in-flight limit, and answer the probes (/healthz, and /readyz from ready)
// outside it, so that a flood does not fail them and get the pod restarted. A connection served
// the bootstrap certificate gets nothing but the probes. Every request is audited, the probes
// only when the configuration asks, and traced when the configuration asks, the probes never.
func (c completedConfig) listen(handler http.Handler, getCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error), ready *readiness) ([]*listener, error) {
	limited, err := c.queuing(handler)
	if err != nil {
		return nil, err
	}
	// The span of a request covers its wait in the queues; the probes make none.
	handler = withProbes(tracing.Handler(limited, c.Tracer.Provider(), "pinniped-supervisor"), ready)
	handler = withoutBootstrapConnections(handler)
	handler = withAudit(handler, c.audit, c.File.Audit.LogInternalPaths.Enabled())
	httpsConfig := c.File.TLSProfile.ServerConfig()
	httpsConfig.GetCertificate = getCertificate
	var listeners []*listener
	for _, e := range []struct {
		name      string
		config    *config.Endpoint
		tlsConfig *tls.Config
		protocols *http.Protocols
	}{
		{"https", c.File.Endpoints.HTTPS, httpsConfig, c.File.TLSProfile.Protocols()},
		{"http", c.File.Endpoints.HTTP, nil, nil},
	} {
		if !e.config.Enabled() {
			continue
		}
		ln, err := net.Listen(e.config.Network, e.config.Address)
		if err != nil {
			for _, opened := range listeners {
				_ = opened.ln.Close()
			}
			return nil, fmt.Errorf("%s listener: %w", e.name, err)
		}
		listeners = append(listeners, &listener{
			name: e.name, network: e.config.Network, ln: ln, shutdownDelay: c.ShutdownDelay, shutdownTimeout: c.ShutdownTimeout, ready: ready,
			server: &http.Server{
				Handler:           handler,
				ConnContext:       sni.ConnContext,
				TLSConfig:         e.tlsConfig,
				Protocols:         e.protocols,
				ReadHeaderTimeout: c.ReadHeaderTimeout,
				IdleTimeout:       c.IdleTimeout,
				MaxHeaderBytes:    maxHeaderBytes,
			},
		})
	}
	return listeners, nil
}

// serve serves until ctx ends, then stops gracefully and sends the outcome to errc: nil after a
// clean shutdown.
//
// A stopping pod is taken out of its Services' endpoints at once, but kube-proxy and load
// balancers follow only within seconds, and until then new connections still arrive: the
// listener keeps accepting them for shutdownDelay, while /readyz fails for those that probe it. It then stops accepting and lets the requests
// in flight finish, for up to shutdownTimeout. Their contexts do not end with ctx: a refresh
// that has rotated the upstream's token must still store it, or the session is lost.
func (l *listener) serve(ctx context.Context, errc chan<- error) {
	l.server.BaseContext = func(net.Listener) context.Context { return context.WithoutCancel(ctx) }
	done := make(chan error, 1)
	go func() {
		var err error
		if l.server.TLSConfig != nil {
			err = l.server.ServeTLS(l.ln, "", "")
		} else {
			err = l.server.Serve(l.ln)
		}
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		done <- err
	}()
	go func() {
		select {
		case err := <-done:
			errc <- fmt.Errorf("%s listener stopped: %w", l.name, err)
		case <-ctx.Done():
			l.ready.drain()
			select {
			case err := <-done:
				errc <- fmt.Errorf("%s listener stopped: %w", l.name, err)
				return
			case <-time.After(l.shutdownDelay):
			}
			shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.shutdownTimeout)
			defer cancel()
			_ = l.server.Shutdown(shutdownCtx)
			errc <- <-done
		}
	}()
	klog.FromContext(ctx).Info("listening", "listener", l.name, "network", l.network, "address", l.ln.Addr().String())
}

// queuing executes at most MaxRequestsInFlight GETs (and HEADs and OPTIONS) and
// MaxMutatingRequestsInFlight requests of other methods at once; the rest wait in fair queues, per
// client (fairqueue's default shape), and get 429 with Retry-After when their queue is full or
// they have waited MaxQueueWait. No path of ours is long-running.
func (c completedConfig) queuing(next http.Handler) (http.Handler, error) {
	limiter := func(name string, concurrency int) (*fairqueue.Limiter, error) {
		return fairqueue.New(fairqueue.Config{Name: name, Concurrency: concurrency, MaxWait: c.MaxQueueWait})
	}
	reads, err := limiter("supervisor-reads", c.MaxRequestsInFlight)
	if err != nil {
		return nil, err
	}
	writes, err := limiter("supervisor-writes", c.MaxMutatingRequestsInFlight)
	if err != nil {
		return nil, err
	}
	return fairqueue.WithFairQueuing(next, reads, writes, nil), nil
}

// withProbes answers the probes on any host: /healthz (liveness) with 200 while the process
// serves, /readyz (readiness) from ready. It passes everything else to next.
func withProbes(next http.Handler, ready *readiness) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = w.Write([]byte("ok"))
		case "/readyz":
			ready.ServeHTTP(w, r)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// isProbe says whether path is one of the probes' paths.
func isProbe(path string) bool { return path == "/healthz" || path == "/readyz" }

// invalidCertificateConfiguration is what Pinniped's Supervisor answers, with 500, on a connection
// served the bootstrap certificate; operators search for it.
const invalidCertificateConfiguration = "pinniped supervisor has invalid TLS serving certificate configuration"

// withoutBootstrapConnections answers every request but the probes on a connection that was
// served the bootstrap certificate with 500 and invalidCertificateConfiguration: no certificate
// is configured for the name the client asked for, and no default one either.
func withoutBootstrapConnections(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isProbe(r.URL.Path) && sni.Bootstrapped(r.Context()) {
			http.Error(w, invalidCertificateConfiguration, http.StatusInternalServerError)
			return
		}
		next.ServeHTTP(w, r)
	})
}
