package leaderelection

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// recorder is the transport behind the gate: it answers every request it is given.
type recorder struct{ sent []string }

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.sent = append(r.sent, req.Method+" "+req.URL.Path)
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("{}")), Request: req}, nil
}

// closeTracker is a request body that records being closed.
type closeTracker struct {
	io.Reader
	closed bool
}

func (c *closeTracker) Close() error { c.closed = true; return nil }

func TestGate(t *testing.T) {
	tests := []struct {
		method, path string
		write        bool
	}{
		{"GET", "/api/v1/namespaces/ns/secrets/s", false},
		{"GET", "/apis/config.concierge.pinniped.dev/v1alpha1/credentialissuers?watch=true", false},
		{"HEAD", "/api/v1/namespaces/ns/pods", false},
		{"POST", "/api/v1/namespaces/ns/secrets", true},
		{"PUT", "/apis/config.supervisor.pinniped.dev/v1alpha1/namespaces/ns/federationdomains/fd/status", true},
		{"PATCH", "/apis/apiregistration.k8s.io/v1/apiservices/v1alpha1.login.concierge.pinniped.dev", true},
		{"DELETE", "/apis/apps/v1/namespaces/ns/deployments/agent", true},
		{"DELETE", "/api/v1/namespaces/ns/secrets", true}, // deletecollection
		{"POST", "/api/v1/namespaces/ns/pods/agent/eviction", true},
		{"POST", "/api/v1/namespaces/ns/serviceaccounts/sa/token", true},
		// Questions and the kube cert agent's read of the key.
		{"POST", "/api/v1/namespaces/ns/pods/agent/exec", false},
		{"POST", "/apis/authentication.k8s.io/v1/tokenreviews", false},
		{"POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", false},
		{"POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", false},
		{"POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", false},
		{"POST", "/apis/authorization.k8s.io/v1/namespaces/ns/localsubjectaccessreviews", false},
		{"POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", false},
		// The same names elsewhere are no questions; nor are other verbs on reviews.
		{"POST", "/apis/example.com/v1/tokenreviews", true},
		{"PUT", "/apis/authentication.k8s.io/v1/tokenreviews/x", true},
		// What is not an API request is refused rather than guessed harmless.
		{"POST", "/logs", true},
	}
	for _, leading := range []bool{false, true} {
		for _, tt := range tests {
			t.Run(tt.method+" "+tt.path, func(t *testing.T) {
				next := &recorder{}
				g := &gate{next: next, leading: func() bool { return leading }}
				body := &closeTracker{Reader: strings.NewReader("{}")}
				req := httptest.NewRequest(tt.method, tt.path, body)
				_, err := g.RoundTrip(req)
				refused := tt.write && !leading
				switch {
				case refused && !errors.Is(err, ErrNotLeader):
					t.Errorf("leading=%v: err = %v, want ErrNotLeader", leading, err)
				case refused && (len(next.sent) != 0 || !body.closed):
					t.Errorf("leading=%v: refused, but sent %v, body closed %v", leading, next.sent, body.closed)
				case !refused && (err != nil || len(next.sent) != 1):
					t.Errorf("leading=%v: err = %v, sent %v; want it sent", leading, err, next.sent)
				}
			})
		}
	}
}

// Through a real clientset, a refused write is an error that says why, which errors.Is finds
// through client-go's wrapping, and it follows the election's state as it changes.
func TestWrapFollowsLeadership(t *testing.T) {
	var requests atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"ns"}}`)
	}))
	defer api.Close()
	e := &Elector{}
	config := &rest.Config{Host: api.URL}
	client, err := kubernetes.NewForConfig(e.Wrap(config))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	create := func() error {
		_, err := client.CoreV1().Secrets("ns").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{})
		return err
	}

	if err := create(); !errors.Is(err, ErrNotLeader) || !strings.Contains(err.Error(), "POST /api/v1/namespaces/ns/secrets") {
		t.Errorf("create while not leading: %v, want ErrNotLeader naming the request", err)
	}
	if _, err := client.CoreV1().Secrets("ns").Get(ctx, "s", metav1.GetOptions{}); err != nil {
		t.Errorf("get while not leading: %v", err)
	}
	if _, err := client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{}, metav1.CreateOptions{}); err != nil {
		t.Errorf("TokenReview while not leading: %v", err)
	}
	if n := requests.Load(); n != 2 {
		t.Errorf("the API server saw %d requests, want the get and the review", n)
	}

	e.leading = true
	if err := create(); err != nil {
		t.Errorf("create while leading: %v", err)
	}
	e.leading = false
	if err := create(); !errors.Is(err, ErrNotLeader) {
		t.Errorf("create after losing the lead: %v, want ErrNotLeader", err)
	}
	if config.WrapTransport != nil {
		t.Error("Wrap changed the config it was given; the Lease's client must stay unwrapped")
	}
}

func TestNewChecksItsConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"missing names", Config{Namespace: "ns"}, "the Lease's [name identity] must be set"},
		{"renew deadline not shorter than the lease", Config{Namespace: "ns", Name: "n", Identity: "i", LeaseDuration: 2, RenewDeadline: 2}, "leaseDuration must be greater than renewDeadline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v, want an error containing %q", err, tt.want)
			}
		})
	}
	e, err := New(Config{Namespace: "ns", Name: "n", Identity: "i"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := e.config; c.LeaseDuration != DefaultLeaseDuration || c.RenewDeadline != DefaultRenewDeadline || c.RetryPeriod != DefaultRetryPeriod {
		t.Errorf("durations %v %v %v, want the defaults", c.LeaseDuration, c.RenewDeadline, c.RetryPeriod)
	}
	if e.IsLeader() {
		t.Error("a new elector leads before it has run")
	}
}
