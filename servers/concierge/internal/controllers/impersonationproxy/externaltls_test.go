package impersonationproxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	"sealion.dev/core/certauthority"
)

const externalHost = "proxy.example.com"

// externalCA is a CA of someone else's (cert-manager, say) with a serving certificate for externalHost.
type externalCA struct {
	ca               *certauthority.CA
	certPEM, keyPEM  []byte
	base64CABundle   string
	roots            *x509.CertPool
	leafSerialNumber string
}

func newExternalCA(t *testing.T, name string) *externalCA {
	t.Helper()
	ca, err := certauthority.New(name, time.Hour)
	require.NoError(t, err)
	certPEM, keyPEM, err := ca.IssueServingCert(externalHost, []string{externalHost}, nil, time.Hour)
	require.NoError(t, err)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	require.NoError(t, err)
	roots := x509.NewCertPool()
	roots.AddCert(ca.Certificate())
	return &externalCA{
		ca: ca, certPEM: certPEM, keyPEM: keyPEM, roots: roots,
		base64CABundle: base64.StdEncoding.EncodeToString(ca.Bundle()), leafSerialNumber: leaf.SerialNumber.String(),
	}
}

func tlsSecret(name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Type: corev1.SecretTypeTLS, Data: data}
}

// handshake connects to addr as a client trusting only roots and returns the serial number of
// the certificate served for externalHost.
func handshake(addr string, roots *x509.CertPool) (string, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{RootCAs: roots, ServerName: externalHost})
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
}

func TestExternalServingCertificate(t *testing.T) {
	ours, theirs := newExternalCA(t, "ours"), newExternalCA(t, "theirs")
	spec := func(tlsSpec *configv1alpha1.ImpersonationProxyTLSSpec) configv1alpha1.ImpersonationProxySpec {
		return configv1alpha1.ImpersonationProxySpec{
			Mode:             configv1alpha1.ImpersonationProxyModeEnabled,
			Service:          configv1alpha1.ImpersonationProxyServiceSpec{Type: configv1alpha1.ImpersonationProxyServiceTypeNone},
			ExternalEndpoint: externalHost + ":8443",
			TLS:              tlsSpec,
		}
	}
	generated := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "serving", Namespace: "ns"}, Type: corev1.SecretTypeTLS}
	tests := []struct {
		name    string
		spec    configv1alpha1.ImpersonationProxySpec
		objects []runtime.Object
		// wantCA is the advertised bundle when the proxy listens; wantError the message otherwise.
		wantCA    []byte
		wantError string
	}{
		{
			name: "the Secret's ca.crt is advertised and the generated certificate goes",
			spec: spec(&configv1alpha1.ImpersonationProxyTLSSpec{SecretName: "ext"}),
			objects: []runtime.Object{generated, tlsSecret("ext", map[string][]byte{
				"tls.crt": ours.certPEM, "tls.key": ours.keyPEM, "ca.crt": ours.ca.Bundle(),
			})},
			wantCA: ours.ca.Bundle(),
		},
		{
			name: "certificateAuthorityData wins over ca.crt",
			spec: spec(&configv1alpha1.ImpersonationProxyTLSSpec{SecretName: "ext", CertificateAuthorityData: ours.base64CABundle}),
			objects: []runtime.Object{tlsSecret("ext", map[string][]byte{
				"tls.crt": ours.certPEM, "tls.key": ours.keyPEM, "ca.crt": theirs.ca.Bundle(),
			})},
			wantCA: ours.ca.Bundle(),
		},
		{
			name:    "without either no CA is advertised",
			spec:    spec(&configv1alpha1.ImpersonationProxyTLSSpec{SecretName: "ext"}),
			objects: []runtime.Object{tlsSecret("ext", map[string][]byte{"tls.crt": ours.certPEM, "tls.key": ours.keyPEM})},
		},
		{
			name:      "a missing Secret",
			spec:      spec(&configv1alpha1.ImpersonationProxyTLSSpec{SecretName: "ext"}),
			wantError: `could not load the externally provided TLS secret for the impersonation proxy: secret "ext" not found`,
		},
		{
			name:      "a Secret whose key is not the certificate's",
			spec:      spec(&configv1alpha1.ImpersonationProxyTLSSpec{SecretName: "ext"}),
			objects:   []runtime.Object{tlsSecret("ext", map[string][]byte{"tls.crt": ours.certPEM, "tls.key": theirs.keyPEM})},
			wantError: "could not load the externally provided TLS secret for the impersonation proxy: Secret ext: loading the impersonation proxy's serving certificate",
		},
		{
			name: "a ca.crt that holds no certificate",
			spec: spec(&configv1alpha1.ImpersonationProxyTLSSpec{SecretName: "ext"}),
			objects: []runtime.Object{tlsSecret("ext", map[string][]byte{
				"tls.crt": ours.certPEM, "tls.key": ours.keyPEM, "ca.crt": []byte("not PEM"),
			})},
			wantError: "could not load the externally provided TLS secret for the impersonation proxy: Secret ext: its ca.crt holds no PEM certificate",
		},
		{
			name:      "certificateAuthorityData that is not base64",
			spec:      spec(&configv1alpha1.ImpersonationProxyTLSSpec{SecretName: "ext", CertificateAuthorityData: "%%%"}),
			objects:   []runtime.Object{tlsSecret("ext", map[string][]byte{"tls.crt": ours.certPEM, "tls.key": ours.keyPEM})},
			wantError: "spec.impersonationProxy.tls.certificateAuthorityData is not base64",
		},
		{
			name: "certificateAuthorityData that holds no certificate",
			spec: spec(&configv1alpha1.ImpersonationProxyTLSSpec{
				SecretName: "ext", CertificateAuthorityData: base64.StdEncoding.EncodeToString([]byte("not PEM")),
			}),
			objects:   []runtime.Object{tlsSecret("ext", map[string][]byte{"tls.crt": ours.certPEM, "tls.key": ours.keyPEM})},
			wantError: "spec.impersonationProxy.tls.certificateAuthorityData holds no PEM certificate",
		},
		{
			name:      "tls without a secretName",
			spec:      spec(&configv1alpha1.ImpersonationProxyTLSSpec{CertificateAuthorityData: ours.base64CABundle}),
			wantError: "spec.impersonationProxy.tls.secretName must be set",
		},
		{
			name: "a bad Secret shows while the load balancer is pending",
			spec: configv1alpha1.ImpersonationProxySpec{
				Mode:    configv1alpha1.ImpersonationProxyModeEnabled,
				Service: configv1alpha1.ImpersonationProxyServiceSpec{Type: configv1alpha1.ImpersonationProxyServiceTypeLoadBalancer},
				TLS:     &configv1alpha1.ImpersonationProxyTLSSpec{SecretName: "ext"},
			},
			wantError: `secret "ext" not found`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			tc := newTestController(t, tt.spec, tt.objects...)
			err := tc.c.sync(ctx)
			got := tc.status.last
			if tt.wantError != "" {
				require.ErrorContains(t, err, tt.wantError)
				assert.Equal(t, configv1alpha1.StrategyStatusError, got.Status)
				assert.Equal(t, configv1alpha1.StrategyReasonErrorDuringSetup, got.Reason)
				assert.Contains(t, got.Message, tt.wantError)
				assert.Nil(t, got.Frontend)
				if tc.c.listener.running() {
					_, err := handshake(<-tc.addr, ours.roots)
					assert.Error(t, err, "the proxy must serve no certificate while the external one is unusable")
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, configv1alpha1.StrategyReasonListening, got.Reason, got.Message)
			require.NotNil(t, got.Frontend)
			assert.Equal(t, "https://"+externalHost+":8443", got.Frontend.ImpersonationProxyInfo.Endpoint)
			assert.Equal(t, base64.StdEncoding.EncodeToString(tt.wantCA), got.Frontend.ImpersonationProxyInfo.CertificateAuthorityData)

			serial, err := handshake(<-tc.addr, ours.roots)
			require.NoError(t, err, "a client trusting only the external CA connects")
			assert.Equal(t, ours.leafSerialNumber, serial)
			_, err = tc.kube.CoreV1().Secrets("ns").Get(ctx, "serving", metav1.GetOptions{})
			assert.True(t, apierrors.IsNotFound(err), "the generated serving certificate must be deleted, got %v", err)
			_, err = tc.kube.CoreV1().Secrets("ns").Get(ctx, "serving-ca", metav1.GetOptions{})
			assert.True(t, apierrors.IsNotFound(err), "no serving CA is generated for an external certificate, got %v", err)
		})
	}
}

// TestExternalServingCertificateFollowsTheSecret creates, replaces and deletes the Secret and
// checks that each sync serves and advertises what it holds.
func TestExternalServingCertificateFollowsTheSecret(t *testing.T) {
	ctx := context.Background()
	first, second := newExternalCA(t, "first"), newExternalCA(t, "second")
	tc := newTestController(t, configv1alpha1.ImpersonationProxySpec{
		Mode:             configv1alpha1.ImpersonationProxyModeEnabled,
		Service:          configv1alpha1.ImpersonationProxyServiceSpec{Type: configv1alpha1.ImpersonationProxyServiceTypeNone},
		ExternalEndpoint: externalHost,
		TLS:              &configv1alpha1.ImpersonationProxyTLSSpec{SecretName: "ext"},
	})
	secrets := tc.kube.CoreV1().Secrets("ns")

	require.Error(t, tc.c.sync(ctx))
	assert.Equal(t, configv1alpha1.StrategyReasonErrorDuringSetup, tc.status.last.Reason)
	addr := <-tc.addr

	created, err := secrets.Create(ctx, tlsSecret("ext", map[string][]byte{
		"tls.crt": first.certPEM, "tls.key": first.keyPEM, "ca.crt": first.ca.Bundle(),
	}), metav1.CreateOptions{})
	require.NoError(t, err)
	syncOnceSeen(t, tc, "ext", func(s *corev1.Secret) bool { return s != nil })
	require.Equal(t, configv1alpha1.StrategyReasonListening, tc.status.last.Reason, tc.status.last.Message)
	assert.Equal(t, first.base64CABundle, tc.status.last.Frontend.ImpersonationProxyInfo.CertificateAuthorityData)
	serial, err := handshake(addr, first.roots)
	require.NoError(t, err)
	assert.Equal(t, first.leafSerialNumber, serial)

	// A renewal from another CA: new handshakes get the new certificate, and clients learn the new CA.
	created.Data = map[string][]byte{"tls.crt": second.certPEM, "tls.key": second.keyPEM, "ca.crt": second.ca.Bundle()}
	_, err = secrets.Update(ctx, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	syncOnceSeen(t, tc, "ext", func(s *corev1.Secret) bool { return s != nil && string(s.Data["tls.crt"]) == string(second.certPEM) })
	require.Equal(t, configv1alpha1.StrategyReasonListening, tc.status.last.Reason, tc.status.last.Message)
	assert.Equal(t, second.base64CABundle, tc.status.last.Frontend.ImpersonationProxyInfo.CertificateAuthorityData)
	serial, err = handshake(addr, second.roots)
	require.NoError(t, err)
	assert.Equal(t, second.leafSerialNumber, serial)
	_, err = handshake(addr, first.roots)
	assert.Error(t, err, "the old certificate is no longer served")

	require.NoError(t, secrets.Delete(ctx, "ext", metav1.DeleteOptions{}))
	syncOnceSeen(t, tc, "ext", func(s *corev1.Secret) bool { return s == nil })
	assert.Equal(t, configv1alpha1.StrategyReasonErrorDuringSetup, tc.status.last.Reason)
	assert.Contains(t, tc.status.last.Message, `secret "ext" not found`)
	_, err = handshake(addr, second.roots)
	assert.Error(t, err, "a deleted certificate is no longer served")
}

// syncOnceSeen waits until the controller's informer shows Secret name as seen wants (nil: absent)
// and then syncs.
func syncOnceSeen(t *testing.T, tc *testController, name string, seen func(*corev1.Secret) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		s, err := tc.c.secrets.Get(name)
		if apierrors.IsNotFound(err) {
			return seen(nil), nil
		}
		return err == nil && seen(s), nil
	})
	require.NoError(t, err, "the informer never showed the expected Secret %s", name)
	_ = tc.c.sync(context.Background()) // the outcome is in tc.status
}
