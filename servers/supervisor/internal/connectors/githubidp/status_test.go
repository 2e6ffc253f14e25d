package githubidp

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/core/cabundle"
	"sealion.dev/core/certauthority"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/connectors/connectorstest"
)

type condSummary struct {
	Type   string
	Status metav1.ConditionStatus
	Reason string
}

func summarize(t *testing.T, conds []metav1.Condition, generation int64) []condSummary {
	t.Helper()
	var out []condSummary
	for _, c := range conds {
		if c.ObservedGeneration != generation {
			t.Errorf("condition %s has observedGeneration %d, want %d", c.Type, c.ObservedGeneration, generation)
		}
		if c.Message == "" {
			t.Errorf("condition %s has no message", c.Type)
		}
		out = append(out, condSummary{c.Type, c.Status, c.Reason})
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func TestPrepare(t *testing.T) {
	ca, err := certauthority.New("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	spec := idpv1alpha1.GitHubIdentityProviderSpec{
		GitHubAPI: idpv1alpha1.GitHubAPIConfig{Host: ptr("ghe.example.com:8443")},
		AllowAuthentication: idpv1alpha1.GitHubAllowAuthenticationSpec{
			Organizations: idpv1alpha1.GitHubOrganizationsSpec{Allowed: []string{"seals"}},
		},
		Client: idpv1alpha1.GitHubClientSpec{SecretName: "github-client"},
	}
	secret := func(typ corev1.SecretType, data map[string]string) *corev1.Secret {
		s := &corev1.Secret{Type: typ, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	good := secret(ClientSecretType, map[string]string{"clientID": "id", "clientSecret": "shh"})
	const (
		creds  = idpv1alpha1.ConditionClientCredentialsSecretValid
		claims = idpv1alpha1.ConditionClaimsValid
		orgs   = idpv1alpha1.ConditionOrganizationsPolicyValid
		host   = idpv1alpha1.ConditionHostValid
		tls    = idpv1alpha1.ConditionTLSConfigurationValid
		conn   = idpv1alpha1.ConditionGitHubConnectionValid
		T, F   = metav1.ConditionTrue, metav1.ConditionFalse
	)
	allTrue := []condSummary{{creds, T, "Success"}, {claims, T, "Success"}, {orgs, T, "Success"}, {host, T, "Success"}, {tls, T, "Success"}}
	with := func(i int, c condSummary) []condSummary {
		out := append([]condSummary(nil), allTrue...)
		out[i] = c
		return out
	}
	unknownConn := condSummary{conn, metav1.ConditionUnknown, "UnableToValidate"}
	tests := []struct {
		name        string
		spec        func(*idpv1alpha1.GitHubIdentityProviderSpec)
		secret      *corev1.Secret
		caBundle    []byte
		tlsErr      error
		want        []condSummary
		wantAddress string
	}{
		{name: "valid with system roots", secret: good, want: allTrue, wantAddress: "ghe.example.com:8443"},
		{name: "valid with a CA bundle", secret: good, caBundle: ca.Bundle(), want: allTrue, wantAddress: "ghe.example.com:8443"},
		{
			name: "github.com dials the API host", secret: good, want: allTrue, wantAddress: "api.github.com:443",
			spec: func(s *idpv1alpha1.GitHubIdentityProviderSpec) { s.GitHubAPI.Host = nil },
		},
		{name: "no Secret", want: with(0, condSummary{creds, F, "SecretNotFound"}), wantAddress: "ghe.example.com:8443"},
		{
			name: "Opaque Secret", secret: secret(corev1.SecretTypeOpaque, map[string]string{"clientID": "id", "clientSecret": "shh"}),
			want: with(0, condSummary{creds, F, "SecretNotFound"}), wantAddress: "ghe.example.com:8443",
		},
		{
			name: "no clientSecret", secret: secret(ClientSecretType, map[string]string{"clientID": "id"}),
			want: with(0, condSummary{creds, F, "SecretNotFound"}), wantAddress: "ghe.example.com:8443",
		},
		{
			name: "extra key", secret: secret(ClientSecretType, map[string]string{"clientID": "id", "clientSecret": "shh", "x": "y"}),
			want: with(0, condSummary{creds, F, "SecretNotFound"}), wantAddress: "ghe.example.com:8443",
		},
		{
			name: "unknown username attribute", secret: good,
			spec: func(s *idpv1alpha1.GitHubIdentityProviderSpec) {
				s.Claims.Username = ptr(idpv1alpha1.GitHubUsernameAttribute("email"))
			},
			want: with(1, condSummary{claims, F, "Invalid"}), wantAddress: "ghe.example.com:8443",
		},
		{
			name: "all users with allowed organizations", secret: good,
			spec: func(s *idpv1alpha1.GitHubIdentityProviderSpec) {
				s.AllowAuthentication.Organizations.Policy = ptr(idpv1alpha1.GitHubAllowedAuthOrganizationsPolicyAllGitHubUsers)
			},
			want: with(2, condSummary{orgs, F, "Invalid"}), wantAddress: "ghe.example.com:8443",
		},
		{
			name: "default policy without organizations", secret: good,
			spec: func(s *idpv1alpha1.GitHubIdentityProviderSpec) { s.AllowAuthentication.Organizations.Allowed = nil },
			want: with(2, condSummary{orgs, F, "Invalid"}), wantAddress: "ghe.example.com:8443",
		},
		{
			name: "bad host", secret: good,
			spec: func(s *idpv1alpha1.GitHubIdentityProviderSpec) { s.GitHubAPI.Host = ptr("https://ghe.example.com") },
			want: append(with(3, condSummary{host, F, "InvalidHost"}), unknownConn),
		},
		{
			name: "bad TLS", secret: good, tlsErr: &cabundle.Error{Reason: cabundle.ReasonInvalidTLSConfig, Message: "ConfigMap ca not found"},
			want: append(with(4, condSummary{tls, F, "InvalidTLSConfig"}), unknownConn),
		},
		{
			name: "CA bundle without certificates", secret: good, caBundle: []byte("junk"),
			want: append(with(4, condSummary{tls, F, "InvalidTLSConfig"}), unknownConn),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := spec
			s.AllowAuthentication.Organizations.Allowed = append([]string(nil), spec.AllowAuthentication.Organizations.Allowed...)
			if tt.spec != nil {
				tt.spec(&s)
			}
			p, address, conds := Prepare("supervisor", s, 3, tt.secret, tt.caBundle, tt.tlsErr, connectors.Settings{})
			if diff := cmp.Diff(tt.want, summarize(t, conds, 3)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if address != tt.wantAddress {
				t.Errorf("dial address %q, want %q", address, tt.wantAddress)
			}
			allOK := cmp.Equal(tt.want, allTrue)
			if (p != nil) != allOK {
				t.Fatalf("provider %v, want one: %v", p, allOK)
			}
			if p != nil && (p.ClientID() != "id" || p.cfg.ClientSecret != "shh" || p.cfg.HTTPClient == nil) {
				t.Errorf("provider config %+v", p.cfg)
			}
		})
	}
}

func TestConnectionCondition(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	address := srv.Listener.Addr().String()

	// The httptest server's certificate is self-signed: it is its own CA.
	certPEM := pemOf(t, srv)
	if err := CheckConnection(t.Context(), address, certPEM, connectors.Settings{}); err != nil {
		t.Fatalf("dial with the right CA: %v", err)
	}
	c := ConnectionCondition(address, "GHE.example.com", 2, nil)
	want := metav1.Condition{Type: "GitHubConnectionValid", Status: metav1.ConditionTrue, Reason: "Success", ObservedGeneration: 2,
		Message: `dialed "` + address + `" for spec.githubAPI.host ("GHE.example.com"): host is reachable and TLS verification succeeds`}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("condition after a good dial (-want +got):\n%s", diff)
	}

	err := CheckConnection(t.Context(), address, nil, connectors.Settings{})
	if err == nil {
		t.Fatal("dial trusting the system roots must fail")
	}
	c = ConnectionCondition(address, "GHE.example.com", 2, err)
	want = metav1.Condition{Type: "GitHubConnectionValid", Status: metav1.ConditionFalse, Reason: "UnableToDialServer", ObservedGeneration: 2,
		Message: `cannot dial "` + address + `" for spec.githubAPI.host ("GHE.example.com"): ` + err.Error()}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("condition after a bad dial (-want +got):\n%s", diff)
	}
	if err := CheckConnection(t.Context(), address, []byte("junk"), connectors.Settings{}); err == nil {
		t.Error("a CA bundle without certificates must fail")
	}
}

func pemOf(t *testing.T, srv *httptest.Server) []byte {
	t.Helper()
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// ClientCredentialsSecretValid is worded as upstream words it, with its one false reason.
func TestClientSecretConditionAsUpstream(t *testing.T) {
	const tail = `: secret from spec.client.SecretName ("gh") must be found in namespace "supervisor" with type "secrets.pinniped.dev/github-client" and keys "clientID" and "clientSecret"`
	secretOf := func(typ corev1.SecretType, data map[string]string) *corev1.Secret {
		s := &corev1.Secret{Type: typ, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	tests := []struct {
		secret *corev1.Secret
		want   string
	}{
		{nil, `secret "gh" not found` + tail},
		{secretOf(corev1.SecretTypeOpaque, nil), `wrong secret type "Opaque"` + tail},
		{secretOf(ClientSecretType, map[string]string{"clientSecret": "s"}), `missing key "clientID"` + tail},
		{secretOf(ClientSecretType, map[string]string{"clientID": "i"}), `missing key "clientSecret"` + tail},
		{secretOf(ClientSecretType, map[string]string{"clientID": "i", "clientSecret": "s", "x": "y"}), `extra keys found` + tail},
	}
	for _, tt := range tests {
		_, _, c := checkClientSecret("supervisor", "gh", tt.secret)
		if c.Status != metav1.ConditionFalse || c.Reason != "SecretNotFound" || c.Message != tt.want {
			t.Errorf("got %s/%s %q\nwant False/SecretNotFound %q", c.Status, c.Reason, c.Message, tt.want)
		}
	}
	_, _, c := checkClientSecret("supervisor", "gh", secretOf(ClientSecretType, map[string]string{"clientID": "i", "clientSecret": "s"}))
	if want := `clientID and clientSecret have been read from spec.client.SecretName ("gh")`; c.Status != metav1.ConditionTrue || c.Message != want {
		t.Errorf("got %s %q, want True %q", c.Status, c.Message, want)
	}
}

// A GitHub host that accepts the connection and never answers the TLS handshake is reported
// unreachable after the connect timeout, not when the controller's sync gives up.
func TestCheckConnectionTimeout(t *testing.T) {
	address := connectorstest.SilentUpstream(t)
	start := time.Now()
	err := CheckConnection(t.Context(), address, nil, connectors.Settings{ConnectTimeout: 200 * time.Millisecond})
	if err == nil {
		t.Fatal("a silent host was dialed successfully")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("gave up after %v, want about the 200ms connect timeout", took)
	}
	if !connectors.Unreachable(err) {
		t.Errorf("the timeout %v is not reported as unreachable", err)
	}
}
