package cabundle

import (
	"encoding/base64"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"sealion.dev/core/certauthority"
)

func TestResolve(t *testing.T) {
	ca, err := certauthority.New("test", 0)
	if err != nil {
		t.Fatal(err)
	}
	pem := ca.Bundle()
	secrets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	configMaps := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tls"}, Type: corev1.SecretTypeTLS, Data: map[string][]byte{"ca.crt": pem}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "opaque"}, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"ca": pem, "junk": []byte("nope"), "empty": {}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa"}, Type: corev1.SecretTypeServiceAccountToken, Data: map[string][]byte{"ca.crt": pem}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "elsewhere"}, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"ca": pem}},
	} {
		_ = secrets.Add(s)
	}
	_ = configMaps.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"ca.crt": string(pem)}})
	l := Listers{Namespace: "ns", Secrets: corev1listers.NewSecretLister(secrets), ConfigMaps: corev1listers.NewConfigMapLister(configMaps)}

	tests := []struct {
		name    string
		inline  string
		source  *Source
		wantPEM bool
		wantErr string
	}{
		{name: "system roots"},
		{name: "inline", inline: base64.StdEncoding.EncodeToString(pem), wantPEM: true},
		{name: "inline not base64", inline: "%%%", wantErr: "spec.tls.certificateAuthorityData is invalid: illegal base64 data at input byte 0"},
		{name: "inline not PEM", inline: base64.StdEncoding.EncodeToString([]byte("hello")),
			wantErr: `spec.tls.certificateAuthorityData is invalid: no base64-encoded PEM certificates found in 8 bytes of data (PEM certificates must begin with "-----BEGIN CERTIFICATE-----")`},
		{name: "both", inline: "x", source: &Source{Kind: "Secret"},
			wantErr: "spec.tls is invalid: both tls.certificateAuthorityDataSource and tls.certificateAuthorityData provided"},
		{name: "tls secret", source: &Source{Kind: "Secret", Name: "tls", Key: "ca.crt"}, wantPEM: true},
		{name: "opaque secret", source: &Source{Kind: "Secret", Name: "opaque", Key: "ca"}, wantPEM: true},
		{name: "secret key holds junk", source: &Source{Kind: "Secret", Name: "opaque", Key: "junk"},
			wantErr: `spec.tls.certificateAuthorityDataSource is invalid: key "junk" with 4 bytes of data in secret "ns/opaque" is not a PEM-encoded certificate (PEM certificates must begin with "-----BEGIN CERTIFICATE-----")`},
		{name: "secret key empty", source: &Source{Kind: "Secret", Name: "opaque", Key: "empty"},
			wantErr: `spec.tls.certificateAuthorityDataSource is invalid: key "empty" has empty value in secret "ns/opaque"`},
		{name: "secret of wrong type", source: &Source{Kind: "Secret", Name: "sa", Key: "ca.crt"},
			wantErr: `spec.tls.certificateAuthorityDataSource is invalid: secret "ns/sa" of type "kubernetes.io/service-account-token" cannot be used as a certificate authority data source`},
		{name: "secret in another namespace", source: &Source{Kind: "Secret", Name: "elsewhere", Key: "ca"},
			wantErr: `spec.tls.certificateAuthorityDataSource is invalid: failed to get secret "ns/elsewhere": secret "elsewhere" not found`},
		{name: "missing key", source: &Source{Kind: "Secret", Name: "tls", Key: "nope"},
			wantErr: `spec.tls.certificateAuthorityDataSource is invalid: key "nope" not found in secret "ns/tls"`},
		{name: "configmap", source: &Source{Kind: "ConfigMap", Name: "cm", Key: "ca.crt"}, wantPEM: true},
		{name: "missing configmap", source: &Source{Kind: "ConfigMap", Name: "gone", Key: "ca.crt"},
			wantErr: `spec.tls.certificateAuthorityDataSource is invalid: failed to get configmap "ns/gone": configmap "gone" not found`},
		{name: "configmap key missing", source: &Source{Kind: "ConfigMap", Name: "cm", Key: "nope"},
			wantErr: `spec.tls.certificateAuthorityDataSource is invalid: key "nope" not found in configmap "ns/cm"`},
		{name: "bad kind", source: &Source{Kind: "Pod", Name: "x", Key: "y"},
			wantErr: "spec.tls.certificateAuthorityDataSource is invalid: unsupported CA bundle source kind: Pod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Resolve("spec.tls", tt.inline, tt.source, l)
			if tt.wantErr != "" {
				var e *Error
				if !errors.As(err, &e) || e.Reason != ReasonInvalidTLSConfig || e.Message != tt.wantErr {
					t.Fatalf("got %v\nwant an InvalidTLSConfig error %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantPEM != (got != nil) {
				t.Fatalf("bundle = %q", got)
			}
		})
	}
}

func TestValidMessage(t *testing.T) {
	if got, want := ValidMessage("spec.githubAPI.tls", nil), "spec.githubAPI.tls is valid: no TLS configuration provided: using default root CA bundle from container image"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := ValidMessage("spec.tls", []byte("pem")), "spec.tls is valid: using configured CA bundle"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
