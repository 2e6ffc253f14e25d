package server

import (
	"net/http"
	"net/url"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/uuid"

	"sealion.dev/servers/internal/audit"
)

// auditIDHeader returns each request's audit ID to the client, as Pinniped and the kube-apiserver
// do, so that a user's report can be matched with the log.
const auditIDHeader = "Audit-ID"

// withAudit gives each request a new audit ID (a client's own Audit-ID header is not trusted:
// it would let anyone forge log correlations), returns it in the Audit-ID header, puts it in the
// request's context for the endpoints' events, and writes Pinniped's "HTTP Request Received" and
// "HTTP Request Completed" events around the request. Probes (/healthz, /readyz) are audited
// only when internalPaths.
func withAudit(next http.Handler, log *audit.Logger, internalPaths bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isProbe(r.URL.Path) && !internalPaths {
			next.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		id := string(uuid.NewUUID())
		w.Header().Set(auditIDHeader, id)
		ctx := audit.WithID(r.Context(), id)
		r = r.WithContext(ctx)
		serverName := ""
		if r.TLS != nil {
			serverName = r.TLS.ServerName
		}
		var sourceIPs []string
		for _, ip := range utilnet.SourceIPs(r) {
			sourceIPs = append(sourceIPs, ip.String())
		}
		log.Event(ctx, "HTTP Request Received", audit.Fields{},
			"proto", r.Proto, "method", r.Method, "host", r.Host, "serverName", serverName,
			"path", r.URL.Path, "userAgent", r.UserAgent(), "sourceIPs", sourceIPs)
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		log.Event(ctx, "HTTP Request Completed", audit.Fields{},
			"path", r.URL.Path, "latency", time.Since(start).String(), "responseStatus", rec.status,
			"location", redactLocation(w.Header().Get("Location")))
	})
}

// statusRecorder remembers the status a handler answered.
type statusRecorder struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wroteHeader {
		s.status, s.wroteHeader = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection's writer (to flush, for one).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// keptLocationParams are the redirect parameters that carry no secret: an authorization code, a
// state or a token in a redirect is redacted, errors are kept to explain a failed login.
var keptLocationParams = map[string]bool{"error": true, "error_description": true, "err": true}

// redactLocation is the Location header as the audit event shows it: every query (and fragment)
// value redacted but errors.
func redactLocation(location string) string {
	if location == "" {
		return "no location header"
	}
	u, err := url.Parse(location)
	if err != nil {
		return "unparsable location header"
	}
	u.RawQuery = redactParams(u.RawQuery)
	if u.Fragment != "" {
		u.Fragment, u.RawFragment = redactParams(u.EscapedFragment()), ""
	}
	return u.String()
}

func redactParams(raw string) string {
	if raw == "" {
		return ""
	}
	values, err := url.ParseQuery(raw)
	if err != nil {
		return "redacted"
	}
	for k, vs := range values {
		if keptLocationParams[k] {
			continue
		}
		for i := range vs {
			vs[i] = "redacted"
		}
	}
	return values.Encode()
}
