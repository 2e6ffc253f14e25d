package localusers

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/plugin/pkg/authenticator/token/webhook"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"sealion.dev/core/certauthority"
)

// startServer runs Serve on a loopback port until the test ends and returns its address.
func startServer(t *testing.T, client *fake.Clientset, cfg Config) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, listener, client, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return listener.Addr().String()
}

// Talks to the server with the webhook token authenticator of k8s.io/apiserver, the client the
// Concierge's WebhookAuthenticator uses, in both TokenReview versions.
func TestServeWithKubernetesWebhookClient(t *testing.T) {
	t.Parallel()
	client := fake.NewClientset(userSecret(t, DefaultNamespace, "alice", "correct horse", ptr("admins,devs")))
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	address := startServer(t, client, Config{Namespace: DefaultNamespace, CABundleFile: caFile})
	caPEM := waitForFile(t, caFile)

	for _, version := range []string{"v1beta1", "v1"} {
		t.Run(version, func(t *testing.T) {
			config := &rest.Config{Host: "https://" + address + WebhookPath, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}}
			authenticator, err := webhook.New(config, version, nil, wait.Backoff{Steps: 1})
			if err != nil {
				t.Fatal(err)
			}
			resp, ok, err := authenticator.AuthenticateToken(context.Background(), "alice:correct horse")
			if err != nil || !ok {
				t.Fatalf("AuthenticateToken = %v, %v", ok, err)
			}
			if resp.User.GetName() != "alice" || !reflect.DeepEqual(resp.User.GetGroups(), []string{"admins", "devs"}) {
				t.Errorf("user = %s %v", resp.User.GetName(), resp.User.GetGroups())
			}
			if _, ok, err := authenticator.AuthenticateToken(context.Background(), "alice:wrong"); ok || err != nil {
				t.Errorf("wrong password: AuthenticateToken = %v, %v; want false, nil", ok, err)
			}
		})
	}
	if _, err := client.CoreV1().Secrets(DefaultNamespace).Get(context.Background(), CABundleSecretName, metav1.GetOptions{}); err == nil {
		t.Error("CA bundle was published in a Secret although a file was requested")
	}

	// The same port serves the metrics, where the reviews above are counted.
	httpClient, err := rest.HTTPClientFor(&rest.Config{Host: "https://" + address, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := httpClient.Get("https://" + address + MetricsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{`pinniped_local_user_authenticator_token_reviews_total{result="authenticated"}`, `pinniped_local_user_authenticator_token_reviews_total{result="refused"}`} {
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %s, without %s:\n%s", MetricsPath, resp.Status, want, body)
		}
	}
}

func TestServePublishesCABundle(t *testing.T) {
	t.Parallel()
	client := fake.NewClientset()
	address := startServer(t, client, Config{Namespace: "users"})

	var caPEM []byte
	deadline := time.Now().Add(30 * time.Second)
	for caPEM == nil {
		secret, err := client.CoreV1().Secrets("users").Get(context.Background(), CABundleSecretName, metav1.GetOptions{})
		if err == nil {
			caPEM = secret.Data[CABundleKey]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CA bundle Secret never appeared: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("published CA bundle is not PEM: %q", caPEM)
	}
	// The served certificate must verify for the in-cluster Service name.
	conn := dialTLS(t, address, pool, "local-user-authenticator.users.svc")
	_ = conn.Close()
}

// A restart, or a second replica, signs with the CA already published, which the
// WebhookAuthenticators copied; a Secret without the CA's key (as an earlier release wrote it), or
// with a CA about to expire, gets a new CA.
func TestCAKeptAcrossStarts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := fake.NewClientset()
	first, err := CA(ctx, client, "ns")
	if err != nil {
		t.Fatal(err)
	}
	again, err := CA(ctx, client, "ns")
	if err != nil {
		t.Fatal(err)
	}
	if !again.Certificate().Equal(first.Certificate()) {
		t.Error("a second start made a new CA instead of taking the published one")
	}
	secret, err := client.CoreV1().Secrets("ns").Get(ctx, CABundleSecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(secret.Data[CABundleKey], first.Bundle()) {
		t.Errorf("the Secret's %s is not the CA's bundle", CABundleKey)
	}

	expiring, err := certauthority.New(caName, caRenewBefore-time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]map[string][]byte{
		"without the CA's key": {CABundleKey: first.Bundle()},
		"a CA about to expire": {CABundleKey: expiring.Bundle(), CAPrivateKeyKey: expiring.PrivateKeyPEM()},
		"a key of another CA":  {CABundleKey: first.Bundle(), CAPrivateKeyKey: expiring.PrivateKeyPEM()},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			client := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: CABundleSecretName, Namespace: "ns"}, Data: data})
			ca, err := CA(ctx, client, "ns")
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(ca.Bundle(), data[CABundleKey]) || time.Until(ca.Certificate().NotAfter) < caValidity-time.Hour {
				t.Errorf("kept the CA %s (until %s) instead of making a new one", ca.Certificate().Subject, ca.Certificate().NotAfter)
			}
			secret, err := client.CoreV1().Secrets("ns").Get(ctx, CABundleSecretName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(secret.Data[CABundleKey], ca.Bundle()) || !bytes.Equal(secret.Data[CAPrivateKeyKey], ca.PrivateKeyPEM()) {
				t.Error("the new CA was not published")
			}
		})
	}
}

func TestServingCertificateNames(t *testing.T) {
	t.Parallel()
	ca, err := certauthority.New(caName, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ServingCertificate(ca, "ns")
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca.Bundle()) {
		t.Fatal("CA bundle is not PEM")
	}
	leaf, err := x509.ParseCertificate(serving.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"local-user-authenticator.ns.svc", "local-user-authenticator.ns.svc.cluster.local", "localhost", "127.0.0.1", "::1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("certificate does not verify for %s: %v", name, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "local-user-authenticator.other.svc", Roots: pool}); err == nil {
		t.Error("certificate verifies for another namespace's Service")
	}
	if !leaf.NotAfter.Equal(ca.Certificate().NotAfter) {
		t.Errorf("certificate valid until %s, its CA until %s", leaf.NotAfter, ca.Certificate().NotAfter)
	}
}

func waitForFile(t *testing.T, path string) []byte {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		content, err := os.ReadFile(path)
		if err == nil && len(content) > 0 {
			return content
		}
		if !errors.Is(err, os.ErrNotExist) && err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func dialTLS(t *testing.T, address string, roots *x509.CertPool, serverName string) *tls.Conn {
	t.Helper()
	conn, err := tls.Dial("tcp", address, &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("TLS handshake with %s as %s: %v", address, serverName, err)
	}
	return conn
}
