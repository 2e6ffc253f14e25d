package kubeconfig

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// validate waits until the new kubeconfig's cluster endpoint answers over TLS verified with its CA
// (an impersonation proxy's load balancer may still be coming up). Any HTTP answer counts, since
// the request carries no credential and may well be refused.
func validate(ctx context.Context, cluster *clientcmdapi.Cluster, interval time.Duration) error {
	rt, err := rest.TransportFor(&rest.Config{
		Host: cluster.Server,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:     cluster.CertificateAuthorityData,
			ServerName: cluster.TLSServerName,
			Insecure:   cluster.InsecureSkipTLSVerify,
		},
	})
	if err != nil {
		return fmt.Errorf("validating the kubeconfig: building a client for %s: %w", cluster.Server, err)
	}
	client := &http.Client{Transport: rt, Timeout: 10 * time.Second}
	var lastErr error
	err = wait.PollUntilContextCancel(ctx, interval, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cluster.Server+"/healthz", nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			lastErr = err
			return false, nil
		}
		_ = resp.Body.Close()
		return true, nil
	})
	if err != nil {
		if lastErr != nil {
			err = lastErr
		}
		return fmt.Errorf("validating the kubeconfig: %s is not reachable (use --skip-validation to skip this check): %w", cluster.Server, err)
	}
	return nil
}
