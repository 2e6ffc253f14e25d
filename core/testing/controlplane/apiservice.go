package controlplane

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
)

// WaitForAPIService waits until the aggregator serves group/version: its APIService reports
// Available and a discovery request for it through the API server is answered.
//
// Both are needed. The Available condition is written by the availability controller, and the
// aggregator's proxy handler learns it from its own informer a moment later, answering 503 until
// then. Only that 503 is waited out; any other answer ends the wait with its error, so a test
// still sees the failure it looks for.
func WaitForAPIService(ctx context.Context, config *rest.Config, group, version string, timeout time.Duration) error {
	aggregator, err := aggregatorclient.NewForConfig(config)
	if err != nil {
		return err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return err
	}
	name := version + "." + group
	var last string
	var served error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		as, err := aggregator.ApiregistrationV1().APIServices().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		available := false
		last = "no Available condition yet"
		for _, c := range as.Status.Conditions {
			if c.Type == apiregistrationv1.Available {
				last = fmt.Sprintf("Available=%s %s: %s", c.Status, c.Reason, c.Message)
				available = c.Status == apiregistrationv1.ConditionTrue
			}
		}
		if !available {
			return false, nil
		}
		_, served = disco.RESTClient().Get().AbsPath("/apis", group, version).DoRaw(ctx)
		if apierrors.IsServiceUnavailable(served) {
			last = "Available, but the aggregator answers: " + served.Error()
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("APIService %s not served: %w (last: %s)", name, err, last)
	}
	if served != nil {
		return fmt.Errorf("GET /apis/%s/%s through the aggregator: %w", group, version, served)
	}
	return nil
}
