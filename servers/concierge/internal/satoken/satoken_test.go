package satoken

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	kubetesting "k8s.io/client-go/testing"
)

// tokenAPI answers TokenRequests with the next of its replies, recording what was asked.
type tokenAPI struct {
	mu      sync.Mutex
	replies []reply
	asked   []string
	// now is the kube-apiserver's clock; time.Now when nil.
	now func() time.Time
}

type reply struct {
	token    string
	lifetime time.Duration
	err      error
}

func (a *tokenAPI) react(action kubetesting.Action) (bool, runtime.Object, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	create := action.(kubetesting.CreateAction)
	tr := create.GetObject().(*authenticationv1.TokenRequest)
	a.asked = append(a.asked, create.GetNamespace()+"/"+create.(kubetesting.CreateActionImpl).Name+" "+action.GetSubresource()+
		" "+time.Duration(*tr.Spec.ExpirationSeconds*int64(time.Second)).String())
	if len(a.replies) == 0 {
		return true, nil, errors.New("no more replies")
	}
	r := a.replies[0]
	a.replies = a.replies[1:]
	if r.err != nil {
		return true, nil, r.err
	}
	now := time.Now
	if a.now != nil {
		now = a.now
	}
	tr.Status = authenticationv1.TokenRequestStatus{Token: r.token, ExpirationTimestamp: metav1.NewTime(now().Add(r.lifetime))}
	return true, tr, nil
}

// apiServer records the Authorization header of each request and answers with the next status.
type apiServer struct {
	mu       sync.Mutex
	seen     []string
	statuses []int
}

func (s *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, r.Header.Get("Authorization"))
	status := http.StatusOK
	if len(s.statuses) > 0 {
		status, s.statuses = s.statuses[0], s.statuses[1:]
	}
	w.WriteHeader(status)
}

func TestConfig(t *testing.T) {
	tests := []struct {
		name     string
		replies  []reply
		statuses []int
		requests int
		// wantSeen are the Authorization headers the kube-apiserver saw; wantErr the error of the
		// last request, which then reaches nothing.
		wantSeen []string
		wantErr  string
		wantAsks int
	}{
		{
			name:     "a token is reused until its renewal time",
			replies:  []reply{{token: "t1", lifetime: time.Hour}},
			requests: 3, wantSeen: []string{"Bearer t1", "Bearer t1", "Bearer t1"}, wantAsks: 1,
		},
		{
			name:     "a token past 80% of its life is renewed",
			replies:  []reply{{token: "t1", lifetime: time.Millisecond}, {token: "t2", lifetime: time.Hour}},
			requests: 2, wantSeen: []string{"Bearer t1", "Bearer t2"}, wantAsks: 2,
		},
		{
			name:     "without a token, nothing is sent",
			replies:  []reply{{err: errors.New("serviceaccounts \"pinniped-concierge-impersonation-proxy\" is forbidden")}},
			requests: 1, wantErr: `requesting a token for the impersonation proxy's ServiceAccount concierge/pinniped-concierge-impersonation-proxy: serviceaccounts "pinniped-concierge-impersonation-proxy" is forbidden`,
			wantAsks: 1,
		},
		{
			name:     "a failed renewal keeps the token in hand",
			replies:  []reply{{token: "t1", lifetime: time.Millisecond}, {err: errors.New("unavailable")}},
			requests: 2, wantSeen: []string{"Bearer t1", "Bearer t1"}, wantAsks: 2,
		},
		{
			// A token refused on the request that fetched it is not, lest every request ask again.
			name:     "a token the kube-apiserver refuses is replaced",
			replies:  []reply{{token: "t1", lifetime: time.Hour}, {token: "t2", lifetime: time.Hour}},
			statuses: []int{http.StatusOK, http.StatusUnauthorized},
			requests: 3, wantSeen: []string{"Bearer t1", "Bearer t1", "Bearer t2"}, wantAsks: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &tokenAPI{replies: tt.replies}
			kube := kubefake.NewClientset()
			kube.PrependReactor("create", "serviceaccounts", api.react)
			server := &apiServer{statuses: tt.statuses}
			backend := httptest.NewTLSServer(server)
			defer backend.Close()
			// The Concierge's own credentials are never sent.
			base := &rest.Config{Host: backend.URL, BearerToken: "concierge", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
			client, err := rest.HTTPClientFor(Config(base, kube.CoreV1(), "concierge", "pinniped-concierge-impersonation-proxy"))
			if err != nil {
				t.Fatal(err)
			}
			for i := range tt.requests {
				if i > 0 {
					time.Sleep(5 * time.Millisecond) // past a short-lived token's renewal time
				}
				resp, err := client.Get(backend.URL + "/api")
				if i == tt.requests-1 && tt.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
						t.Fatalf("error %v, want %q", err, tt.wantErr)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				_ = resp.Body.Close()
			}
			if strings.Join(server.seen, ",") != strings.Join(tt.wantSeen, ",") {
				t.Errorf("the kube-apiserver saw %q, want %q", server.seen, tt.wantSeen)
			}
			if len(api.asked) != tt.wantAsks {
				t.Fatalf("%d TokenRequests, want %d: %q", len(api.asked), tt.wantAsks, api.asked)
			}
			for _, a := range api.asked {
				if a != "concierge/pinniped-concierge-impersonation-proxy token 1h0m0s" {
					t.Errorf("asked %q, want a 1h token of concierge/pinniped-concierge-impersonation-proxy", a)
				}
			}
		})
	}
}

// A token is renewed at 80% of the life the kube-apiserver gave it, which may differ from the
// hour asked for.
func TestRenewalTime(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { return t0 }
	api := &tokenAPI{replies: []reply{{token: "t1", lifetime: time.Hour}, {token: "t2", lifetime: 10 * time.Minute}}, now: now}
	kube := kubefake.NewClientset()
	kube.PrependReactor("create", "serviceaccounts", api.react)
	s := &tokenSource{client: kube.CoreV1().ServiceAccounts("concierge"), namespace: "concierge", name: "proxy", now: now}
	for _, want := range []time.Time{t0.Add(48 * time.Minute), t0.Add(8 * time.Minute)} {
		tok, err := s.Token()
		if err != nil {
			t.Fatal(err)
		}
		if !tok.Expiry.Equal(want) || tok.TokenType != "Bearer" {
			t.Errorf("token %s renewed at %v, want %v", tok.AccessToken, tok.Expiry, want)
		}
	}
}
