// Package existing is the provider of a cluster that runs already, given by a kubeconfig: a
// developer's cluster, a cloud cluster made by other tooling, or one made by another provider.
// Create only checks that the API server answers and reads its version, Delete leaves the cluster
// alone, and images cannot be loaded into its runtime: tests must use images the cluster can pull.
// What the cluster can do comes from a Profile (kind, kubeadm, tkgs, eks, gke, aks or generic).
package existing

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/version"
	apiversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"sealion.dev/providers"
	"sealion.dev/providers/internal/clusterlogs"
)

// Name is the provider's name in Info.
const Name = "existing"

const reachTimeout = 30 * time.Second

// Options describe the cluster.
type Options struct {
	// KubeconfigPath is an admin kubeconfig of the cluster (its current context is used).
	KubeconfigPath string
	// Profile names the kind of cluster (see ProfileNames); empty is GenericProfile.
	Profile string
	// Capabilities are what the caller knows about a cluster of the generic profile; they cannot
	// be discovered reliably from outside. Other profiles replace them with their own.
	// ChangesHost and ImagesLoadable are always false.
	Capabilities providers.Capabilities
	// ImagesPullable says the images tests use are in a registry the cluster pulls from, so
	// LoadImageArchives has nothing to do and succeeds.
	ImagesPullable bool
}

// New returns a provider for the cluster of opts.KubeconfigPath; an unknown profile is an error.
func New(opts Options) (providers.Provider, error) {
	profile, err := LookupProfile(opts.Profile)
	if err != nil {
		return nil, err
	}
	return &provider{opts: opts, profile: profile}, nil
}

var _ providers.Provider = (*provider)(nil)

type provider struct {
	opts    Options
	profile Profile

	mu sync.Mutex
	// minor is the cluster's Kubernetes minor (1.x) as its API server reported it in Create;
	// 0 before.
	minor int
}

// Info is part of the providers.Provider interface. The profile's facts that depend on the
// Kubernetes version (anonymous authentication) hold once Create has read the cluster's.
func (p *provider) Info() providers.Info {
	p.mu.Lock()
	defer p.mu.Unlock()
	return providers.Info{Name: Name, Capabilities: p.profile.Capabilities(p.minor, p.opts.Capabilities)}
}

// Create is part of the providers.Provider interface: it checks the API server answers and
// reads its version.
func (p *provider) Create(ctx context.Context, name string, _ providers.CreateOptions) error {
	client, err := p.client()
	if err != nil {
		return &providers.StepError{Cluster: name, Step: "load kubeconfig", Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, reachTimeout)
	defer cancel()
	raw, err := client.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	var info apiversion.Info
	if err == nil {
		err = json.Unmarshal(raw, &info)
	}
	if err != nil {
		return &providers.StepError{Cluster: name, Step: "reach the API server",
			Err: fmt.Errorf("cluster of kubeconfig %s does not answer: %w", p.opts.KubeconfigPath, err)}
	}
	// Managed clusters report versions such as v1.33.5-eks-1a2b3c and minors such as "33+".
	v, err := version.ParseGeneric(info.GitVersion)
	if err != nil {
		return &providers.StepError{Cluster: name, Step: "read the Kubernetes version",
			Err: fmt.Errorf("the API server reports version %q: %w", info.GitVersion, err)}
	}
	p.mu.Lock()
	p.minor = int(v.Minor())
	p.mu.Unlock()
	return nil
}

func (p *provider) client() (kubernetes.Interface, error) {
	if p.opts.KubeconfigPath == "" {
		return nil, fmt.Errorf("the existing provider needs a kubeconfig path")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", p.opts.KubeconfigPath)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", p.opts.KubeconfigPath, err)
	}
	cfg.Timeout = reachTimeout
	return kubernetes.NewForConfig(cfg)
}

// KubeconfigPath is part of the providers.Provider interface.
func (p *provider) KubeconfigPath(context.Context, string) (string, error) {
	if p.opts.KubeconfigPath == "" {
		return "", fmt.Errorf("the existing provider needs a kubeconfig path")
	}
	return filepath.Abs(p.opts.KubeconfigPath)
}

// LoadImageArchives is part of the providers.Provider interface. It succeeds without doing
// anything when the images are pullable, and fails otherwise.
func (p *provider) LoadImageArchives(_ context.Context, name string, archives ...string) error {
	if p.opts.ImagesPullable || len(archives) == 0 {
		return nil
	}
	return fmt.Errorf("loading %d image archive(s) into existing cluster %q: %w; push the images to a registry "+
		"the cluster can pull from and mark them pullable", len(archives), name, providers.ErrImageLoadUnsupported)
}

// CollectLogs is part of the providers.Provider interface: what the API server reports.
func (p *provider) CollectLogs(ctx context.Context, _ string, dir string) error {
	client, err := p.client()
	if err != nil {
		return err
	}
	return clusterlogs.Dump(ctx, client, dir)
}

// Delete is part of the providers.Provider interface: the cluster is not ours to delete.
func (p *provider) Delete(context.Context, string) error { return nil }
