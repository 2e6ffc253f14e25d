// Package fairqueue shares a fixed number of requests in execution fairly among clients, with the
// queue set of the kube-apiserver's API Priority and Fairness. A request beyond the limit waits in
// a queue chosen by shuffle sharding of its client's flow, and runs when a seat frees up, in fair
// order across queues; it is refused only when its queue is full or it has waited too long. So a
// burst of legitimate logins waits a moment instead of getting 429s, and one client's flood fills
// only its own queues: it is refused while everyone else keeps being served.
package fairqueue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"strconv"
	"time"

	fq "k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/eventclock"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/queueset"
	"k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"

	"sealion.dev/servers/internal/clientaddr"
)

// Config sizes one limiter.
type Config struct {
	// Name appears in the queue set's logs and metrics.
	Name string
	// Concurrency is how many requests execute at once.
	Concurrency int
	// Queues, QueueLength and HandSize shape the waiting room: a flow is dealt HandSize of Queues
	// queues and waits in the shortest, which holds at most QueueLength requests. A single flow can
	// so hold at most HandSize x QueueLength waiting requests; the others keep the rest. Zero
	// means the default: DefaultQueues, DefaultQueueLength, DefaultHandSize.
	Queues, QueueLength, HandSize int
	// MaxWait bounds how long a request waits for a seat before it is refused.
	MaxWait time.Duration
}

// The default shape is the kube-apiserver's for its default priority levels: a client is dealt 6
// of 128 queues of 50, so it alone can hold at most 300 requests waiting, more than the connection
// pool of an ingress or a benchmark's 32 clients send at once, while a flood from one address
// leaves all but a few queues to everyone else.
const (
	DefaultQueues      = 128
	DefaultQueueLength = 50
	DefaultHandSize    = 6
)

// Limiter admits requests to at most Config.Concurrency seats.
type Limiter struct {
	name    string
	qs      fq.QueueSet
	maxWait time.Duration
}

// New builds a limiter.
func New(c Config) (*Limiter, error) {
	c.Queues = cmp.Or(c.Queues, DefaultQueues)
	c.QueueLength = cmp.Or(c.QueueLength, DefaultQueueLength)
	c.HandSize = cmp.Or(c.HandSize, DefaultHandSize)
	if c.Concurrency < 1 || c.Queues < 1 || c.QueueLength < 1 || c.HandSize < 1 || c.HandSize > c.Queues || c.MaxWait <= 0 {
		return nil, errors.New("fairqueue: Concurrency, Queues, QueueLength, HandSize (at most Queues) and MaxWait must be positive")
	}
	completer, err := queueset.NewQueueSetFactory(eventclock.Real{}).BeginConstruction(fq.QueuingConfig{
		Name:             c.Name,
		DesiredNumQueues: c.Queues,
		QueueLengthLimit: c.QueueLength,
		HandSize:         c.HandSize,
	}, metrics.RatioedGaugePair{RequestsWaiting: unobserved{}, RequestsExecuting: unobserved{}}, unobserved{}, unobserved{})
	if err != nil {
		return nil, fmt.Errorf("fairqueue %s: %w", c.Name, err)
	}
	return &Limiter{
		name:    c.Name,
		qs:      completer.Complete(fq.DispatchingConfig{ConcurrencyLimit: c.Concurrency, ConcurrencyDenominator: c.Concurrency}),
		maxWait: c.MaxWait,
	}, nil
}

// oneSeat is every request's cost: the Supervisor's and the proxy's requests are alike enough that
// estimating work per request would cost more than it saves.
var oneSeat = fcrequest.WorkEstimate{InitialSeats: 1}

// Do runs execute once a seat is free, on behalf of flow (the client), and reports whether it ran:
// false when the request was refused because its queue was full, it waited MaxWait, or ctx ended.
func (l *Limiter) Do(ctx context.Context, flow string, execute func()) bool {
	waitCtx, cancel := context.WithTimeout(ctx, l.maxWait)
	defer cancel()
	h := fnv.New64a()
	_, _ = h.Write([]byte(flow))
	req, _ := l.qs.StartRequest(waitCtx, &oneSeat, h.Sum64(), flow, "", flow, nil, nil)
	if req == nil {
		return false
	}
	ran := false
	req.Finish(func() {
		ran = true
		execute()
	})
	return ran
}

// retryAfterSeconds is what a refused client is told to wait, as the kube-apiserver's in-flight
// filter tells it.
const retryAfterSeconds = 1

// WithFairQueuing runs next for GETs, HEADs and OPTIONS through reads and for every other method
// through writes, per client (its clientaddr.Source), and answers a refused request 429 with
// Retry-After.
// Requests exempt says so run at once: long-running ones, which would hold a seat for hours.
func WithFairQueuing(next http.Handler, reads, writes *Limiter, exempt func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if exempt != nil && exempt(r) {
			next.ServeHTTP(w, r)
			return
		}
		l := writes
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			l = reads
		}
		if !l.Do(r.Context(), clientaddr.Source(r), func() { next.ServeHTTP(w, r) }) {
			rejected.WithLabelValues(l.name).Inc()
			w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
			http.Error(w, "Too many requests, please try again later.", http.StatusTooManyRequests)
		}
	})
}

// unobserved is a gauge that observes nothing: the queue set's own metrics (apiserver_flowcontrol_*)
// already count what waits and what executes.
type unobserved struct{}

func (unobserved) Set(float64)            {}
func (unobserved) Inc()                   {}
func (unobserved) Dec()                   {}
func (unobserved) Add(float64)            {}
func (unobserved) SetToCurrentTime()      {}
func (unobserved) SetDenominator(float64) {}
