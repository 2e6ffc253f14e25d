package ldapidp

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/core/cabundle"
	"sealion.dev/core/certauthority"
	"sealion.dev/servers/internal/tlsprofile"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/connectors/ldapclient"
)

type condSummary struct {
	Type   string
	Status metav1.ConditionStatus
	Reason string
}

func summarize(conds []metav1.Condition, generation int64, t *testing.T) []condSummary {
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

func TestPrepare(t *testing.T) {
	ca, err := certauthority.New("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	profile, err := tlsprofile.New([]string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"})
	if err != nil {
		t.Fatal(err)
	}
	spec := idpv1alpha1.LDAPIdentityProviderSpec{
		Host: "ldap.example.test",
		Bind: idpv1alpha1.LDAPIdentityProviderBind{SecretName: "bind"},
		UserSearch: idpv1alpha1.LDAPIdentityProviderUserSearch{
			Base:       "ou=people,dc=example",
			Attributes: idpv1alpha1.LDAPIdentityProviderUserSearchAttributes{Username: "uid", UID: "entryUUID"},
		},
	}
	basicAuth := func(data map[string]string) *corev1.Secret {
		s := &corev1.Secret{Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	good := basicAuth(map[string]string{"username": "cn=svc,dc=example", "password": "pw"})
	const (
		bind = idpv1alpha1.ConditionBindSecretValid
		tls  = idpv1alpha1.ConditionTLSConfigurationValid
		conn = idpv1alpha1.ConditionLDAPConnectionValid
	)
	tests := []struct {
		name         string
		spec         func(*idpv1alpha1.LDAPIdentityProviderSpec)
		secret       *corev1.Secret
		caBundle     []byte
		tlsErr       error
		want         []condSummary
		wantProvider bool
	}{
		{
			name:   "ready to probe with system roots",
			secret: good,
			want: []condSummary{
				{bind, metav1.ConditionTrue, "Success"},
				{tls, metav1.ConditionTrue, "Success"},
			},
			wantProvider: true,
		},
		{
			name:         "ready to probe with a CA bundle",
			secret:       good,
			caBundle:     ca.Bundle(),
			want:         []condSummary{{bind, metav1.ConditionTrue, "Success"}, {tls, metav1.ConditionTrue, "Success"}},
			wantProvider: true,
		},
		{
			name: "secret not found",
			want: []condSummary{
				{bind, metav1.ConditionFalse, "SecretNotFound"},
				{tls, metav1.ConditionTrue, "Success"},
			},
		},
		{
			name:   "secret of the wrong type",
			secret: &corev1.Secret{Type: corev1.SecretTypeOpaque, Data: good.Data},
			want: []condSummary{
				{bind, metav1.ConditionFalse, "SecretWrongType"},
				{tls, metav1.ConditionTrue, "Success"},
			},
		},
		{
			name:   "secret without a password",
			secret: basicAuth(map[string]string{"username": "cn=svc"}),
			want: []condSummary{
				{bind, metav1.ConditionFalse, "SecretMissingKeys"},
				{tls, metav1.ConditionTrue, "Success"},
			},
		},
		{
			name:   "unusable spec.tls",
			secret: good,
			tlsErr: &cabundle.Error{Reason: cabundle.ReasonInvalidTLSConfig, Message: "ConfigMap ns/ca not found"},
			want: []condSummary{
				{bind, metav1.ConditionTrue, "Success"},
				{tls, metav1.ConditionFalse, "InvalidTLSConfig"},
			},
		},
		{
			name:   "other TLS error",
			secret: good,
			tlsErr: errors.New("boom"),
			want: []condSummary{
				{bind, metav1.ConditionTrue, "Success"},
				{tls, metav1.ConditionFalse, "InvalidTLSConfig"},
			},
		},
		{
			name:   "unusable spec",
			spec:   func(s *idpv1alpha1.LDAPIdentityProviderSpec) { s.UserSearch.Filter = "uid=pinny" },
			secret: good,
			want: []condSummary{
				{bind, metav1.ConditionTrue, "Success"},
				{tls, metav1.ConditionTrue, "Success"},
				{conn, metav1.ConditionFalse, "Invalid"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := spec
			if tt.spec != nil {
				tt.spec(&s)
			}
			p, conds := Prepare(s, 7, tt.secret, tt.caBundle, tt.tlsErr, connectors.Settings{TLSProfile: profile})
			if diff := cmp.Diff(tt.want, summarize(conds, 7, t)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if (p != nil) != tt.wantProvider {
				t.Fatalf("provider = %v, want one: %v", p, tt.wantProvider)
			}
			if p != nil && !slices.Equal(p.Config().TLSProfile.LDAPClientConfig().CipherSuites, profile.LDAPClientConfig().CipherSuites) {
				t.Errorf("provider offers %x, want the profile's ciphers", p.Config().TLSProfile.LDAPClientConfig().CipherSuites)
			}
			if p != nil && (p.Config().BindUsername != "cn=svc,dc=example" || p.Config().BindPassword != "pw") {
				t.Errorf("provider binds as %q/%q, want the Secret's credentials", p.Config().BindUsername, p.Config().BindPassword)
			}
		})
	}
}

func TestConnectionCondition(t *testing.T) {
	p, err := ldapclient.New(ldapclient.Config{
		Host: "ldap.example.test", BindUsername: "cn=svc,dc=example", BindPassword: "pw",
		UserSearch: ldapclient.UserSearch{Base: "ou=people,dc=example", UsernameAttribute: "uid", UIDAttribute: "entryUUID"},
	})
	if err != nil {
		t.Fatal(err)
	}
	bind := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bind", ResourceVersion: "4711"}}
	ok := ConnectionCondition(p, bind, 3, nil)
	want := metav1.Condition{
		Type: idpv1alpha1.ConditionLDAPConnectionValid, Status: metav1.ConditionTrue, Reason: "Success", ObservedGeneration: 3,
		Message: `successfully able to connect to "ldap.example.test" and bind as user "cn=svc,dc=example" [validated with Secret "bind" at version "4711"]`,
	}
	if diff := cmp.Diff(want, ok); diff != "" {
		t.Errorf("success condition (-want +got):\n%s", diff)
	}
	failed := ConnectionCondition(p, bind, 3, errors.New("connecting: refused"))
	if failed.Status != metav1.ConditionFalse || failed.Reason != "LDAPConnectionError" || failed.Message != `could not successfully connect to "ldap.example.test" and bind as user "cn=svc,dc=example": connecting: refused` {
		t.Errorf("failure condition = %+v", failed)
	}

}

func TestConfigFromSpec(t *testing.T) {
	spec := idpv1alpha1.LDAPIdentityProviderSpec{
		Host: "ldap.example.test:1636",
		UserSearch: idpv1alpha1.LDAPIdentityProviderUserSearch{
			Base: "ou=people", Filter: "mail={}",
			Attributes: idpv1alpha1.LDAPIdentityProviderUserSearchAttributes{Username: "mail", UID: "entryUUID"},
		},
		GroupSearch: idpv1alpha1.LDAPIdentityProviderGroupSearch{
			Base: "ou=groups", Filter: "memberUid={}", UserAttributeForFilter: "uid",
			Attributes:       idpv1alpha1.LDAPIdentityProviderGroupSearchAttributes{GroupName: "cn"},
			SkipGroupRefresh: true,
		},
	}
	got := ConfigFromSpec(spec, []byte("ca"), "cn=svc", "pw")
	want := ldapclient.Config{
		Host: "ldap.example.test:1636", CABundle: []byte("ca"), BindUsername: "cn=svc", BindPassword: "pw",
		UserSearch:  ldapclient.UserSearch{Base: "ou=people", Filter: "mail={}", UsernameAttribute: "mail", UIDAttribute: "entryUUID"},
		GroupSearch: ldapclient.GroupSearch{Base: "ou=groups", Filter: "memberUid={}", UserAttributeForFilter: "uid", GroupNameAttribute: "cn", SkipGroupRefresh: true},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(tlsprofile.Profile{})); diff != "" {
		t.Errorf("ConfigFromSpec (-want +got):\n%s", diff)
	}
}

// BindSecretValid is worded as upstream words it, with its reasons.
func TestBindSecretConditionAsUpstream(t *testing.T) {
	secretOf := func(typ corev1.SecretType, data map[string]string) *corev1.Secret {
		s := &corev1.Secret{Type: typ, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	tests := []struct {
		secret          *corev1.Secret
		status          metav1.ConditionStatus
		reason, message string
	}{
		{nil, metav1.ConditionFalse, "SecretNotFound", `secret "bind" not found`},
		{secretOf(corev1.SecretTypeOpaque, nil), metav1.ConditionFalse, "SecretWrongType",
			`referenced Secret "bind" has wrong type "Opaque" (should be "kubernetes.io/basic-auth")`},
		{secretOf(corev1.SecretTypeBasicAuth, map[string]string{"username": "cn=svc"}), metav1.ConditionFalse, "SecretMissingKeys",
			`referenced Secret "bind" is missing required keys ["username" "password"]`},
		{secretOf(corev1.SecretTypeBasicAuth, map[string]string{"username": "cn=svc", "password": "pw"}), metav1.ConditionTrue, "Success", "loaded bind secret"},
	}
	for _, tt := range tests {
		_, _, c := BindSecretCondition("bind", tt.secret)
		if c.Status != tt.status || c.Reason != tt.reason || c.Message != tt.message {
			t.Errorf("got %s/%s %q\nwant %s/%s %q", c.Status, c.Reason, c.Message, tt.status, tt.reason, tt.message)
		}
	}
}
