package localusers

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
)

const (
	// CABundleSecretName is the Secret, in the users' namespace, where the server publishes the CA
	// bundle that verifies its serving certificate (for a WebhookAuthenticator's spec.tls).
	CABundleSecretName = "api-serving-cert"
	// CABundleKey is the key of the PEM CA bundle in that Secret.
	CABundleKey = "caCertificate"
	// ServiceName is the name of the Service in front of the server; it is in the certificate.
	ServiceName = "local-user-authenticator"
	// WebhookPath is where the TokenReview webhook is served.
	WebhookPath = "/authenticate"
	// ShutdownDelay is how long a stopping server keeps accepting connections, while its pod
	// leaves the Service's endpoints, as the other servers do.
	ShutdownDelay = 5 * time.Second
)

// Config configures Serve.
type Config struct {
	// Namespace holds the user Secrets and the published CA bundle.
	Namespace string
	// ShutdownDelay is how long the server keeps serving new connections once ctx ends; then
	// it lets the requests in flight finish, for up to 10 seconds.
	ShutdownDelay time.Duration
	// CABundleFile, when set, receives the CA bundle instead of the Secret CABundleSecretName
	// (for running the server as a local process in tests). It is written once the server is
	// about to accept connections, so its appearance means the server is ready.
	CABundleFile string
}

// Serve runs the webhook over HTTPS on listener until ctx ends. It syncs a Secret informer for the
// namespace, creates a fresh self-signed CA and serving certificate, publishes the CA bundle, then
// serves WebhookPath.
func Serve(ctx context.Context, listener net.Listener, client kubernetes.Interface, cfg Config) error {
	defer func() { _ = listener.Close() }() // also when failing before serving
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(cfg.Namespace))
	secrets := factory.Core().V1().Secrets()
	lister := secrets.Lister().Secrets(cfg.Namespace)
	_ = secrets.Informer() // register the informer before Start
	ctx, cancel := context.WithCancel(ctx)
	defer factory.Shutdown() // runs after cancel, which stops the informers it waits for
	defer cancel()
	factory.Start(ctx.Done())
	for informerType, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return fmt.Errorf("syncing the %v informer in namespace %q: %w", informerType, cfg.Namespace, context.Cause(ctx))
		}
	}

	serving, caPEM, err := ServingCertificate(cfg.Namespace)
	if err != nil {
		return err
	}
	if cfg.CABundleFile != "" {
		if err := os.WriteFile(cfg.CABundleFile, caPEM, 0o644); err != nil {
			return fmt.Errorf("writing the CA bundle to %s: %w", cfg.CABundleFile, err)
		}
	} else if err := PublishCABundle(ctx, client, cfg.Namespace, caPEM); err != nil {
		return err
	}

	mux := http.NewServeMux()
	mux.Handle(WebhookPath, NewHandler(NewAuthenticator(lister)))
	server := &http.Server{
		Handler:           mux,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{serving}},
		ReadHeaderTimeout: 10 * time.Second,
	}
	shutdownDone := make(chan struct{})
	go func() {
		defer close(shutdownDone)
		<-ctx.Done()
		time.Sleep(cfg.ShutdownDelay)
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := server.Shutdown(shutdownCtx); err != nil {
			klog.ErrorS(err, "shutting down the webhook server")
		}
	}()
	klog.InfoS("serving TokenReview webhook", "address", listener.Addr().String(), "path", WebhookPath, "namespace", cfg.Namespace)
	if err := server.ServeTLS(listener, "", ""); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving HTTPS on %s: %w", listener.Addr(), err)
	}
	<-shutdownDone
	return nil
}

// ServingCertificate creates a new CA and a serving certificate it signs, valid for the in-cluster
// Service name, localhost and the loopback addresses. It returns the certificate and the CA PEM.
func ServingCertificate(namespace string) (tls.Certificate, []byte, error) {
	serviceHost := ServiceName + "." + namespace + ".svc"
	chainPEM, keyPEM, err := cert.GenerateSelfSignedCertKey(serviceHost,
		[]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		[]string{serviceHost + ".cluster.local", "localhost"})
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("generating the serving certificate: %w", err)
	}
	// The chain is the serving certificate followed by the CA that signed it.
	certs, err := cert.ParseCertsPEM(chainPEM)
	if err != nil || len(certs) != 2 {
		return tls.Certificate{}, nil, fmt.Errorf("parsing the generated certificate chain (%d certificates): %v", len(certs), err)
	}
	caPEM, err := cert.EncodeCertificates(certs[1])
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("encoding the CA certificate: %w", err)
	}
	serving, err := tls.X509KeyPair(chainPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("loading the generated serving certificate: %w", err)
	}
	return serving, caPEM, nil
}

// PublishCABundle creates or updates the Secret CABundleSecretName so that it holds caPEM.
func PublishCABundle(ctx context.Context, client kubernetes.Interface, namespace string, caPEM []byte) error {
	secrets := client.CoreV1().Secrets(namespace)
	// Another replica may create or update the Secret at the same time; the last writer wins.
	raced := func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }
	err := retry.OnError(retry.DefaultRetry, raced, func() error {
		existing, err := secrets.Get(ctx, CABundleSecretName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = secrets.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: CABundleSecretName, Namespace: namespace},
				Type:       corev1.SecretTypeOpaque,
				Data:       map[string][]byte{CABundleKey: caPEM},
			}, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		if existing.Data == nil {
			existing.Data = map[string][]byte{}
		}
		existing.Data[CABundleKey] = caPEM
		_, err = secrets.Update(ctx, existing, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("publishing the CA bundle in Secret %s/%s: %w", namespace, CABundleSecretName, err)
	}
	return nil
}
