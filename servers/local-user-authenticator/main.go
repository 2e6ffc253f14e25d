// Command local-user-authenticator serves a TokenReview webhook whose users are Secrets in one
// namespace (see package sealion.dev/servers/local-user-authenticator/internal/localusers). It is a test and demo identity provider
// for the Concierge's WebhookAuthenticator.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"sealion.dev/servers/internal/serverboot"
	"sealion.dev/servers/local-user-authenticator/internal/localusers"
)

func main() {
	klog.InitFlags(nil)
	kubeconfig := flag.String("kubeconfig", "", "path to a kubeconfig file; in-cluster configuration when empty")
	namespace := flag.String("namespace", localusers.DefaultNamespace, "namespace of the user Secrets and of the published CA bundle")
	listenAddress := flag.String("listen-address", ":8443", "address to serve HTTPS on")
	caBundleFile := flag.String("ca-bundle-file", "", "write the serving CA bundle to this file instead of the Secret "+localusers.CABundleSecretName)
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *kubeconfig, *listenAddress, localusers.Config{Namespace: *namespace, CABundleFile: *caBundleFile, ShutdownDelay: localusers.ShutdownDelay}); err != nil {
		klog.ErrorS(err, "local-user-authenticator failed")
		klog.Flush()
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, listenAddress string, cfg localusers.Config) error {
	restConfig, err := serverboot.KubeRESTConfig(kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	listener, err := net.Listen("tcp", listenAddress)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", listenAddress, err)
	}
	return localusers.Serve(ctx, listener, client, cfg)
}
