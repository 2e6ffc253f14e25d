package webhook

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	"sealion.dev/servers/concierge/internal/authenticator/checks"
)

var allConditionTypes = []string{
	authv1alpha1.ConditionTLSConfigurationValid, authv1alpha1.ConditionEndpointURLValid,
	authv1alpha1.ConditionWebhookConnectionValid, authv1alpha1.ConditionAuthenticatorValid,
}

// tokenReviewServer answers TokenReviews in either version: "good-token" is alice in devs,
// anything else is unauthenticated. It records the apiVersion it was sent.
type tokenReviewServer struct {
	*httptest.Server
	caBundle []byte

	mu          sync.Mutex
	apiVersions []string
}

func newTokenReviewServer(t *testing.T) *tokenReviewServer {
	s := &tokenReviewServer{}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	s.caBundle = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	return s
}

func (s *tokenReviewServer) serve(w http.ResponseWriter, r *http.Request) {
	// v1 and v1beta1 TokenReviews have the same JSON shape for the fields used here.
	var review authenticationv1.TokenReview
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&review) != nil {
		http.Error(w, "want a POSTed TokenReview", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.apiVersions = append(s.apiVersions, review.APIVersion)
	s.mu.Unlock()

	review.Status = authenticationv1.TokenReviewStatus{}
	if review.Spec.Token == "good-token" {
		review.Status = authenticationv1.TokenReviewStatus{
			Authenticated: true,
			User:          authenticationv1.UserInfo{Username: "alice", UID: "1001", Groups: []string{"devs", "ops"}},
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

func (s *tokenReviewServer) lastAPIVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.apiVersions) == 0 {
		return ""
	}
	return s.apiVersions[len(s.apiVersions)-1]
}

func TestAuthenticateToken(t *testing.T) {
	tests := []struct {
		name        string
		apiVersion  string
		wantVersion string
	}{
		{name: "default version", apiVersion: "", wantVersion: "authentication.k8s.io/v1beta1"},
		{name: "v1beta1", apiVersion: "v1beta1", wantVersion: "authentication.k8s.io/v1beta1"},
		{name: "v1", apiVersion: "v1", wantVersion: "authentication.k8s.io/v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server := newTokenReviewServer(t)
			authn, result := New(context.Background(), Config{Endpoint: server.URL + "/authenticate", CABundle: server.caBundle, APIVersion: tt.apiVersion})
			if !result.OK() {
				t.Fatalf("New() failed: %v", result.Err())
			}
			defer authn.Close()
			ctx := context.Background()

			resp, ok, err := authn.AuthenticateToken(ctx, "good-token")
			if err != nil || !ok {
				t.Fatalf("AuthenticateToken(good) = %v, %v", ok, err)
			}
			if resp.User.GetName() != "alice" || resp.User.GetUID() != "1001" || !slices.Equal(resp.User.GetGroups(), []string{"devs", "ops"}) {
				t.Errorf("user = %+v; want alice/1001 in devs, ops", resp.User)
			}
			if got := server.lastAPIVersion(); got != tt.wantVersion {
				t.Errorf("webhook received a %q TokenReview; want %q", got, tt.wantVersion)
			}

			if resp, ok, err := authn.AuthenticateToken(ctx, "bad-token"); ok || resp != nil || err != nil {
				t.Errorf("AuthenticateToken(bad) = %+v, %v, %v; want a plain rejection", resp, ok, err)
			}
		})
	}
}

func TestNewReportsEachStep(t *testing.T) {
	server := newTokenReviewServer(t)
	closed := newTokenReviewServer(t)
	closed.Close()
	otherCA, _, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", nil, nil)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name       string
		cfg        Config
		failedType string // "" means all pass
		wantReason string
		// wantURL is the status of the URL's condition when TLS failed: it is judged on its own.
		wantURL metav1.ConditionStatus
	}{
		{name: "valid", cfg: Config{Endpoint: server.URL, CABundle: server.caBundle}},
		{name: "CA bundle without certificates", cfg: Config{Endpoint: server.URL, CABundle: []byte("not PEM")},
			failedType: authv1alpha1.ConditionTLSConfigurationValid, wantReason: authv1alpha1.ReasonInvalidTLSConfig, wantURL: metav1.ConditionTrue},
		{name: "CA bundle without certificates and an http endpoint", cfg: Config{Endpoint: "http://127.0.0.1/authenticate", CABundle: []byte("not PEM")},
			failedType: authv1alpha1.ConditionTLSConfigurationValid, wantReason: authv1alpha1.ReasonInvalidTLSConfig, wantURL: metav1.ConditionFalse},
		{name: "unparsable endpoint", cfg: Config{Endpoint: "https://[::1"},
			failedType: authv1alpha1.ConditionEndpointURLValid, wantReason: authv1alpha1.ReasonInvalidEndpointURL},
		{name: "http endpoint", cfg: Config{Endpoint: "http://127.0.0.1/authenticate"},
			failedType: authv1alpha1.ConditionEndpointURLValid, wantReason: authv1alpha1.ReasonInvalidEndpointURLScheme},
		{name: "unreachable endpoint", cfg: Config{Endpoint: closed.URL, CABundle: closed.caBundle},
			failedType: authv1alpha1.ConditionWebhookConnectionValid, wantReason: authv1alpha1.ReasonUnableToDialServer},
		{name: "CA that did not sign the server", cfg: Config{Endpoint: server.URL, CABundle: otherCA},
			failedType: authv1alpha1.ConditionWebhookConnectionValid, wantReason: authv1alpha1.ReasonUnableToDialServer},
		{name: "unsupported TokenReview version", cfg: Config{Endpoint: server.URL, CABundle: server.caBundle, APIVersion: "v2"},
			failedType: authv1alpha1.ConditionAuthenticatorValid, wantReason: authv1alpha1.ReasonUnableToInstantiateWebhook},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			authn, result := New(context.Background(), tt.cfg)
			assertChecks(t, result, tt.failedType, tt.wantReason, tt.wantURL)
			if (authn != nil) != (tt.failedType == "") {
				t.Errorf("authenticator returned = %v; want one only when every check passes", authn != nil)
			}
		})
	}
}

// assertChecks expects every condition type in order: True before failedType, False with
// wantReason at it, Unknown after it, but for the URL's condition after a TLS failure, which has
// the status wantURL.
func assertChecks(t *testing.T, result checks.List, failedType, wantReason string, wantURL metav1.ConditionStatus) {
	t.Helper()
	if len(result) != len(allConditionTypes) {
		t.Fatalf("got %d checks %+v; want one per condition type %v", len(result), result, allConditionTypes)
	}
	want := metav1.ConditionTrue
	for i, c := range result {
		if c.Type != allConditionTypes[i] {
			t.Fatalf("check %d has type %q; want %q", i, c.Type, allConditionTypes[i])
		}
		switch {
		case c.Type == failedType:
			t.Logf("%s: %s", c.Reason, c.Message)
			if c.Status != metav1.ConditionFalse || c.Reason != wantReason {
				t.Errorf("%s = %s/%s (%s); want False/%s", c.Type, c.Status, c.Reason, c.Message, wantReason)
			}
			want = metav1.ConditionUnknown
		case c.Type == authv1alpha1.ConditionEndpointURLValid && wantURL != "":
			if c.Status != wantURL {
				t.Errorf("%s = %s/%s (%s); want %s, judged on its own", c.Type, c.Status, c.Reason, c.Message, wantURL)
			}
		case c.Status != want:
			t.Errorf("%s = %s/%s (%s); want %s", c.Type, c.Status, c.Reason, c.Message, want)
		}
	}
}
