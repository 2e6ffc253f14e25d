// Package kind provides single-node clusters of kind (Kubernetes in Docker), the clusters
// contributors run on their laptops, through the kind Go library and a Docker engine.
//
// The node image is, in this order: kindest/node:<version> when Docker has it, the image
// `make kind-node-image` builds from our own Kubernetes binaries and cluster images
// (LocalNodeImage; for machines without a registry), else kindest/node:<version> pulled.
// The control-plane node runs workloads, and kube-controller-manager is kubeadm's static pod
// with the cluster CA's key in /etc/kubernetes/pki, as on kubeadm clusters.
//
// The cluster runs in privileged containers, gets a host route to its Service network (through
// the node's address) and an /etc/hosts entry naming its node, so that this machine reaches
// ClusterIPs and the API server address of the cluster-info ConfigMap as it does on kubeadm
// clusters; hence Create refuses to run without the caller's opt-in to host changes. The
// cluster holds the host lock for its whole life: Create hands the locked file to a detached
// `docker wait <node>`, which ends, and so releases the lock, when the node container goes.
package kind

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"time"

	kindcluster "sigs.k8s.io/kind/pkg/cluster"

	"sealion.dev/providers"
	"sealion.dev/providers/internal/command"
	"sealion.dev/providers/internal/hostlock"
)

const (
	// Name is the provider's name in Info.
	Name = "kind"
	// NodeImageEnv names a node image to use instead of looking for one.
	NodeImageEnv = "SEALION_KIND_NODE_IMAGE"
	// LocalNodeImageRepository is the repository of node images built on this machine.
	LocalNodeImageRepository = "localhost/sealion/kind-node"
	// UpstreamNodeImageRepository is the repository of kind's published node images.
	UpstreamNodeImageRepository = "kindest/node"

	// PodSubnet and ServiceSubnet are the cluster's networks. The locally built node image's
	// bridge CNI configuration uses PodSubnet; the host routes ServiceSubnet to the node.
	PodSubnet     = "10.244.0.0/16"
	ServiceSubnet = "10.96.0.0/16"

	defaultWorkDir     = "/var/tmp/sealion/kind"
	defaultWaitTimeout = 3 * time.Minute
)

// LocalNodeImage is the name `make kind-node-image` gives the node image of a Kubernetes version.
func LocalNodeImage(kubernetesVersion string) string {
	return LocalNodeImageRepository + ":" + kubernetesVersion
}

// Options configure the provider. The zero value is usable.
type Options struct {
	// WorkDir holds one directory per cluster (kubeconfig, state, logs);
	// /var/tmp/sealion/kind when empty.
	WorkDir string
	// NodeImage, when set, is the node image of every cluster, whatever the version;
	// $SEALION_KIND_NODE_IMAGE when empty, else one is looked for (see the package doc).
	NodeImage string
	// LockPath is the host lock; hostlock.DefaultPath when empty.
	LockPath string
	// Progress receives one line per step of Create and Delete, with its duration; nil discards.
	Progress io.Writer
}

// New returns the kind provider.
func New(opts Options) providers.Provider {
	if opts.WorkDir == "" {
		opts.WorkDir = defaultWorkDir
	}
	if opts.NodeImage == "" {
		opts.NodeImage = os.Getenv(NodeImageEnv)
	}
	if opts.LockPath == "" {
		opts.LockPath = hostlock.DefaultPath
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	return &provider{opts: opts, docker: docker{run: command.Runner{}}}
}

var _ providers.Provider = (*provider)(nil)

type provider struct {
	opts   Options
	docker docker
}

// Info is part of the providers.Provider interface.
func (p *provider) Info() providers.Info {
	return providers.Info{Name: Name, Capabilities: providers.Capabilities{
		ChangesHost:                true,
		ImagesLoadable:             true,
		ControlPlaneVisible:        true,
		KubeControllerManagerPod:   true,
		ClusterSigningKeyAvailable: true,
		HasExternalLoadBalancer:    false,
		AnonymousAuthEnabled:       true,
		KubeAPIServerClientSigner:  true,
	}}
}

// KubeconfigPath is part of the providers.Provider interface.
func (p *provider) KubeconfigPath(_ context.Context, name string) (string, error) {
	l, err := p.layout(name)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(l.kubeconfig()); err != nil {
		return "", fmt.Errorf("kind cluster %q has no kubeconfig (not created?): %w", name, err)
	}
	return l.kubeconfig(), nil
}

// kindProvider is the kind library's provider for the Docker engine, logging to log.
func kindProvider(log io.Writer) *kindcluster.Provider {
	return kindcluster.NewProvider(kindcluster.ProviderWithDocker(), kindcluster.ProviderWithLogger(logger{w: log}))
}

// layout names the files of one cluster.
type layout struct{ dir string }

func (l layout) kubeconfig() string { return filepath.Join(l.dir, "kubeconfig") }
func (l layout) logsDir() string    { return filepath.Join(l.dir, "logs") }
func (l layout) stateFile() string  { return filepath.Join(l.dir, "cluster.json") }

// kind names containers <cluster>-control-plane, and Docker names must be DNS-like.
var namePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$`)

func (p *provider) layout(name string) (layout, error) {
	if !namePattern.MatchString(name) {
		return layout{}, fmt.Errorf("invalid cluster name %q: use 1 to 32 lower-case letters, digits and '-'", name)
	}
	return layout{dir: filepath.Join(p.opts.WorkDir, name)}, nil
}

// clusterState is what Delete needs to undo Create, also from another process.
type clusterState struct {
	Name      string `json:"name"`
	NodeImage string `json:"nodeImage"`
	// Route is the host route to the Service network, as given to `ip route`.
	Route []string `json:"route,omitempty"`
	// Networks are the Docker networks the nodes were attached to.
	Networks []string `json:"networks,omitempty"`
	// LockHolder is the pid of the `docker wait` holding the host lock.
	LockHolder int `json:"lockHolder,omitempty"`
}

func (s clusterState) save(path string) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

func loadState(path string) (clusterState, error) {
	var s clusterState
	data, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("parsing %s: %w", path, err)
	}
	return s, nil
}

// progress prints one step and its duration.
func (p *provider) progress(cluster, step string, took time.Duration, err error) {
	status := "ok"
	if err != nil {
		status = "FAILED"
	}
	fmt.Fprintf(p.opts.Progress, "kind %s: %-34s %-6s %5.1fs\n", cluster, step, status, took.Seconds())
}
