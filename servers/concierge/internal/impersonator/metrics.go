package impersonator

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/endpoints/responsewriter"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	requests = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "pinniped",
		Subsystem:      "concierge",
		Name:           "impersonation_proxy_requests_total",
		Help:           "Requests the impersonation proxy answered, by Kubernetes verb (other for a method Kubernetes does not use), API group (empty for the core group and for non-resource paths, unknown when the answer was not a success: a client may name any group) and HTTP status code (101 for upgraded streams: exec, attach, port-forward).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"verb", "group", "code"})
	requestDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      "pinniped",
		Subsystem:      "concierge",
		Name:           "impersonation_proxy_request_duration_seconds",
		Help:           "Time the impersonation proxy took to answer a request that is not long-running (watches and streams are left out, as the kube-apiserver leaves them out of its own), by verb and API group (as for the requests counter).",
		Buckets:        []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		StabilityLevel: metrics.ALPHA,
	}, []string{"verb", "group"})
	inFlight = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      "pinniped",
		Subsystem:      "concierge",
		Name:           "impersonation_proxy_requests_in_flight",
		Help:           "Requests the impersonation proxy is answering: short ones (which its in-flight limits bound) and long-running ones (watches and streams).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"kind"})
	registerOnce sync.Once
)

// RegisterMetrics adds the proxy's metrics to the registry the Concierge serves at /metrics.
func RegisterMetrics() {
	registerOnce.Do(func() { legacyregistry.MustRegister(requests, requestDuration, inFlight) })
}

// withMetrics records each request by its RequestInfo (WithRequestInfo must run first): the
// outermost measure of the proxy, so that refusals by its limits and its authentication count too.
func withMetrics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		verb, group, longRunning := "unknown", "", false
		if info, ok := genericapirequest.RequestInfoFrom(r.Context()); ok {
			verb, group, longRunning = info.Verb, info.APIGroup, isLongRunning(r, info)
		}
		kind := "short"
		if longRunning {
			kind = "long-running"
		}
		inFlight.WithLabelValues(kind).Inc()
		defer inFlight.WithLabelValues(kind).Dec()
		start := time.Now()
		recorder := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(responsewriter.WrapForHTTP1Or2(recorder), r)
		code := recorder.status()
		verb, group = boundedLabels(verb, group, code)
		requests.WithLabelValues(verb, group, strconv.Itoa(code)).Inc()
		if !longRunning {
			requestDuration.WithLabelValues(verb, group).Observe(time.Since(start).Seconds())
		}
	})
}

// verbs are the verbs of RequestInfo: Kubernetes' own and, for non-resource paths, the methods it
// serves. A client may send any method, and a non-resource request's verb is its method.
var verbs = sets.New("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection",
	"proxy", "post", "put", "head", "options")

// boundedLabels keeps the verb and group labels to a set the cluster bounds, whatever a client
// sends: a verb not in verbs is other, and a group the kube-apiserver did not answer with
// success for is unknown (a refusal, even one by authorization, comes for a made-up group too).
func boundedLabels(verb, group string, code int) (string, string) {
	if !verbs.Has(verb) && verb != "unknown" { // unknown: a request without RequestInfo
		verb = "other"
	}
	if code >= 400 && group != "" {
		group = "unknown"
	}
	return verb, group
}

// statusRecorder notes the status code written, and 101 for a connection taken over for a stream.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

var _ responsewriter.UserProvidedDecorator = &statusRecorder{}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusRecorder) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := s.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("the connection cannot be taken over")
	}
	if s.code == 0 {
		s.code = http.StatusSwitchingProtocols
	}
	return h.Hijack()
}

// status is the code written; 200 when the handler wrote nothing, as net/http then sends.
func (s *statusRecorder) status() int {
	if s.code == 0 {
		return http.StatusOK
	}
	return s.code
}
