// Package clusterinfo reads where clients reach the cluster's API server, and with which CA, from
// the kube-public/cluster-info ConfigMap that kubeadm (and most distributions) publish for joining
// nodes: the frontend of the strategies whose certificates the API server itself accepts.
package clusterinfo

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
)

// The ConfigMap and its key.
const (
	Namespace = "kube-public"
	Name      = "cluster-info"
	key       = "kubeconfig"
)

// UnusableError is a missing or malformed cluster-info ConfigMap, as opposed to a failure to read
// it: retrying soon would not help.
type UnusableError struct{ error }

func (e UnusableError) Unwrap() error { return e.error }

// Read reads the API server's address and CA from the ConfigMap. It is read rather than watched:
// the Concierge may only get that one object.
func Read(ctx context.Context, client kubernetes.Interface) (*configv1alpha1.TokenCredentialRequestAPIInfo, error) {
	cm, err := client.CoreV1().ConfigMaps(Namespace).Get(ctx, Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, UnusableError{fmt.Errorf("the ConfigMap %s/%s does not exist", Namespace, Name)}
	}
	if err != nil {
		return nil, fmt.Errorf("the ConfigMap %s/%s could not be read: %w", Namespace, Name, err)
	}
	info, err := parse(cm.Data[key])
	if err != nil {
		return nil, UnusableError{fmt.Errorf("the ConfigMap %s/%s is unusable: %w", Namespace, Name, err)}
	}
	return info, nil
}

// parse takes the server and CA of the kubeconfig's current context's cluster or, when
// it names none, of its only cluster.
func parse(kubeconfig string) (*configv1alpha1.TokenCredentialRequestAPIInfo, error) {
	if kubeconfig == "" {
		return nil, fmt.Errorf("it has no %q key", key)
	}
	config, err := clientcmd.Load([]byte(kubeconfig))
	if err != nil {
		return nil, fmt.Errorf("its %q key is not a kubeconfig: %w", key, err)
	}
	name := ""
	if ctx, ok := config.Contexts[config.CurrentContext]; ok {
		name = ctx.Cluster
	} else if len(config.Clusters) == 1 {
		for n := range config.Clusters {
			name = n
		}
	} else {
		names := make([]string, 0, len(config.Clusters))
		for n := range config.Clusters {
			names = append(names, n)
		}
		slices.Sort(names)
		return nil, fmt.Errorf("its kubeconfig has %d clusters %q and no current context to choose one", len(names), names)
	}
	cluster, ok := config.Clusters[name]
	switch {
	case !ok:
		return nil, fmt.Errorf("its kubeconfig has no cluster %q", name)
	case cluster.Server == "":
		return nil, fmt.Errorf("its kubeconfig's cluster %q has no server", name)
	case len(cluster.CertificateAuthorityData) == 0:
		return nil, fmt.Errorf("its kubeconfig's cluster %q has no certificate-authority-data", name)
	}
	return &configv1alpha1.TokenCredentialRequestAPIInfo{
		Server:                   cluster.Server,
		CertificateAuthorityData: base64.StdEncoding.EncodeToString(cluster.CertificateAuthorityData),
	}, nil
}
