package activedirectoryidp

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/core/cabundle"
	"sealion.dev/servers/internal/tlsprofile"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/connectors/ldapclient"
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

const (
	bindCond = idpv1alpha1.ConditionBindSecretValid
	tlsCond  = idpv1alpha1.ConditionTLSConfigurationValid
	baseCond = idpv1alpha1.ConditionSearchBaseFound
	connCond = idpv1alpha1.ConditionLDAPConnectionValid
)

func TestPrepare(t *testing.T) {
	profile, err := tlsprofile.New([]string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"})
	if err != nil {
		t.Fatal(err)
	}
	good := &corev1.Secret{Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{"username": []byte("svc@example.test"), "password": []byte("pw")}}
	tests := []struct {
		name    string
		secret  *corev1.Secret
		tlsErr  error
		want    []condSummary
		wantCfg bool
	}{
		{
			name: "ready to connect", secret: good, wantCfg: true,
			want: []condSummary{{bindCond, metav1.ConditionTrue, "Success"}, {tlsCond, metav1.ConditionTrue, "Success"}},
		},
		{
			name: "secret not found",
			want: []condSummary{
				{bindCond, metav1.ConditionFalse, "SecretNotFound"}, {tlsCond, metav1.ConditionTrue, "Success"},
			},
		},
		{
			name: "unusable spec.tls", secret: good,
			tlsErr: &cabundle.Error{Reason: cabundle.ReasonInvalidTLSConfig, Message: "ConfigMap ns/ca not found"},
			want: []condSummary{
				{bindCond, metav1.ConditionTrue, "Success"}, {tlsCond, metav1.ConditionFalse, "InvalidTLSConfig"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, conds := Prepare(minimalSpec(), 3, tt.secret, nil, tt.tlsErr, connectors.Settings{TLSProfile: profile})
			if diff := cmp.Diff(tt.want, summarize(t, conds, 3)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if (cfg != nil) != tt.wantCfg {
				t.Fatalf("config = %v, want one: %v", cfg, tt.wantCfg)
			}
			if cfg != nil && !slices.Equal(cfg.TLSProfile.LDAPClientConfig().CipherSuites, profile.LDAPClientConfig().CipherSuites) {
				t.Errorf("config offers %x, want the profile's ciphers", cfg.TLSProfile.LDAPClientConfig().CipherSuites)
			}
			if cfg != nil && (cfg.BindUsername != "svc@example.test" || cfg.BindPassword != "pw" || cfg.Host != "dc.example.test") {
				t.Errorf("config = %+v, want the spec's host and the Secret's account", cfg)
			}
		})
	}
	if got := connectors.PhaseOf([]metav1.Condition{{Status: metav1.ConditionTrue}, {Status: metav1.ConditionUnknown}}); got != idpv1alpha1.PhaseError {
		t.Errorf("phase = %q, want Error (Unknown counts, as upstream)", got)
	}
}

// TestConnectFailures covers what fails before or at the connection; a connection that works
// is tested against Samba in fixtures/activedirectory.
func TestConnectFailures(t *testing.T) {
	// A port nothing listens on: connections are refused at once.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := lis.Addr().String()
	_ = lis.Close()

	withBases := func(cfg ldapclient.Config) ldapclient.Config {
		cfg.UserSearch.Base, cfg.GroupSearch.Base = "DC=example,DC=test", "DC=example,DC=test"
		return cfg
	}
	base := ConfigFromSpec(minimalSpec(), nil, "svc", "pw")
	base.Host = closed
	tests := []struct {
		name    string
		cfg     ldapclient.Config
		want    []condSummary
		wantMsg string
		// wantBase is SearchBaseFound's message, upstream's.
		wantBase string
	}{
		{
			name:    "search base not found: server down",
			cfg:     base,
			want:    []condSummary{{baseCond, metav1.ConditionFalse, "ErrorFetchingSearchBase"}, {connCond, metav1.ConditionFalse, "LDAPConnectionError"}},
			wantMsg: "connecting to LDAP server",
			wantBase: `Error finding search base: reading the defaultNamingContext: connecting to LDAP server "` + closed + `": ` +
				"LDAPS: dial tcp " + closed + ": connect: connection refused\nStartTLS: dial tcp " + closed + ": connect: connection refused",
		},
		{
			name: "bases from the spec, unusable filter",
			cfg: func() ldapclient.Config {
				c := withBases(base)
				c.UserSearch.Filter = "(cn={}"
				return c
			}(),
			want:     []condSummary{{baseCond, metav1.ConditionTrue, "UsingConfigurationFromSpec"}, {connCond, metav1.ConditionFalse, "Invalid"}},
			wantMsg:  "userSearch.filter",
			wantBase: "Using search base from ActiveDirectoryIdentityProvider config.",
		},
		{
			name:     "bases from the spec, server down",
			cfg:      withBases(base),
			want:     []condSummary{{baseCond, metav1.ConditionTrue, "UsingConfigurationFromSpec"}, {connCond, metav1.ConditionFalse, "LDAPConnectionError"}},
			wantMsg:  "connection refused",
			wantBase: "Using search base from ActiveDirectoryIdentityProvider config.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			p, conds, err := Connect(ctx, tt.cfg, nil, 5)
			if p != nil || err == nil {
				t.Errorf("Connect returned a Provider %v and error %v despite a failure", p, err)
			}
			if diff := cmp.Diff(tt.want, summarize(t, conds, 5)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			var msgs []string
			for _, c := range conds {
				msgs = append(msgs, c.Message)
			}
			if conds[0].Type != baseCond || conds[0].Message != tt.wantBase {
				t.Errorf("%s message %q, want %q", conds[0].Type, conds[0].Message, tt.wantBase)
			}
			if all := strings.Join(msgs, "\n"); !strings.Contains(all, tt.wantMsg) {
				t.Errorf("messages %q lack %q", all, tt.wantMsg)
			}
		})
	}
}
