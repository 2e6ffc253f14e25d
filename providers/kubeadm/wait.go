package kubeadm

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

func clientFor(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.Timeout = 15 * time.Second
	return kubernetes.NewForConfig(cfg)
}

// waitFor polls cond until it holds or the create's wait timeout passes; the error keeps the
// last reason cond gave.
func (cr *creation) waitFor(ctx context.Context, what string, cond func(context.Context, kubernetes.Interface) (bool, string, error)) error {
	client, err := clientFor(cr.c.kubeconfig())
	if err != nil {
		return err
	}
	last := "not checked yet"
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, cr.opts.WaitTimeout, true, func(ctx context.Context) (bool, error) {
		ok, why, err := cond(ctx, client)
		if err != nil {
			why = err.Error()
		}
		last = why
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("%s within %v: %s", what, cr.opts.WaitTimeout, last)
	}
	return nil
}

func (cr *creation) waitNodeReady(ctx context.Context) error {
	return cr.waitFor(ctx, "node Ready", func(ctx context.Context, c kubernetes.Interface) (bool, string, error) {
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
	})
}

func nodeReady(n corev1.Node) (bool, string) {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue, c.Reason + ": " + c.Message
		}
	}
	return false, "no Ready condition"
}

func (cr *creation) waitCoreDNS(ctx context.Context) error {
	return cr.waitFor(ctx, "CoreDNS Ready", func(ctx context.Context, c kubernetes.Interface) (bool, string, error) {
		d, err := c.AppsV1().Deployments(metav1.NamespaceSystem).Get(ctx, "coredns", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		if d.Status.ReadyReplicas < want || d.Status.UpdatedReplicas < want {
			return false, fmt.Sprintf("deployment coredns has %d of %d replicas ready", d.Status.ReadyReplicas, want), nil
		}
		return true, "", nil
	})
}

func (cr *creation) waitServiceAccount(ctx context.Context) error {
	return cr.waitFor(ctx, "ServiceAccount default/default", func(ctx context.Context, c kubernetes.Interface) (bool, string, error) {
		_, err := c.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "not created yet", nil
		}
		return err == nil, "", err
	})
}
