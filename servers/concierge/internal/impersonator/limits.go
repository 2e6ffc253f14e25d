package impersonator

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericfilters "k8s.io/apiserver/pkg/server/filters"

	"sealion.dev/servers/internal/fairqueue"
)

// The proxy's limits are the kube-apiserver's defaults: every request it admits goes on to a
// kube-apiserver that admits no more than that, so a higher limit would only queue requests
// there, and a lower one would refuse clients that the cluster itself would serve.
const (
	// DefaultMaxRequestsInFlight and DefaultMaxMutatingRequestsInFlight bound the requests being
	// served at once (--max-requests-inflight and --max-mutating-requests-inflight). More wait in
	// fair queues per client address for up to DefaultMaxQueueWait, as the kube-apiserver's priority
	// levels let them, and are answered 429 with Retry-After when their queue is full or the wait
	// is over. Long-running requests do not count.
	DefaultMaxRequestsInFlight         = 400
	DefaultMaxMutatingRequestsInFlight = 200
	// DefaultMaxQueueWait is the kube-apiserver's own bound on a request's wait in its queues: a
	// quarter of its 60s request timeout.
	DefaultMaxQueueWait = 15 * time.Second
	// MaxRequestBodyBytes bounds the body of a request that is not long-running: the
	// kube-apiserver's --max-resource-write-bytes, twice etcd's limit on an object.
	MaxRequestBodyBytes = 3 << 20
)

// isLongRunning is the kube-apiserver's own list: watches and streams (exec, attach,
// port-forward, logs, proxy) stay open as long as the client wants, so they take no seat of the
// in-flight limit and their bodies, if any, are not bounded.
var isLongRunning = genericfilters.BasicLongRunningRequestCheck(
	sets.NewString("watch", "proxy"),
	sets.NewString("attach", "exec", "proxy", "log", "portforward"),
)

// withFairQueuing executes at most reads GETs and writes requests of other methods at once, and
// queues the rest per client for up to maxWait; long-running requests pass at once.
func withFairQueuing(next http.Handler, reads, writes int, maxWait time.Duration) (http.Handler, error) {
	limiter := func(name string, concurrency int) (*fairqueue.Limiter, error) {
		return fairqueue.New(fairqueue.Config{Name: name, Concurrency: concurrency, MaxWait: maxWait})
	}
	readLimiter, err := limiter("impersonation-proxy-reads", reads)
	if err != nil {
		return nil, err
	}
	writeLimiter, err := limiter("impersonation-proxy-writes", writes)
	if err != nil {
		return nil, err
	}
	return fairqueue.WithFairQueuing(next, readLimiter, writeLimiter, func(r *http.Request) bool {
		info, ok := genericapirequest.RequestInfoFrom(r.Context())
		return ok && isLongRunning(r, info)
	}), nil
}

// withRequestBodyLimit refuses a body larger than MaxRequestBodyBytes with 413: at once when its
// Content-Length says so, otherwise when reading reaches the limit (see errorResponder).
func withRequestBodyLimit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if info, ok := genericapirequest.RequestInfoFrom(r.Context()); ok && isLongRunning(r, info) {
			next.ServeHTTP(w, r)
			return
		}
		if r.ContentLength > MaxRequestBodyBytes {
			writeTooLarge(w)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxRequestBodyBytes)
		next.ServeHTTP(w, r)
	})
}

// isTooLarge reports whether err comes from reading past withRequestBodyLimit's bound.
func isTooLarge(err error) bool {
	var tooLarge *http.MaxBytesError
	return errors.As(err, &tooLarge)
}

func writeTooLarge(w http.ResponseWriter) {
	writeStatus(w, http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge,
		fmt.Sprintf("the request body is larger than %d bytes", MaxRequestBodyBytes))
}
