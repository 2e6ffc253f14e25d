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
	"k8s.io/client-go/util/retry"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"sealion.dev/core/certauthority"
)

const (
	// CABundleSecretName is the Secret, in the users' namespace, where the server publishes the CA
	// bundle that verifies its serving certificate (for a WebhookAuthenticator's spec.tls).
	CABundleSecretName = "api-serving-cert"
	// CABundleKey is the key of the PEM CA bundle in that Secret, and CAPrivateKeyKey of the CA's
	// PEM private key (the names of the Concierge's own certificate Secrets).
	CABundleKey     = "caCertificate"
	CAPrivateKeyKey = "caCertificatePrivateKey"
	// ServiceName is the name of the Service in front of the server; it is in the certificate.
	ServiceName = "local-user-authenticator"
	// WebhookPath is where the TokenReview webhook is served.
	WebhookPath = "/authenticate"
	// MetricsPath serves the webhook's Prometheus metrics, on the same port.
	MetricsPath = "/metrics"
	// ShutdownDelay is how long a stopping server keeps accepting connections, while its pod
	// leaves the Service's endpoints, as the other servers do.
	ShutdownDelay = 5 * time.Second

	caName = "local-user-authenticator CA"
	// caValidity is a new CA's lifetime, and caRenewBefore how long before its end a starting
	// server replaces it (a WebhookAuthenticator trusting it must then copy the new one).
	caValidity    = 365 * 24 * time.Hour
	caRenewBefore = 30 * 24 * time.Hour
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
// namespace, takes the CA published in the Secret CABundleSecretName (or makes and publishes one,
// see CA), signs a serving certificate with it, then serves WebhookPath.
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

	var ca *certauthority.CA
	var err error
	if cfg.CABundleFile != "" {
		if ca, err = certauthority.New(caName, caValidity); err == nil {
			err = os.WriteFile(cfg.CABundleFile, ca.Bundle(), 0o644)
		}
	} else {
		ca, err = CA(ctx, client, cfg.Namespace)
	}
	if err != nil {
		return err
	}
	serving, err := ServingCertificate(ca, cfg.Namespace)
	if err != nil {
		return err
	}

	RegisterMetrics()
	mux := http.NewServeMux()
	mux.Handle(WebhookPath, NewHandler(NewAuthenticator(lister)))
	// Counts and the process's own figures only: nothing a caller could learn a user from.
	mux.Handle(MetricsPath, legacyregistry.Handler())
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

// ServingCertificate is a serving certificate signed by ca, with a new key, valid as long as ca
// for the in-cluster Service name, localhost and the loopback addresses; its chain ends with ca.
func ServingCertificate(ca *certauthority.CA, namespace string) (tls.Certificate, error) {
	serviceHost := ServiceName + "." + namespace + ".svc"
	certPEM, keyPEM, err := ca.IssueServingCert(serviceHost, []string{serviceHost, serviceHost + ".cluster.local", "localhost"},
		[]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, time.Until(ca.Certificate().NotAfter))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("issuing the serving certificate: %w", err)
	}
	serving, err := tls.X509KeyPair(append(certPEM, ca.Bundle()...), keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("loading the serving certificate: %w", err)
	}
	return serving, nil
}

// CA returns the CA published in the Secret CABundleSecretName, with its key, while it has more
// than caRenewBefore to live; otherwise (no Secret, a Secret an earlier release wrote without the
// key, a CA about to expire) it makes a new one and publishes it there. Every replica and every
// restart so signs with the one CA that WebhookAuthenticators copied from the Secret: a rolling
// restart does not break them. The key is as safe there as the users' password hashes beside it.
func CA(ctx context.Context, client kubernetes.Interface, namespace string) (*certauthority.CA, error) {
	secrets := client.CoreV1().Secrets(namespace)
	// Another replica may publish at the same time: read again, and take its CA.
	raced := func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }
	var ca *certauthority.CA
	err := retry.OnError(retry.DefaultRetry, raced, func() error {
		existing, err := secrets.Get(ctx, CABundleSecretName, metav1.GetOptions{})
		found := err == nil
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if found {
			published, loadErr := certauthority.Load(existing.Data[CABundleKey], existing.Data[CAPrivateKeyKey])
			if loadErr == nil && time.Until(published.Certificate().NotAfter) > caRenewBefore {
				ca = published
				return nil
			}
		}
		fresh, err := certauthority.New(caName, caValidity)
		if err != nil {
			return err
		}
		data := map[string][]byte{CABundleKey: fresh.Bundle(), CAPrivateKeyKey: fresh.PrivateKeyPEM()}
		if !found {
			_, err = secrets.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: CABundleSecretName, Namespace: namespace},
				Type:       corev1.SecretTypeOpaque,
				Data:       data,
			}, metav1.CreateOptions{})
		} else {
			existing.Data = data
			_, err = secrets.Update(ctx, existing, metav1.UpdateOptions{})
		}
		if err == nil {
			ca = fresh
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("publishing the CA in Secret %s/%s: %w", namespace, CABundleSecretName, err)
	}
	return ca, nil
}
