package server

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// The impersonation proxy reaches the kube-apiserver as names.impersonationProxyServiceAccount,
// with a token the Concierge requested for it, and never with the Concierge's own credentials.
func TestImpersonationProxyAPIServer(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	backend := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			var tr authenticationv1.TokenRequest
			if err := json.Unmarshal(body, &tr); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			tr.APIVersion, tr.Kind = "authentication.k8s.io/v1", "TokenRequest"
			tr.Status = authenticationv1.TokenRequestStatus{Token: "proxy-sa-token", ExpirationTimestamp: metav1.NewTime(time.Now().Add(time.Hour))}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(&tr)
		}
	}))
	defer backend.Close()
	c, _ := testConfig(t, minimalFile+"  impersonationProxyServiceAccount: tuna-proxy\n")
	c.RESTConfig = &rest.Config{Host: backend.URL, BearerToken: "concierge-sa-token", TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		ContentConfig: rest.ContentConfig{ContentType: "application/json"}}
	apiServer, err := c.Complete().impersonationProxyAPIServer()
	if err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(apiServer)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(backend.URL + "/api/v1/namespaces")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	want := []string{
		"POST /api/v1/namespaces/concierge-ns/serviceaccounts/tuna-proxy/token Bearer concierge-sa-token",
		"GET /api/v1/namespaces Bearer proxy-sa-token",
	}
	if len(seen) != len(want) || seen[0] != want[0] || seen[1] != want[1] {
		t.Errorf("the kube-apiserver saw %q, want %q", seen, want)
	}
}
