// Package clusterready waits until a new cluster can run workloads, which is what a provider's
// Create promises: every node Ready, the cluster DNS Deployment's replicas ready, and the
// `default` ServiceAccount created (pods are refused until the service account controller made it).
package clusterready

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Client connects to a cluster through its admin kubeconfig, with a timeout per request so a
// stuck API server fails a wait instead of hanging it.
func Client(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.Timeout = 15 * time.Second
	return kubernetes.NewForConfig(cfg)
}

// check is one condition: it reports whether it holds, and why not otherwise.
type check struct {
	step string
	done func(ctx context.Context, c kubernetes.Interface) (ok bool, why string, err error)
}

// checks are the conditions of a usable cluster, in the order they become true.
var checks = []check{
	{"wait for node Ready", nodesReady},
	{"wait for CoreDNS Ready", deploymentReady(metav1.NamespaceSystem, "coredns")},
	{"wait for default ServiceAccount", serviceAccountExists(metav1.NamespaceDefault, "default")},
}

// Wait polls each condition in turn until it holds, all within timeout, and calls report once per
// condition with its step name and duration. The error names the step and keeps the last reason
// the condition gave.
func Wait(ctx context.Context, client kubernetes.Interface, timeout time.Duration, report func(step string, took time.Duration, err error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, c := range checks {
		began := time.Now()
		last := "not checked yet"
		err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			ok, why, err := c.done(ctx, client)
			if err != nil {
				why = err.Error()
			}
			last = why
			return ok, nil
		})
		if err != nil {
			err = fmt.Errorf("%s: not done within %v: %s", c.step, timeout, last)
		}
		report(c.step, time.Since(began), err)
		if err != nil {
			return err
		}
	}
	return nil
}

// nodesReady holds when at least one node registered and every node is Ready.
func nodesReady(ctx context.Context, c kubernetes.Interface) (bool, string, error) {
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, "", err
	}
	if len(nodes.Items) == 0 {
		return false, "no node registered", nil
	}
	for _, n := range nodes.Items {
		if ok, why := nodeReady(n); !ok {
			return false, fmt.Sprintf("node %s: %s", n.Name, why), nil
		}
	}
	return true, "", nil
}

func nodeReady(n corev1.Node) (bool, string) {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue, c.Reason + ": " + c.Message
		}
	}
	return false, "no Ready condition"
}

// deploymentReady holds when every desired replica of the Deployment is updated and ready.
func deploymentReady(namespace, name string) func(context.Context, kubernetes.Interface) (bool, string, error) {
	return func(ctx context.Context, c kubernetes.Interface) (bool, string, error) {
		d, err := c.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		if d.Status.ReadyReplicas < want || d.Status.UpdatedReplicas < want {
			return false, fmt.Sprintf("deployment %s/%s has %d of %d replicas ready", namespace, name, d.Status.ReadyReplicas, want), nil
		}
		return true, "", nil
	}
}

// serviceAccountExists holds once the ServiceAccount exists.
func serviceAccountExists(namespace, name string) func(context.Context, kubernetes.Interface) (bool, string, error) {
	return func(ctx context.Context, c kubernetes.Interface) (bool, string, error) {
		_, err := c.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("serviceaccount %s/%s not created yet", namespace, name), nil
		}
		return err == nil, "", err
	}
}
