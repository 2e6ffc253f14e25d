package oidcidp

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/core/testing/oidcissuer"
	"sealion.dev/servers/supervisor/internal/connectors"
)

type opener struct {
	t       *testing.T
	now     time.Time
	secret  *corev1.Secret
	probes  *connectors.ProbeCache
	discovs int
	// settings are the Supervisor's connector settings the opener passes.
	settings connectors.Settings
	// fail, when set, is the outcome of every discovery.
	fail error
}

func newOpener(t *testing.T) *opener {
	o := &opener{t: t, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		secret: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "1"}, Type: ClientSecretType,
			Data: map[string][]byte{ClientIDKey: []byte("supervisor"), ClientSecretKey: []byte("shh")}}}
	o.probes = connectors.NewProbeCache(func() time.Time { return o.now })
	return o
}

// open opens idp with the real discovery, counted.
func (o *opener) open(idp *idpv1alpha1.OIDCIdentityProvider) (*Connector, []metav1.Condition) {
	o.t.Helper()
	in := connectors.Inputs{
		Secret: func(string) (*corev1.Secret, error) { return o.secret, nil },
		CABundle: func(_ string, spec *idpv1alpha1.TLSSpec) ([]byte, error) {
			return base64.StdEncoding.DecodeString(spec.CertificateAuthorityData)
		},
		Probes:   o.probes,
		Settings: o.settings,
	}
	c, conds, err := open(context.Background(), idp, in, func(ctx context.Context, issuer string, client *http.Client) (*oidc.Provider, error) {
		o.discovs++
		if o.fail != nil {
			return nil, o.fail
		}
		return discover(ctx, issuer, client)
	})
	if err != nil {
		o.t.Fatal(err)
	}
	conn, _ := c.(*Connector)
	return conn, conds
}

func oidcIDP(iss *oidcissuer.Issuer) *idpv1alpha1.OIDCIdentityProvider {
	return &idpv1alpha1.OIDCIdentityProvider{ObjectMeta: metav1.ObjectMeta{Name: "upstream", Generation: 1}, Spec: idpv1alpha1.OIDCIdentityProviderSpec{
		Issuer: iss.Issuer, Client: idpv1alpha1.OIDCClientCredentials{SecretName: "client"},
		TLS: &idpv1alpha1.TLSSpec{CertificateAuthorityData: base64.StdEncoding.EncodeToString(iss.CABundle)},
		AuthorizationConfig: idpv1alpha1.OIDCAuthorizationConfig{
			AdditionalScopes:              []string{"openid", "email", "groups"},
			AdditionalAuthorizeParameters: []idpv1alpha1.Parameter{{Name: "acr_values", Value: "phr"}},
		},
		Claims: idpv1alpha1.OIDCClaims{Username: "email", Groups: "groups", AdditionalClaimMappings: map[string]string{"mail": "email"}},
	}}
}

func TestOpen(t *testing.T) {
	iss := oidcissuer.New(t)
	c, conds := newOpener(t).open(oidcIDP(iss))
	if c == nil || len(conds) != 4 || connectors.PhaseOf(conds) != idpv1alpha1.PhaseReady {
		t.Fatalf("connector %v, conditions %+v; want a connector and 4 true conditions", c, conds)
	}
	cfg := c.cfg
	if cfg.IssuerURL != iss.Issuer || cfg.ClientID != "supervisor" || cfg.ClientSecret != "shh" || cfg.UsernameClaim != "email" ||
		cfg.GroupsClaim != "groups" || cfg.AuthorizeParameters["acr_values"] != "phr" || cfg.AdditionalClaims["mail"] != "email" {
		t.Errorf("config = %+v", cfg)
	}
	if !slices.Equal(cfg.Scopes, []string{"email", "groups"}) {
		t.Errorf("scopes = %q, want [email groups] (openid is always sent, not listed)", cfg.Scopes)
	}
	// The client trusts the spec's CA: it reaches the issuer.
	resp, err := cfg.HTTPClient.Get(iss.DiscoveryURL())
	if err != nil {
		t.Fatalf("the connector's HTTP client cannot reach the issuer: %v", err)
	}
	_ = resp.Body.Close()
}

// TestOpenDiscoversOnlyOnChange: the discovery document is read again only after
// connectors.ProbeTTL or when the issuer or CA bundle changed, and connectors of an unchanged
// issuer and CA bundle share the HTTP client and the discovery, so that logins need not discover
// again.
func TestOpenDiscoversOnlyOnChange(t *testing.T) {
	iss := oidcissuer.New(t)
	o := newOpener(t)
	idp := oidcIDP(iss)
	first, _ := o.open(idp)
	second, _ := o.open(idp)
	if o.discovs != 1 || first == nil || second == nil {
		t.Fatalf("two openings: %d discoveries, connectors %v and %v; want 1 and two connectors", o.discovs, first, second)
	}
	o.now = o.now.Add(connectors.ProbeTTL)
	third, _ := o.open(idp)
	if o.discovs != 2 {
		t.Errorf("after connectors.ProbeTTL: %d discoveries, want 2", o.discovs)
	}
	changed := idp.DeepCopy()
	changed.Generation, changed.Spec.Claims.Username = 2, "sub"
	o.secret = o.secret.DeepCopy()
	o.secret.ResourceVersion, o.secret.Data[ClientIDKey] = "2", []byte("supervisor-2")
	fourth, _ := o.open(changed)
	if o.discovs != 2 || fourth.cfg.ClientID != "supervisor-2" || fourth.cfg.UsernameClaim != "sub" {
		t.Errorf("after a change of claims and Secret: %d discoveries (want 2), config %+v", o.discovs, fourth.cfg)
	}
	for _, c := range []*Connector{second, third, fourth} {
		if c.cfg.HTTPClient != first.cfg.HTTPClient || c.disc != first.disc {
			t.Error("the HTTP client or discovery changed although the issuer and CA bundle did not")
		}
	}
	if first.disc.provider == nil {
		t.Error("the probe's discovery is not kept for logins")
	}

	other := oidcissuer.New(t)
	moved := idp.DeepCopy()
	moved.Spec.Issuer, moved.Spec.TLS.CertificateAuthorityData = other.Issuer, base64.StdEncoding.EncodeToString(other.CABundle)
	fifth, _ := o.open(moved)
	if o.discovs != 3 || fifth == nil || fifth.disc == first.disc {
		t.Errorf("another issuer: %d discoveries (want 3), shares the discovery: %v", o.discovs, fifth != nil && fifth.disc == first.disc)
	}
}

// TestOpenWhileUnreachable: an issuer that refuses connections after a successful discovery of
// the same inputs keeps its connector, with the discovery of then, while the status shows the
// outage; any other failure drops it, and the issuer's return makes it Ready at the next opening.
func TestOpenWhileUnreachable(t *testing.T) {
	iss := oidcissuer.New(t)
	idp := oidcIDP(iss)
	o := newOpener(t)
	refused := &url.Error{Op: "Get", URL: iss.DiscoveryURL(), Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	disc := func(conds []metav1.Condition) metav1.Condition {
		return conds[slices.IndexFunc(conds, func(c metav1.Condition) bool { return c.Type == idpv1alpha1.ConditionOIDCDiscoverySucceeded })]
	}

	o.fail = refused
	if c, conds := o.open(idp); c != nil || connectors.PhaseOf(conds) != idpv1alpha1.PhaseError {
		t.Errorf("unreachable before any success: connector %v, conditions %+v; want none, phase Error", c, conds)
	}
	o.fail = nil
	good, _ := o.open(idp)
	if good == nil {
		t.Fatal("no connector once the issuer answered")
	}

	o.probes.Expire()
	o.fail = refused
	c, conds := o.open(idp)
	if d := disc(conds); c == nil || c.disc != good.disc || connectors.PhaseOf(conds) != idpv1alpha1.PhaseError ||
		d.Status != metav1.ConditionFalse || d.Reason != idpv1alpha1.ReasonUnreachable || !strings.Contains(d.Message, iss.Issuer) {
		t.Errorf("unreachable after a success: connector %v (discovery kept: %v), conditions %+v; want the last good connector, phase Error, discovery False naming the issuer",
			c, c != nil && c.disc == good.disc, conds)
	}
	o.fail = errors.New("the discovery document lacks authorization_endpoint or token_endpoint")
	if c, _ := o.open(idp); c != nil {
		t.Error("an issuer that answered wrongly kept its connector")
	}
	o.fail = refused
	o.secret = nil
	if c, _ := o.open(idp); c != nil {
		t.Error("an unreachable issuer kept its connector after its client Secret was deleted")
	}

	o.secret = newOpener(t).secret
	o.fail = nil
	before := o.discovs
	if c, conds := o.open(idp); c == nil || connectors.PhaseOf(conds) != idpv1alpha1.PhaseReady || o.discovs != before+1 {
		t.Errorf("after the issuer came back: connector %v, conditions %+v, %d discoveries; want Ready after one", c, conds, o.discovs-before)
	}
}

// TestConditions: the conditions of an OIDCIdentityProvider, in upstream Pinniped's words, sorted
// by type as it stores them.
func TestConditions(t *testing.T) {
	iss := oidcissuer.New(t)
	cond := func(typ string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: 1}
	}
	paramsOK := cond("AdditionalAuthorizeParametersValid", "True", "Success", "additionalAuthorizeParameters parameter names are allowed")
	credsOK := cond("ClientCredentialsSecretValid", "True", "Success", "loaded client credentials")
	discovery := func(status metav1.ConditionStatus, reason, message string) metav1.Condition {
		return cond("OIDCDiscoverySucceeded", status, reason, message)
	}
	tlsOK := cond("TLSConfigurationValid", "True", "Success", "spec.tls is valid: using configured CA bundle")
	long := strings.Repeat("x", 400)
	tests := []struct {
		name   string
		change func(*idpv1alpha1.OIDCIdentityProvider)
		fail   error
		want   []metav1.Condition
	}{
		{
			name: "valid",
			want: []metav1.Condition{paramsOK, credsOK, discovery("True", "Success", "discovered issuer configuration"), tlsOK},
		},
		{
			name: "disallowed parameters, each time they appear",
			change: func(idp *idpv1alpha1.OIDCIdentityProvider) {
				idp.Spec.AuthorizationConfig.AdditionalAuthorizeParameters = []idpv1alpha1.Parameter{{Name: "scope"}, {Name: "acr_values"}, {Name: "hd"}, {Name: "scope"}}
			},
			want: []metav1.Condition{
				cond("AdditionalAuthorizeParametersValid", "False", "DisallowedParameterName", "the following additionalAuthorizeParameters are not allowed: scope,hd,scope"),
				credsOK, discovery("True", "Success", "discovered issuer configuration"), tlsOK,
			},
		},
		{
			name:   "http issuer",
			change: func(idp *idpv1alpha1.OIDCIdentityProvider) { idp.Spec.Issuer = "http://127.0.0.1:1/x" },
			want:   []metav1.Condition{paramsOK, credsOK, discovery("False", "Unreachable", `issuer URL 'http://127.0.0.1:1/x' must have "https" scheme, not "http"`), tlsOK},
		},
		{
			name:   "issuer with a query",
			change: func(idp *idpv1alpha1.OIDCIdentityProvider) { idp.Spec.Issuer = "https://127.0.0.1:1/x?a=b" },
			want:   []metav1.Condition{paramsOK, credsOK, discovery("False", "Unreachable", `issuer URL 'https://127.0.0.1:1/x?a=b' cannot contain query or fragment component`), tlsOK},
		},
		{
			name: "discovery fails",
			fail: errors.New("oidc: issuer did not match"),
			want: []metav1.Condition{paramsOK, credsOK, discovery("False", "Unreachable", `failed to perform OIDC discovery against "`+iss.Issuer+`":`+"\noidc: issuer did not match"), tlsOK},
		},
		{
			name: "a long error is truncated",
			fail: errors.New(long),
			want: []metav1.Condition{paramsOK, credsOK, discovery("False", "Unreachable",
				`failed to perform OIDC discovery against "`+iss.Issuer+`":`+"\n"+long[:300]+" [truncated 100 chars]"), tlsOK},
		},
		{
			name:   "invalid TLS spec",
			change: func(idp *idpv1alpha1.OIDCIdentityProvider) { idp.Spec.TLS.CertificateAuthorityData = "!" },
			want: []metav1.Condition{paramsOK, credsOK,
				discovery("False", "InvalidTLSConfig", "illegal base64 data at input byte 0"),
				cond("TLSConfigurationValid", "False", "InvalidTLSConfig", "illegal base64 data at input byte 0")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idp := oidcIDP(iss)
			if tt.change != nil {
				tt.change(idp)
			}
			o := newOpener(t)
			o.fail = tt.fail
			_, conds := o.open(idp)
			slices.SortFunc(conds, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
			if diff := cmp.Diff(tt.want, conds); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHTTPSURLCondition: the endpoints of a discovery document are checked as upstream checks
// them, in its words.
func TestHTTPSURLCondition(t *testing.T) {
	for _, tt := range []struct{ raw, what, want string }{
		{"https://idp.example.com/authorize", "authorization endpoint", ""},
		{"", "authorization endpoint", `authorization endpoint URL '' must have "https" scheme, not ""`},
		{"http://idp.example.com/token", "token endpoint", `token endpoint URL 'http://idp.example.com/token' must have "https" scheme, not "http"`},
		{"https://idp.example.com/revoke#x", "revocation endpoint", `revocation endpoint URL 'https://idp.example.com/revoke#x' cannot contain query or fragment component`},
		{"https://idp.example.com/%zz", "token endpoint", `failed to parse token endpoint URL: parse "https://idp.example.com/%zz": invalid URL escape "%zz"`},
	} {
		c, ok := httpsURLCondition(tt.raw, tt.what, idpv1alpha1.ReasonInvalidResponse)
		if ok != (tt.want == "") || c.Message != tt.want || (!ok && (c.Reason != idpv1alpha1.ReasonInvalidResponse || c.Status != metav1.ConditionFalse)) {
			t.Errorf("%q: got %+v, %v; want message %q", tt.raw, c, ok, tt.want)
		}
	}
}
