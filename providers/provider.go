// Package providers defines how tests and the matrix runner get a Kubernetes cluster: one small
// Provider interface, implemented by one package per distribution (kubeadm, existing, ...), with
// what a backend can do given as data in Capabilities rather than guessed from its name.
package providers

import (
	"context"
	"time"
)

// DefaultKubernetesVersion is the Kubernetes every provider runs when CreateOptions leave the
// version empty, and what the tools build by default; the Makefile's KUBE_VERSION default names
// the same (a test keeps them equal). It is the newest minor the module proxy serves in full, so
// that CI's subset (matrix-ci) builds one Kubernetes, not one for the default and another for the
// newest minor.
const DefaultKubernetesVersion = "v1.37.2"

// Provider creates, describes and deletes clusters of one kind. Every method takes the cluster
// name given to Create, so one Provider value can serve several clusters where the backend allows.
type Provider interface {
	// Info describes the provider and what its clusters can do.
	Info() Info
	// Create starts a cluster and returns once it can run workloads: the nodes are Ready, cluster
	// DNS is Ready and the `default` ServiceAccount exists. A failed Create returns a *StepError.
	Create(ctx context.Context, name string, opts CreateOptions) error
	// KubeconfigPath returns the path of an admin kubeconfig for the cluster.
	KubeconfigPath(ctx context.Context, name string) (string, error)
	// LoadImageArchives makes docker-archive tarballs (as written by `docker save`) available to
	// the cluster's container runtime, so pods can use them with imagePullPolicy: Never or IfNotPresent.
	LoadImageArchives(ctx context.Context, name string, archives ...string) error
	// CollectLogs writes the cluster's component logs into dir (created if missing).
	CollectLogs(ctx context.Context, name, dir string) error
	// Delete removes the cluster and everything it changed; deleting a missing cluster is not an error.
	Delete(ctx context.Context, name string) error
}

// Info names a provider and says what its clusters can do.
type Info struct {
	// Name is the provider's name as used by the matrix ("kubeadm", "existing", ...).
	Name string
	Capabilities
}

// Capabilities are the facts tests branch on instead of switching on provider names.
type Capabilities struct {
	// ChangesHost means the provider starts daemons and writes system files on this machine,
	// so Create refuses to run unless host changes are allowed (see CheckHostChangesAllowed).
	ChangesHost bool
	// ImagesLoadable means LoadImageArchives puts images into the cluster's runtime.
	ImagesLoadable bool
	// ControlPlaneVisible means control-plane nodes are Kubernetes Nodes that accept workloads,
	// as in kubeadm or kind clusters (not in managed clusters such as GKE or EKS).
	ControlPlaneVisible bool
	// KubeControllerManagerPod means kube-controller-manager runs as a pod in kube-system whose
	// command line carries the --cluster-signing-cert-file and --cluster-signing-key-file flags.
	KubeControllerManagerPod bool
	// ClusterSigningKeyAvailable means the cluster CA key used to sign CSRs is a file on a
	// control-plane node that a pod on that node can read through a hostPath volume.
	ClusterSigningKeyAvailable bool
	// HasExternalLoadBalancer means Services of type LoadBalancer get an external address.
	HasExternalLoadBalancer bool
	// IngressTLSPassthrough means an Ingress controller of the default IngressClass routes TLS
	// connections by server name, unterminated, to the Service an Ingress names when the Ingress
	// carries ingress-nginx's annotation nginx.ingress.kubernetes.io/ssl-passthrough: "true",
	// and that the Ingress's hosts resolve, on this machine, to that controller.
	IngressTLSPassthrough bool
	// AnonymousAuthEnabled means the API server accepts anonymous requests (--anonymous-auth=true).
	AnonymousAuthEnabled bool
	// KubeAPIServerClientSigner means an approved CertificateSigningRequest for the signer
	// kubernetes.io/kube-apiserver-client gets a certificate the API server accepts (not on EKS,
	// whose CA signs none).
	KubeAPIServerClientSigner bool
}

// CreateOptions tune Create. The zero value asks for the provider's default version and refuses
// host changes unless the environment allows them.
type CreateOptions struct {
	// KubernetesVersion selects binaries and images ("v1.33.13"); empty means
	// DefaultKubernetesVersion.
	KubernetesVersion string
	// BinDir holds kubeadm, kubelet and kubectl; empty means the cache folder of KubernetesVersion.
	BinDir string
	// AllowHostChanges is the caller's explicit opt-in (usually a command-line flag) for providers
	// whose Capabilities.ChangesHost is set. CI=true or SEALION_ALLOW_HOST_CHANGES=true also allow them.
	AllowHostChanges bool
	// Retain keeps a cluster whose creation failed, for debugging, instead of deleting it.
	// Its logs are kept either way.
	Retain bool
	// WaitTimeout bounds the wait for a usable cluster after the control plane started;
	// the provider's default when zero.
	WaitTimeout time.Duration
}

// APIServerRestarter is implemented by providers that can restart a cluster's kube-apiserver the
// way an upgrade or a crash does, for fault tests; clusters of other providers skip those tests.
type APIServerRestarter interface {
	// RestartAPIServer stops the cluster's kube-apiserver gracefully (SIGTERM) and returns once
	// the process has exited; what runs the control plane (the kubelet, for a static pod) starts
	// it again, as it would after a crash. The caller waits for it to serve.
	RestartAPIServer(ctx context.Context, name string) error
}
