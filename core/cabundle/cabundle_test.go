package cabundle

import (
	"encoding/base64"
	"errors"
	"strings"
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
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "opaque"}, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"ca": pem, "junk": []byte("nope")}},
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
		{name: "inline not base64", inline: "%%%", wantErr: "not valid base64"},
		{name: "inline not PEM", inline: base64.StdEncoding.EncodeToString([]byte("hello")), wantErr: "no PEM certificate"},
		{name: "both", inline: "x", source: &Source{Kind: "Secret"}, wantErr: "mutually exclusive"},
		{name: "tls secret", source: &Source{Kind: "Secret", Name: "tls", Key: "ca.crt"}, wantPEM: true},
		{name: "opaque secret", source: &Source{Kind: "Secret", Name: "opaque", Key: "ca"}, wantPEM: true},
		{name: "secret key holds junk", source: &Source{Kind: "Secret", Name: "opaque", Key: "junk"}, wantErr: "no PEM certificate"},
		{name: "secret of wrong type", source: &Source{Kind: "Secret", Name: "sa", Key: "ca.crt"}, wantErr: "has type"},
		{name: "secret in another namespace", source: &Source{Kind: "Secret", Name: "elsewhere", Key: "ca"}, wantErr: "not found"},
		{name: "missing key", source: &Source{Kind: "Secret", Name: "tls", Key: "nope"}, wantErr: `no key "nope"`},
		{name: "configmap", source: &Source{Kind: "ConfigMap", Name: "cm", Key: "ca.crt"}, wantPEM: true},
		{name: "missing configmap", source: &Source{Kind: "ConfigMap", Name: "gone", Key: "ca.crt"}, wantErr: "not found"},
		{name: "bad kind", source: &Source{Kind: "Pod", Name: "x", Key: "y"}, wantErr: "must be Secret or ConfigMap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Resolve(tt.inline, tt.source, l)
			if tt.wantErr != "" {
				var e *Error
				if !errors.As(err, &e) || e.Reason != ReasonInvalidTLSConfig || !strings.Contains(e.Message, tt.wantErr) {
					t.Fatalf("got %v, want an InvalidTLSConfig error containing %q", err, tt.wantErr)
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
